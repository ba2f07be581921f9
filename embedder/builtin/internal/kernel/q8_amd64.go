//go:build amd64 && !purego

package kernel

import (
	"os"

	"golang.org/x/sys/cpu"
)

//go:noescape
func minMaxAVX512(x *float32, n int) (lo, hi float32)

//go:noescape
func quantAVX512(dst *uint8, x *float32, n int, inv, z float32)

//go:noescape
func kernQ8AVX2(k4 int, a *uint8, lda int, b *int8, c *float32, ldc int, sa *float32, za *int32, sw *float32, cs *int32)

//go:noescape
func minMaxAVX2(x *float32, n int) (lo, hi float32)

//go:noescape
func quantAVX2(dst *uint8, x *float32, n int, inv, z float32)

//go:noescape
func kernQ8VNNI(k4 int, a *uint8, lda int, b *int8, c *float32, ldc int, sa *float32, za *int32, sw *float32, cs *int32)

// qKernelName is the int8 micro-kernel in use: "avx512vnni", "avx2" or
// "go".
var qKernelName = pickQKernel(os.Getenv(EnvKernel), cpu.X86.HasAVX512F && cpu.X86.HasAVX512VNNI, cpu.X86.HasAVX2 && cpu.X86.HasFMA)

// pickQKernel returns the best int8 kernel the CPU runs, or a slower one
// named by want (RAGD_KERNEL: "avx2" or "go") when the CPU runs it.
func pickQKernel(want string, vnni, avx2 bool) string {
	switch {
	case want == "go":
		return "go"
	case want == "avx2" && (vnni || avx2), !vnni && avx2:
		return "avx2"
	case vnni:
		return "avx512vnni"
	}
	return "go"
}

func microKernelQ8(k4 int, a []uint8, lda int, sa []float32, za []int32, b []int8, sw []float32, cs []int32, c []float32, ldc int, _ *QScratch) {
	if qKernelName == "go" || k4 == 0 {
		microKernelQ8Go(k4, a, lda, sa, za, b, sw, cs, c, ldc)
		return
	}
	// Bounds: a holds (MR-1)·lda+4·k4 bytes, b k4 groups of NR×4, c
	// (MR-1)·ldc+NR floats; MR row and NR column scales and sums.
	_ = a[(MR-1)*lda+k4*QK-1]
	_ = b[k4*NR*QK-1]
	_ = c[(MR-1)*ldc+NR-1]
	_, _, _, _ = sa[MR-1], za[MR-1], sw[NR-1], cs[NR-1]
	if qKernelName == "avx512vnni" {
		kernQ8VNNI(k4, &a[0], lda, &b[0], &c[0], ldc, &sa[0], &za[0], &sw[0], &cs[0])
		return
	}
	// AVX2: 6×8 blocks, the 12×32 tile in eight calls.
	for r := 0; r < MR; r += 6 {
		for j := 0; j < NR; j += 8 {
			kernQ8AVX2(k4, &a[r*lda], lda, &b[j*QK], &c[r*ldc+j], ldc, &sa[r], &za[r], &sw[j], &cs[j])
		}
	}
}

func minMax(x []float32) (lo, hi float32) {
	var n int
	switch qKernelName {
	case "avx512vnni":
		if n = len(x) &^ 15; n > 0 {
			lo, hi = minMaxAVX512(&x[0], n)
		}
	case "avx2":
		if n = len(x) &^ 7; n > 0 {
			lo, hi = minMaxAVX2(&x[0], n)
		}
	}
	l, h := minMaxGo(x[n:])
	return min(lo, l), max(hi, h)
}

func quant(dst []uint8, x []float32, inv, z float32) {
	var n int
	switch qKernelName {
	case "avx512vnni":
		if n = len(x) &^ 15; n > 0 {
			_ = dst[n-1]
			quantAVX512(&dst[0], &x[0], n, inv, z)
		}
	case "avx2":
		if n = len(x) &^ 7; n > 0 {
			_ = dst[n-1]
			quantAVX2(&dst[0], &x[0], n, inv, z)
		}
	}
	quantGo(dst[n:len(x)], x[n:], inv, z)
}
