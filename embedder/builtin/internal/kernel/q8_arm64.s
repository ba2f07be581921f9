//go:build arm64 && !purego

#include "textflag.h"

// func kernQ8SDOT(k4 int, a *uint8, lda int, b *int8, t *int32)
// t[4×16] (row stride 16) = Σ over k4 groups of (a XOR 0x80)·b: rows of A
// (row stride lda bytes, read in place) as signed bytes (a − 128), columns
// j0…j0+15 of a panel (b points at column j0; a group is NR×QK = 128
// bytes), summed exactly by SDOT (Armv8.2 dot product: four int8·int8
// products a lane). The caller adds 128·ColSum back (Σ a·b = Σ (a−128)·b +
// 128·Σ b). V0–V15 hold the tile (row r in V4r…V4r+3), V16–V19 a group's
// 16 columns, V20–V23 the four rows' four bytes, replicated. SDOT is
// written as WORD: the Go assembler has no mnemonic for it.
TEXT ·kernQ8SDOT(SB), NOSPLIT, $0-40
	MOVD k4+0(FP), R0
	MOVD a+8(FP), R1
	MOVD lda+16(FP), R8
	ADD R8, R1, R2
	ADD R8, R2, R3
	ADD R8, R3, R4
	MOVD b+24(FP), R5
	MOVD t+32(FP), R6
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	VEOR V10.B16, V10.B16, V10.B16
	VEOR V11.B16, V11.B16, V11.B16
	VEOR V12.B16, V12.B16, V12.B16
	VEOR V13.B16, V13.B16, V13.B16
	VEOR V14.B16, V14.B16, V14.B16
	VEOR V15.B16, V15.B16, V15.B16
	CBZ R0, store
loop:
	VLD1 (R5), [V16.B16, V17.B16, V18.B16, V19.B16]
	ADD $128, R5, R5
	MOVWU.P 4(R1), R10
	EORW $0x80808080, R10, R10
	VDUP R10, V20.S4
	MOVWU.P 4(R2), R11
	EORW $0x80808080, R11, R11
	VDUP R11, V21.S4
	MOVWU.P 4(R3), R12
	EORW $0x80808080, R12, R12
	VDUP R12, V22.S4
	MOVWU.P 4(R4), R13
	EORW $0x80808080, R13, R13
	VDUP R13, V23.S4
	WORD $0x4e949600 // SDOT V0.S4, V16.B16, V20.B16
	WORD $0x4e949621 // SDOT V1.S4, V17.B16, V20.B16
	WORD $0x4e949642 // SDOT V2.S4, V18.B16, V20.B16
	WORD $0x4e949663 // SDOT V3.S4, V19.B16, V20.B16
	WORD $0x4e959604 // SDOT V4.S4, V16.B16, V21.B16
	WORD $0x4e959625 // SDOT V5.S4, V17.B16, V21.B16
	WORD $0x4e959646 // SDOT V6.S4, V18.B16, V21.B16
	WORD $0x4e959667 // SDOT V7.S4, V19.B16, V21.B16
	WORD $0x4e969608 // SDOT V8.S4, V16.B16, V22.B16
	WORD $0x4e969629 // SDOT V9.S4, V17.B16, V22.B16
	WORD $0x4e96964a // SDOT V10.S4, V18.B16, V22.B16
	WORD $0x4e96966b // SDOT V11.S4, V19.B16, V22.B16
	WORD $0x4e97960c // SDOT V12.S4, V16.B16, V23.B16
	WORD $0x4e97962d // SDOT V13.S4, V17.B16, V23.B16
	WORD $0x4e97964e // SDOT V14.S4, V18.B16, V23.B16
	WORD $0x4e97966f // SDOT V15.S4, V19.B16, V23.B16
	SUBS $1, R0, R0
	BNE loop
store:
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R6)
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(R6)
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], 64(R6)
	VST1 [V12.S4, V13.S4, V14.S4, V15.S4], (R6)
	RET
