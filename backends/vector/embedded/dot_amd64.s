//go:build amd64 && !purego

#include "textflag.h"

// PREFETCH_BYTES asks for the n bytes at p, a 64-byte line at a time (a
// prefetch never faults, so p may point anywhere); at least one line. It
// advances p and counts n down; loop names its label.
#define PREFETCH_BYTES(p, n, loop) \
loop: \
	PREFETCHT0 (p) \
	ADDQ       $64, p \
	SUBQ       $64, n \
	JGT        loop

// func dotCodesAVX2(a []int16, b []int8, ahead *int8) int32
//
// The inner product of a and b[:len(a)] (the caller guarantees len(b) >=
// len(a) and that the sum fits int32), first prefetching the len(a) bytes
// at ahead unless it is nil. 32 elements per iteration:
// VPMOVSXBW widens 16 int8 of b to int16, VPMADDWD multiplies them with 16
// int16 of a and adds neighbours into 8 int32 lanes; two accumulators. A
// tail shorter than 16 elements is done in scalar code.
TEXT ·dotCodesAVX2(SB), NOSPLIT, $0-60
	MOVQ a_base+0(FP), SI
	MOVQ b_base+24(FP), DI
	MOVQ a_len+8(FP), CX
	MOVQ ahead+48(FP), R10
	MOVQ CX, R11
	TESTQ R10, R10
	JZ    apfdone

	PREFETCH_BYTES(R10, R11, apf)

apfdone:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1

loop32:
	CMPQ CX, $32
	JLT  loop16
	VMOVDQU   (SI), Y2
	VPMOVSXBW (DI), Y3
	VPMADDWD  Y3, Y2, Y2
	VPADDD    Y2, Y0, Y0
	VMOVDQU   32(SI), Y4
	VPMOVSXBW 16(DI), Y5
	VPMADDWD  Y5, Y4, Y4
	VPADDD    Y4, Y1, Y1
	ADDQ      $64, SI
	ADDQ      $32, DI
	SUBQ      $32, CX
	JMP       loop32

loop16:
	CMPQ CX, $16
	JLT  reduce
	VMOVDQU   (SI), Y2
	VPMOVSXBW (DI), Y3
	VPMADDWD  Y3, Y2, Y2
	VPADDD    Y2, Y0, Y0
	ADDQ      $32, SI
	ADDQ      $16, DI
	SUBQ      $16, CX

reduce:
	// Sum the 8 int32 lanes of Y0+Y1 into the low lane of X0.
	VPADDD       Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xb1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX
	VZEROUPPER

tail:
	TESTQ   CX, CX
	JZ      done
	MOVWQSX (SI), R8
	MOVBQSX (DI), R9
	IMULQ   R9, R8
	ADDL    R8, AX
	ADDQ    $2, SI
	INCQ    DI
	DECQ    CX
	JMP     tail

done:
	MOVL AX, ret+56(FP)
	RET

// VNNI_DOT sets AX to the inner product of the CX int16 at SI and the CX
// int8 at DI, 64 elements per iteration: VPMOVSXBW widens 32 int8 to
// int16 and VPDPWSSD multiplies them with 32 int16, adding neighbours
// into 16 int32 lanes of an accumulator, in one instruction; two
// accumulators; a tail shorter than 32 elements in scalar code. SI and DI
// end past what they read, CX at 0; Z0-Z3, BX and DX are clobbered and
// the upper halves left dirty (the caller's VZEROUPPER). l64, l32, red,
// tail and done name its labels.
#define VNNI_DOT(l64, l32, red, tail, done) \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
l64: \
	CMPQ      CX, $64 \
	JLT       l32 \
	VPMOVSXBW (DI), Z2 \
	VPDPWSSD  (SI), Z2, Z0 \
	VPMOVSXBW 32(DI), Z3 \
	VPDPWSSD  64(SI), Z3, Z1 \
	ADDQ      $128, SI \
	ADDQ      $64, DI \
	SUBQ      $64, CX \
	JMP       l64 \
l32: \
	CMPQ      CX, $32 \
	JLT       red \
	VPMOVSXBW (DI), Z2 \
	VPDPWSSD  (SI), Z2, Z0 \
	ADDQ      $64, SI \
	ADDQ      $32, DI \
	SUBQ      $32, CX \
red: \
	VPADDD        Z1, Z0, Z0 \
	VEXTRACTI64X4 $1, Z0, Y1 \
	VPADDD        Y1, Y0, Y0 \
	VEXTRACTI128  $1, Y0, X1 \
	VPADDD        X1, X0, X0 \
	VPSHUFD       $0x4e, X0, X1 \
	VPADDD        X1, X0, X0 \
	VPSHUFD       $0xb1, X0, X1 \
	VPADDD        X1, X0, X0 \
	VMOVD         X0, AX \
tail: \
	TESTQ   CX, CX \
	JZ      done \
	MOVWQSX (SI), BX \
	MOVBQSX (DI), DX \
	IMULQ   DX, BX \
	ADDL    BX, AX \
	ADDQ    $2, SI \
	INCQ    DI \
	DECQ    CX \
	JMP     tail \
done:

// func dotCodesVNNI(a []int16, b []int8, ahead *int8) int32
//
// As dotCodesAVX2 with AVX-512 and VNNI (VNNI_DOT).
TEXT ·dotCodesVNNI(SB), NOSPLIT, $0-60
	MOVQ a_base+0(FP), SI
	MOVQ b_base+24(FP), DI
	MOVQ a_len+8(FP), CX
	MOVQ ahead+48(FP), R10
	MOVQ CX, R11
	TESTQ R10, R10
	JZ    vpfdone

	PREFETCH_BYTES(R10, R11, vpf)

vpfdone:
	VNNI_DOT(vloop64, vloop32, vreduce, vtail, vdone)
	VZEROUPPER
	MOVL AX, ret+56(FP)
	RET

// func dotCodesManyVNNI(a []int16, b []int8, out []int32)
//
// out[j] = the inner product of a and b[j·len(a):(j+1)·len(a)] for every
// j < len(out) (the caller guarantees len(b) >= len(out)·len(a) and that
// each sum fits int32), VNNI_DOT one row of b after another in one call,
// for scoring a row against every centroid of an IVF. b is read in
// sequence, so nothing is prefetched.
TEXT ·dotCodesManyVNNI(SB), NOSPLIT, $0-72
	MOVQ a_base+0(FP), R8
	MOVQ a_len+8(FP), R9
	MOVQ b_base+24(FP), DI
	MOVQ out_base+48(FP), R10
	MOVQ out_len+56(FP), R11

mnext:
	TESTQ R11, R11
	JZ    mdone
	MOVQ  R8, SI
	MOVQ  R9, CX
	VNNI_DOT(mloop64, mloop32, mreduce, mtail, mstore)
	MOVL AX, (R10)
	ADDQ $4, R10
	DECQ R11
	JMP  mnext

mdone:
	VZEROUPPER
	RET

// func prefetch(p *byte, n int)
TEXT ·prefetch(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), R10
	MOVQ n+8(FP), R11
	PREFETCH_BYTES(R10, R11, ppf)
	RET
