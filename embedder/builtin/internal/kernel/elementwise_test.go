package kernel_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ragd/ragd/embedder/builtin/internal/kernel"
)

func TestErf(t *testing.T) {
	var worst float64
	for x := -6.0; x <= 6.0; x += 1e-4 {
		got := float64(kernel.Erf(float32(x)))
		want := math.Erf(float64(float32(x)))
		worst = max(worst, math.Abs(got-want))
	}
	if worst > 1e-6 {
		t.Fatalf("max |Erf - math.Erf| = %g on [-6, 6], want ≤ 1e-6", worst)
	}
}

func TestGELU(t *testing.T) {
	for _, name := range kernel.Kernels() {
		restore := kernel.UseKernel(name)
		xs := make([]float32, 0, 2000)
		for x := -10.0; x <= 10.0; x += 0.0137 {
			xs = append(xs, float32(x))
		}
		orig := append([]float32(nil), xs...)
		kernel.GELU(xs)
		restore()
		for i, x := range orig {
			want := 0.5 * float64(x) * (1 + math.Erf(float64(x)/math.Sqrt2))
			if d := math.Abs(float64(xs[i]) - want); d > 2e-6*(1+math.Abs(want)) {
				t.Fatalf("kernel %s: GELU(%v) = %v, want %v", name, x, xs[i], want)
			}
		}
	}
}

func TestExp(t *testing.T) {
	for x := -100.0; x <= 88.0; x += 0.0031 {
		got := float64(kernel.Exp(float32(x)))
		want := math.Exp(float64(float32(x)))
		if x < -87.3 {
			continue // TestExpBelowItsRange
		}
		if d := math.Abs(got-want) / want; d > 3e-7 {
			t.Fatalf("Exp(%v) = %v, want %v (relative error %g)", x, got, want, d)
		}
	}
}

func TestSoftmax(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, name := range kernel.Kernels() {
		restore := kernel.UseKernel(name)
		for _, n := range []int{1, 2, 15, 16, 17, 33, 256, 301} {
			row := make([]float32, n)
			for i := range row {
				row[i] = float32(r.NormFloat64() * 8)
			}
			orig := append([]float32(nil), row...)
			kernel.Softmax(row)
			m := math.Inf(-1)
			for _, v := range orig {
				m = max(m, float64(v))
			}
			var sum float64
			for _, v := range orig {
				sum += math.Exp(float64(v) - m)
			}
			for i, v := range orig {
				want := math.Exp(float64(v)-m) / sum
				if d := math.Abs(float64(row[i]) - want); d > 1e-6 {
					t.Fatalf("kernel %s n=%d: softmax[%d] = %v, want %v", name, n, i, row[i], want)
				}
			}
		}
		restore()
	}
}

func TestLayerNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, name := range kernel.Kernels() {
		for _, n := range []int{37, 16, 384} {
			rows, ld := 3, n+3
			x := randSlice(r, rows*ld)
			for i := range x {
				x[i] = x[i]*3 + 5 // an offset, as hidden states have
			}
			gamma, beta := randSlice(r, n), randSlice(r, n)
			orig := append([]float32(nil), x...)
			restore := kernel.UseKernel(name)
			kernel.LayerNorm(x, ld, rows, gamma, beta, 1e-12)
			restore()
			for rr := 0; rr < rows; rr++ {
				var mean, v float64
				for i := 0; i < n; i++ {
					mean += float64(orig[rr*ld+i])
				}
				mean /= float64(n)
				for i := 0; i < n; i++ {
					d := float64(orig[rr*ld+i]) - mean
					v += d * d
				}
				v /= float64(n)
				for i := 0; i < n; i++ {
					want := (float64(orig[rr*ld+i])-mean)/math.Sqrt(v+1e-12)*float64(gamma[i]) + float64(beta[i])
					if d := math.Abs(float64(x[rr*ld+i]) - want); d > 2e-5*(1+math.Abs(want)) {
						t.Fatalf("kernel %s n=%d: row %d [%d] = %v, want %v", name, n, rr, i, x[rr*ld+i], want)
					}
				}
				for i := n; i < ld; i++ {
					if x[rr*ld+i] != orig[rr*ld+i] {
						t.Fatalf("kernel %s n=%d: row %d: wrote past the %d columns", name, n, rr, n)
					}
				}
			}
		}
	}
}

// TestExpBelowItsRange is issue 29 item 8: Exp's doc promised (and the
// portable code returned) 0 below -87.3 while the vector kernels clamp
// their input there and return e^-87.3. Exp and every kernel's softmax now
// agree: a value more than 87.3 below the row's maximum gets e^-87.3
// (≈1.2e-38, a normal number) over the sum, which may be a denormal, never
// 0.
func TestExpBelowItsRange(t *testing.T) {
	floor := kernel.Exp(-87.3)
	if floor < math.SmallestNonzeroFloat32*(1<<23) || floor > 1.3e-38 { // the smallest normal float32 is 2^-126
		t.Fatalf("Exp(-87.3) = %g, want a normal number near 1.2e-38", floor)
	}
	for _, x := range []float32{-87.31, -88, -100, -1000, float32(math.Inf(-1))} {
		if got := kernel.Exp(x); got != floor {
			t.Errorf("Exp(%v) = %g, want Exp(-87.3) = %g", x, got, floor)
		}
	}
	for _, n := range []int{2, 8, 16, 17, 33} {
		row := make([]float32, n)
		for i := range row {
			row[i] = -float32(i%5) * 40 // 0, -40, -80, -120, -160
		}
		var want []float32
		for _, name := range kernel.Kernels() {
			restore := kernel.UseKernel(name)
			got := append([]float32(nil), row...)
			kernel.Softmax(got)
			restore()
			for i, v := range got {
				if v == 0 {
					t.Fatalf("kernel %s n=%d: softmax[%d] of %v = 0", name, n, i, row[i])
				}
			}
			if want == nil {
				want = got
				continue
			}
			for i := range got {
				if d := math.Abs(float64(got[i]-want[i])) / float64(want[i]); d > 1e-6 {
					t.Fatalf("kernel %s n=%d: softmax[%d] of %v = %g, the portable kernel %g", name, n, i, row[i], got[i], want[i])
				}
			}
		}
	}
}
