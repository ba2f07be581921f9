//go:build amd64 && !purego

#include "textflag.h"

DATA gelu2<>+0(SB)/4, $0x3f3504f3
DATA gelu2<>+4(SB)/4, $0x40800000
DATA gelu2<>+8(SB)/4, $0xc0800000
DATA gelu2<>+12(SB)/4, $0x3f000000
DATA gelu2<>+16(SB)/4, $0xaf95df0b
DATA gelu2<>+20(SB)/4, $0x32edffee
DATA gelu2<>+24(SB)/4, $0xb60cff51
DATA gelu2<>+28(SB)/4, $0xb86ec2d2
DATA gelu2<>+32(SB)/4, $0xba40ac63
DATA gelu2<>+36(SB)/4, $0xbb41a1f6
DATA gelu2<>+40(SB)/4, $0xbc83dbd4
DATA gelu2<>+44(SB)/4, $0xb77460cd
DATA gelu2<>+48(SB)/4, $0xb95fbd29
DATA gelu2<>+52(SB)/4, $0xbadc924e
DATA gelu2<>+56(SB)/4, $0xbbf19bf8
DATA gelu2<>+60(SB)/4, $0xbc69b6a7
GLOBL gelu2<>(SB), RODATA|NOPTR, $64

DATA exp2c<>+0(SB)/4, $0x3fb8aa3b
DATA exp2c<>+4(SB)/4, $0xbf318000
DATA exp2c<>+8(SB)/4, $0x395e8083
DATA exp2c<>+12(SB)/4, $0x39506967
DATA exp2c<>+16(SB)/4, $0x3ab743ce
DATA exp2c<>+20(SB)/4, $0x3c088908
DATA exp2c<>+24(SB)/4, $0x3d2aa9c1
DATA exp2c<>+28(SB)/4, $0x3e2aaaaa
DATA exp2c<>+32(SB)/4, $0x3f000000
DATA exp2c<>+36(SB)/4, $0x3f800000
DATA exp2c<>+40(SB)/4, $0xc2ae999a
DATA exp2c<>+44(SB)/4, $0x00000000
GLOBL exp2c<>(SB), RODATA|NOPTR, $48

// func geluAVX2(x *float32, n int)
// geluAVX512 with 8 lanes (n a multiple of 8); the constants are
// broadcast from a table, AVX2 having 16 vector registers.
TEXT ·geluAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS gelu2<>+0(SB), Y15
	VBROADCASTSS gelu2<>+4(SB), Y14
	VBROADCASTSS gelu2<>+8(SB), Y13
	VBROADCASTSS gelu2<>+12(SB), Y12
	SHRQ $3, CX
	JZ gelu2done
gelu2loop:
	VMOVUPS (SI), Y0
	VMULPS Y15, Y0, Y1
	VMINPS Y14, Y1, Y1
	VMAXPS Y13, Y1, Y1
	VMULPS Y1, Y1, Y2
	VBROADCASTSS gelu2<>+16(SB), Y3
	VBROADCASTSS gelu2<>+20(SB), Y5
	VFMADD213PS Y5, Y2, Y3
	VBROADCASTSS gelu2<>+24(SB), Y5
	VFMADD213PS Y5, Y2, Y3
	VBROADCASTSS gelu2<>+28(SB), Y5
	VFMADD213PS Y5, Y2, Y3
	VBROADCASTSS gelu2<>+32(SB), Y5
	VFMADD213PS Y5, Y2, Y3
	VBROADCASTSS gelu2<>+36(SB), Y5
	VFMADD213PS Y5, Y2, Y3
	VBROADCASTSS gelu2<>+40(SB), Y5
	VFMADD213PS Y5, Y2, Y3
	VMULPS Y1, Y3, Y3
	VBROADCASTSS gelu2<>+44(SB), Y4
	VBROADCASTSS gelu2<>+48(SB), Y5
	VFMADD213PS Y5, Y2, Y4
	VBROADCASTSS gelu2<>+52(SB), Y5
	VFMADD213PS Y5, Y2, Y4
	VBROADCASTSS gelu2<>+56(SB), Y5
	VFMADD213PS Y5, Y2, Y4
	VBROADCASTSS gelu2<>+60(SB), Y5
	VFMADD213PS Y5, Y2, Y4
	VDIVPS Y4, Y3, Y3
	VMULPS Y12, Y0, Y0
	VFMADD231PS Y3, Y0, Y0
	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	DECQ CX
	JNZ gelu2loop
gelu2done:
	VZEROUPPER
	RET

// func maxAVX2(x *float32, n int, acc *[8]float32)
// acc gets the lane maxima of x[:n] (n a positive multiple of 8).
TEXT ·maxAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ acc+16(FP), DX
	VMOVUPS (SI), Y0
	ADDQ $32, SI
	SHRQ $3, CX
	DECQ CX
	JZ max2done
max2loop:
	VMAXPS (SI), Y0, Y0
	ADDQ $32, SI
	DECQ CX
	JNZ max2loop
max2done:
	VMOVUPS Y0, (DX)
	VZEROUPPER
	RET

// func expSubAVX2(x *float32, n int, m float32, acc *[8]float32)
// x[i] = e^(x[i]-m) for i < n (n a multiple of 8, x[i] ≤ m), acc gets the
// lane sums: the exp of Exp with 2^n added to the exponent bits (inputs
// are clamped at -87.3, so the result stays a normal number).
TEXT ·expSubAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS m+16(FP), Y15
	MOVQ acc+24(FP), DX
	VBROADCASTSS exp2c<>+0(SB), Y14
	VBROADCASTSS exp2c<>+4(SB), Y13
	VBROADCASTSS exp2c<>+8(SB), Y12
	VBROADCASTSS exp2c<>+12(SB), Y11
	VBROADCASTSS exp2c<>+16(SB), Y10
	VBROADCASTSS exp2c<>+20(SB), Y9
	VBROADCASTSS exp2c<>+24(SB), Y8
	VBROADCASTSS exp2c<>+28(SB), Y7
	VBROADCASTSS exp2c<>+32(SB), Y6
	VBROADCASTSS exp2c<>+36(SB), Y5
	VBROADCASTSS exp2c<>+40(SB), Y4
	VXORPS Y0, Y0, Y0
	SHRQ $3, CX
	JZ exp2done
exp2loop:
	VMOVUPS (SI), Y1
	VSUBPS Y15, Y1, Y1
	VMAXPS Y4, Y1, Y1
	VMULPS Y14, Y1, Y2
	VROUNDPS $0, Y2, Y2
	VFMADD231PS Y13, Y2, Y1
	VFMADD231PS Y12, Y2, Y1
	VMOVAPS Y11, Y3
	VFMADD213PS Y10, Y1, Y3
	VFMADD213PS Y9, Y1, Y3
	VFMADD213PS Y8, Y1, Y3
	VFMADD213PS Y7, Y1, Y3
	VFMADD213PS Y6, Y1, Y3
	VCVTPS2DQ Y2, Y2
	VPSLLD $23, Y2, Y2
	VFMADD213PS Y5, Y1, Y3
	VFMADD213PS Y5, Y1, Y3
	VPADDD Y2, Y3, Y3
	VMOVUPS Y3, (SI)
	VADDPS Y3, Y0, Y0
	ADDQ $32, SI
	DECQ CX
	JNZ exp2loop
exp2done:
	VMOVUPS Y0, (DX)
	VZEROUPPER
	RET
