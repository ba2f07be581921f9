package kernel_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ragd/ragd/embedder/builtin/internal/kernel"
)

// qWeight reads column j, row kk of q through the documented layout.
func qWeight(q kernel.QPanels, kk, j int) int8 {
	return q.Data[j/kernel.NR*q.Kp*kernel.NR+kk/kernel.QK*kernel.NR*kernel.QK+j%kernel.NR*kernel.QK+kk%kernel.QK]
}

// activations are m×k rows shaped like a transformer's: mostly small, a
// few large, some rows all positive (after GELU), one all zero.
func activations(r *rand.Rand, m, k, lda int) []float32 {
	a := make([]float32, m*lda)
	for i := 0; i < m; i++ {
		shift := float32(0)
		if i%3 == 1 {
			shift = 2
		}
		for kk := 0; kk < k; kk++ {
			v := float32(r.NormFloat64())
			if r.IntN(50) == 0 {
				v *= 10
			}
			a[i*lda+kk] = v + shift
		}
	}
	if m > 2 {
		clear(a[2*lda : 2*lda+k])
	}
	return a
}

// checkQuantizers: every weight and activation is within half a step of
// its quantised value, the padding is zero and ColSum sums the column.
func checkQuantizers(t *testing.T, a []float32, lda, m, k int, qa *kernel.QRows, w []float32, ldw, n int, qw kernel.QPanels) {
	t.Helper()
	for j := 0; j < qw.N; j++ {
		var sum int32
		for kk := 0; kk < qw.Kp; kk++ {
			x := qWeight(qw, kk, j)
			sum += int32(x)
			if kk >= k {
				if x != 0 {
					t.Fatalf("weight padding (%d, %d) = %d", kk, j, x)
				}
				continue
			}
			if d := math.Abs(float64(w[j*ldw+kk]) - float64(x)*float64(qw.Scale[j])); d > float64(qw.Scale[j])/2*(1+1e-4) {
				t.Fatalf("weight (%d, %d): %v quantised to %d × %v", kk, j, w[j*ldw+kk], x, qw.Scale[j])
			}
		}
		if sum != qw.ColSum[j] {
			t.Fatalf("ColSum[%d] = %d, want %d", j, qw.ColSum[j], sum)
		}
	}
	for i := 0; i < m; i++ {
		for kk := 0; kk < qa.Kp; kk++ {
			x := qa.Data[i*qa.Kp+kk]
			if kk >= k {
				if x != 0 {
					t.Fatalf("activation padding (%d, %d) = %d", i, kk, x)
				}
				continue
			}
			back := float64(int32(x)-qa.Zero[i]) * float64(qa.Scale[i])
			if d := math.Abs(float64(a[i*lda+kk]) - back); d > float64(qa.Scale[i])/2*(1+1e-4)+1e-30 {
				t.Fatalf("activation (%d, %d): %v quantised to %d (scale %v, zero %d)", i, kk, a[i*lda+kk], x, qa.Scale[i], qa.Zero[i])
			}
		}
	}
}

