//go:build arm64 && !purego

package kernel

//go:noescape
func kern4x16NEON(kb int, a *float32, lda int, b, c *float32, ldc int)

// kernelName is the micro-kernel in use: "neon" (every arm64 CPU has
// Advanced SIMD), or "go" when a test chooses it.
var kernelName = "neon"

func microKernel(kb int, a []float32, lda int, b, c []float32, ldc int) {
	if kb == 0 {
		return
	}
	if kernelName != "neon" {
		microKernelGo(kb, a, lda, b, c, ldc)
		return
	}
	// Bounds: a holds (MR-1)·lda+kb, b kb×NR, c (MR-1)·ldc+NR floats.
	_ = a[(MR-1)*lda+kb-1]
	_ = b[kb*NR-1]
	_ = c[(MR-1)*ldc+NR-1]
	for r := 0; r < MR; r += 4 {
		for j := 0; j < NR; j += 16 {
			kern4x16NEON(kb, &a[r*lda], lda, &b[j], &c[r*ldc+j], ldc)
		}
	}
}

func geluImpl(x []float32) { geluGo(x) }

func softmax([]float32) bool { return false }

func layerNormRow(row, g, b []float32, eps float32) { layerNormRowGo(row, g, b, eps) }
