package kernel_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ragd/ragd/embedder/builtin/internal/kernel"
)

// naive computes C + A·B in float64, B given n×k (transposed) when nk.
func naive(m, n, k int, a []float32, lda int, b []float32, ldb int, nk bool, c []float32, ldc int) []float64 {
	out := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := float64(c[i*ldc+j])
			for kk := 0; kk < k; kk++ {
				var bv float32
				if nk {
					bv = b[j*ldb+kk]
				} else {
					bv = b[kk*ldb+j]
				}
				s += float64(a[i*lda+kk]) * float64(bv)
			}
			out[i*n+j] = s
		}
	}
	return out
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// checkGemm multiplies an m×k by a k×n matrix with padded strides through
// every micro-kernel this CPU has and compares with the float64 product.
func checkGemm(t *testing.T, seed uint64, m, n, k int, nk bool) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	lda, ldc := k+3, n+5
	a := randSlice(r, m*lda)
	var b []float32
	ldb := n + 2
	if nk {
		ldb = k + 1
		b = randSlice(r, n*ldb)
	} else {
		b = randSlice(r, k*ldb)
	}
	c0 := randSlice(r, m*ldc)
	want := naive(m, n, k, a, lda, b, ldb, nk, c0, ldc)
	for _, name := range kernel.Kernels() {
		restore := kernel.UseKernel(name)
		var p kernel.Panels
		if nk {
			p = kernel.PackNK(nil, b, ldb, n, k)
		} else {
			p = kernel.PackKN(nil, b, ldb, k, n)
		}
		c := append([]float32(nil), c0...)
		scratch := make([]float32, kernel.ScratchLen)
		// Two panel ranges, as a parallel caller would split them.
		np := kernel.NumPanels(n)
		half := np / 2
		kernel.Gemm(m, a, lda, p, 0, half, c, ldc, scratch)
		kernel.Gemm(m, a, lda, p, half, np, c, ldc, scratch)
		restore()
		tol := 1e-5 * float64(k+1) * 4
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				if d := math.Abs(float64(c[i*ldc+j]) - want[i*n+j]); d > tol {
					t.Fatalf("kernel %s m=%d n=%d k=%d nk=%v: C[%d][%d]=%v, want %v (|d|=%g > %g)",
						name, m, n, k, nk, i, j, c[i*ldc+j], want[i*n+j], d, tol)
				}
			}
			// The padding past n must be untouched.
			for j := n; j < ldc; j++ {
				if c[i*ldc+j] != c0[i*ldc+j] {
					t.Fatalf("kernel %s m=%d n=%d k=%d: wrote C[%d][%d] past the %d columns", name, m, n, k, i, j, n)
				}
			}
		}
	}
}

func TestGemmShapes(t *testing.T) {
	shapes := [][3]int{
		{1, 1, 1}, {12, 32, 1}, {12, 32, 7}, {13, 33, 5}, {11, 31, 300}, {97, 65, 257},
		{25, 384, 384}, {200, 40, 513}, {5, 1536, 64}, {96, 32, 256}, {97, 32, 256}, {3, 7, 0},
	}
	for i, s := range shapes {
		checkGemm(t, uint64(i), s[0], s[1], s[2], i%2 == 0)
		checkGemm(t, uint64(i+100), s[0], s[1], s[2], i%2 == 1)
	}
}

func TestGemmRandomShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 60; i++ {
		m, n, k := 1+r.IntN(130), 1+r.IntN(100), r.IntN(600)
		checkGemm(t, uint64(i), m, n, k, r.IntN(2) == 0)
	}
}

func FuzzGemm(f *testing.F) {
	f.Add(uint64(1), uint8(13), uint8(33), uint16(5), true)
	f.Add(uint64(2), uint8(1), uint8(1), uint16(300), false)
	// Shapes stay small (a float64 product per input): up to 64 rows (five
	// row blocks and an edge), 80 columns (two panels and an edge) and 400
	// k (a KC block and an edge).
	f.Fuzz(func(t *testing.T, seed uint64, m, n uint8, k uint16, nk bool) {
		checkGemm(t, seed, 1+int(m)%64, 1+int(n)%80, int(k%400), nk)
	})
}
