//go:build amd64 && !purego

package kernel

import (
	"os"

	"golang.org/x/sys/cpu"
)

//go:noescape
func kern12x32AVX512(kb int, a *float32, lda int, b, c *float32, ldc int)

//go:noescape
func kern6x16AVX2(kb int, a *float32, lda int, b, c *float32, ldc int)

// kernelName is the micro-kernel in use: "avx512", "avx2" or "go".
var kernelName = pickKernel(os.Getenv(EnvKernel), cpu.X86.HasAVX512F, cpu.X86.HasAVX2 && cpu.X86.HasFMA)

// pickKernel returns the best kernel the CPU runs, or the one named by
// want when the CPU runs it.
func pickKernel(want string, avx512, avx2 bool) string {
	best := "go"
	switch {
	case avx512:
		best = "avx512"
	case avx2:
		best = "avx2"
	}
	switch {
	case want == "go", want == "avx2" && (avx2 || avx512):
		return want
	}
	return best
}

func microKernel(kb int, a []float32, lda int, b, c []float32, ldc int) {
	if kb == 0 {
		return
	}
	switch kernelName {
	case "avx512":
		// Bounds: a holds (MR-1)·lda+kb, b kb×NR, c (MR-1)·ldc+NR floats.
		_ = a[(MR-1)*lda+kb-1]
		_ = b[kb*NR-1]
		_ = c[(MR-1)*ldc+NR-1]
		kern12x32AVX512(kb, &a[0], lda, &b[0], &c[0], ldc)
	case "avx2":
		_ = a[(MR-1)*lda+kb-1]
		_ = b[kb*NR-1]
		_ = c[(MR-1)*ldc+NR-1]
		for r := 0; r < MR; r += 6 {
			for j := 0; j < NR; j += 16 {
				kern6x16AVX2(kb, &a[r*lda], lda, &b[j], &c[r*ldc+j], ldc)
			}
		}
	default:
		microKernelGo(kb, a, lda, b, c, ldc)
	}
}

//go:noescape
func geluAVX512(x *float32, n int)

//go:noescape
func geluAVX2(x *float32, n int)

//go:noescape
func maxAVX2(x *float32, n int, acc *[8]float32)

//go:noescape
func expSubAVX2(x *float32, n int, m float32, acc *[8]float32)

func geluImpl(x []float32) {
	switch {
	case kernelName == "avx512" && len(x) >= 16:
		n := len(x) &^ 15
		geluAVX512(&x[0], n)
		geluGo(x[n:])
	case kernelName == "avx2" && len(x) >= 8:
		n := len(x) &^ 7
		geluAVX2(&x[0], n)
		geluGo(x[n:])
	default:
		geluGo(x)
	}
}

//go:noescape
func softmaxAVX512(x *float32, n int)

func softmax(row []float32) bool {
	switch {
	case kernelName == "avx512":
		softmaxAVX512(&row[0], len(row))
		return true
	case kernelName == "avx2" && len(row) >= 8:
		n := len(row) &^ 7
		var acc [8]float32
		maxAVX2(&row[0], n, &acc)
		m := acc[0]
		for _, v := range acc[1:] {
			m = max(m, v)
		}
		for _, v := range row[n:] {
			m = max(m, v)
		}
		expSubAVX2(&row[0], n, m, &acc)
		sum := expSubGo(row[n:], m)
		for _, v := range acc {
			sum += v
		}
		inv := 1 / sum
		for i := range row {
			row[i] *= inv
		}
		return true
	}
	return false
}

//go:noescape
func layerNormAVX512(x *float32, n int, gamma, beta *float32, invN, eps float32)

func layerNormRow(row, g, b []float32, eps float32) {
	n := len(g)
	if kernelName != "avx512" || n%16 != 0 || n == 0 {
		layerNormRowGo(row, g, b, eps)
		return
	}
	_, _ = row[n-1], b[n-1]
	layerNormAVX512(&row[0], n, &g[0], &b[0], 1/float32(n), eps)
}