// checkGemmQ8 quantises an m×k activation block and an n×k weight, runs
// GemmQ8 with every int8 kernel this CPU has over two panel ranges and two
// row ranges (as parallel callers split them), and compares with the
// formula evaluated exactly (int64 sums, float64 scaling) on the same
// quantised values.
func checkGemmQ8(t *testing.T, seed uint64, m, n, k int) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 8))
	lda, ldw, ldc := k+3, k+1, n+5
	a := activations(r, m, k, lda)
	w := randSlice(r, n*ldw)
	for i := range w {
		w[i] *= 0.05
	}
	c0 := randSlice(r, m*ldc)
	qw := kernel.QuantizeNK(w, ldw, n, k)
	var qa kernel.QRows
	qa.Quantize(a, lda, m, k)
	checkQuantizers(t, a, lda, m, k, &qa, w, ldw, n, qw)
	// Every kernel's quantiser makes the same bytes.
	for _, name := range kernel.QKernels() {
		restore := kernel.UseQKernel(name)
		var other kernel.QRows
		other.Quantize(a, lda, m, k)
		restore()
		if !slices.Equal(other.Data, qa.Data) || !slices.Equal(other.Scale, qa.Scale) || !slices.Equal(other.Zero, qa.Zero) {
			t.Fatalf("int8 kernel %s m=%d k=%d: the activations quantise differently", name, m, k)
		}
	}
	want := make([]float64, m*n)
	mag := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var acc int64
			for kk := 0; kk < qw.Kp; kk++ {
				acc += int64(qa.Data[i*qa.Kp+kk]) * int64(qWeight(qw, kk, j))
			}
			term := float64(acc-int64(qa.Zero[i])*int64(qw.ColSum[j])) * float64(qa.Scale[i]) * float64(qw.Scale[j])
			want[i*n+j] = float64(c0[i*ldc+j]) + term
			mag[i*n+j] = math.Abs(term) + math.Abs(float64(c0[i*ldc+j]))
		}
	}
	for _, name := range kernel.QKernels() {
		restore := kernel.UseQKernel(name)
		c := append([]float32(nil), c0...)
		var s kernel.QScratch
		np := kernel.NumPanels(n)
		half, mh := np/2, m/2
		kernel.GemmQ8(mh, &qa, 0, qw, 0, half, c, ldc, &s)
		kernel.GemmQ8(mh, &qa, 0, qw, half, np, c, ldc, &s)
		kernel.GemmQ8(m-mh, &qa, mh, qw, 0, np, c[mh*ldc:], ldc, &s)
		restore()
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				if d := math.Abs(float64(c[i*ldc+j]) - want[i*n+j]); d > 1e-6*mag[i*n+j]+1e-30 {
					t.Fatalf("int8 kernel %s m=%d n=%d k=%d: C[%d][%d] = %v, want %v (|d| = %g)",
						name, m, n, k, i, j, c[i*ldc+j], want[i*n+j], d)
				}
			}
			for j := n; j < ldc; j++ {
				if c[i*ldc+j] != c0[i*ldc+j] {
					t.Fatalf("int8 kernel %s m=%d n=%d k=%d: wrote C[%d][%d] past the %d columns", name, m, n, k, i, j, n)
				}
			}
		}
	}
}

func TestGemmQ8Shapes(t *testing.T) {
	t.Logf("int8 kernels checked on this CPU: %v", kernel.QKernels())
	for i, s := range [][3]int{
		{1, 1, 1}, {12, 32, 4}, {12, 32, 7}, {13, 33, 5}, {11, 31, 300}, {97, 65, 257},
		{25, 384, 384}, {5, 1536, 64}, {24, 64, 1536}, {300, 40, 17}, {3, 7, 0},
	} {
		checkGemmQ8(t, uint64(i), s[0], s[1], s[2])
	}
}

func TestGemmQ8RandomShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 40; i++ {
		checkGemmQ8(t, uint64(i), 1+r.IntN(130), 1+r.IntN(100), r.IntN(600))
	}
}

// The quantised product approximates the float one: on MiniLM-like values
// the error of a dot product stays within a small share of its terms.
func TestGemmQ8Approximates(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	m, n, k := 20, 64, 384
	a := activations(r, m, k, k)
	w := randSlice(r, n*k)
	for i := range w {
		w[i] *= 0.05
	}
	qw := kernel.QuantizeNK(w, k, n, k)
	var qa kernel.QRows
	qa.Quantize(a, k, m, k)
	c := make([]float32, m*n)
	var s kernel.QScratch
	kernel.GemmQ8(m, &qa, 0, qw, 0, kernel.NumPanels(n), c, n, &s)
	var worst float64
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var dot, abs float64
			for kk := 0; kk < k; kk++ {
				dot += float64(a[i*k+kk]) * float64(w[j*k+kk])
				abs += math.Abs(float64(a[i*k+kk]) * float64(w[j*k+kk]))
			}
			if abs > 0 {
				worst = max(worst, math.Abs(float64(c[i*n+j])-dot)/abs)
			}
		}
	}
	if worst > 0.02 {
		t.Fatalf("int8 product off by up to %.4f of the sum of |terms|, want ≤ 0.02", worst)
	}
	t.Logf("worst error: %.5f of the sum of |terms|", worst)
}

func FuzzGemmQ8(f *testing.F) {
	f.Add(uint64(1), uint8(13), uint8(33), uint16(5))
	f.Add(uint64(2), uint8(1), uint8(1), uint16(300))
	// Shapes stay small (an exact product per input): up to 64 rows, 80
	// columns (two panels and an edge) and 400 k (odd k: padding).
	f.Fuzz(func(t *testing.T, seed uint64, m, n uint8, k uint16) {
		checkGemmQ8(t, seed, 1+int(m)%64, 1+int(n)%80, int(k%400))
	})
}
