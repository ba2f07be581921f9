//go:build arm64 && !purego

#include "textflag.h"

// func kern4x16NEON(kb int, a *float32, lda int, b, c *float32, ldc int)
// C[4×16] (row stride ldc floats) += A[4×kb] (row stride lda, read in
// place) · b (kb×16, k-stride 32 floats): a sixth of the 12×32 tile.
// V0–V15 hold the tile (row r in V4r…V4r+3), V16–V19 a row of b, V20–V23
// the four rows' elements of A, replicated.
TEXT ·kern4x16NEON(SB), NOSPLIT, $0-48
	MOVD kb+0(FP), R0
	MOVD a+8(FP), R1
	MOVD lda+16(FP), R8
	LSL $2, R8, R8
	ADD R8, R1, R2
	ADD R8, R2, R3
	ADD R8, R3, R4
	MOVD b+24(FP), R5
	MOVD c+32(FP), R6
	MOVD ldc+40(FP), R7
	LSL $2, R7, R7
	MOVD R6, R9
	VLD1 (R9), [V0.S4, V1.S4, V2.S4, V3.S4]
	ADD R7, R9, R9
	VLD1 (R9), [V4.S4, V5.S4, V6.S4, V7.S4]
	ADD R7, R9, R9
	VLD1 (R9), [V8.S4, V9.S4, V10.S4, V11.S4]
	ADD R7, R9, R9
	VLD1 (R9), [V12.S4, V13.S4, V14.S4, V15.S4]
	CBZ R0, store
loop:
	VLD1 (R5), [V16.S4, V17.S4, V18.S4, V19.S4]
	ADD $128, R5, R5
	VLD1R (R1), [V20.S4]
	ADD $4, R1, R1
	VLD1R (R2), [V21.S4]
	ADD $4, R2, R2
	VLD1R (R3), [V22.S4]
	ADD $4, R3, R3
	VLD1R (R4), [V23.S4]
	ADD $4, R4, R4
	VFMLA V16.S4, V20.S4, V0.S4
	VFMLA V17.S4, V20.S4, V1.S4
	VFMLA V18.S4, V20.S4, V2.S4
	VFMLA V19.S4, V20.S4, V3.S4
	VFMLA V16.S4, V21.S4, V4.S4
	VFMLA V17.S4, V21.S4, V5.S4
	VFMLA V18.S4, V21.S4, V6.S4
	VFMLA V19.S4, V21.S4, V7.S4
	VFMLA V16.S4, V22.S4, V8.S4
	VFMLA V17.S4, V22.S4, V9.S4
	VFMLA V18.S4, V22.S4, V10.S4
	VFMLA V19.S4, V22.S4, V11.S4
	VFMLA V16.S4, V23.S4, V12.S4
	VFMLA V17.S4, V23.S4, V13.S4
	VFMLA V18.S4, V23.S4, V14.S4
	VFMLA V19.S4, V23.S4, V15.S4
	SUBS $1, R0, R0
	BNE loop
store:
	MOVD R6, R9
	VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R9)
	ADD R7, R9, R9
	VST1 [V4.S4, V5.S4, V6.S4, V7.S4], (R9)
	ADD R7, R9, R9
	VST1 [V8.S4, V9.S4, V10.S4, V11.S4], (R9)
	ADD R7, R9, R9
	VST1 [V12.S4, V13.S4, V14.S4, V15.S4], (R9)
	RET
