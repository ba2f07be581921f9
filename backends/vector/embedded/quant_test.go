package embedded_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/ragd/ragd/backends/vector/embedded"
	"github.com/ragd/ragd/spi"
)

// dotCodesRef is the inner product in int64, the kernels' reference.
func dotCodesRef(a []int16, b []int8) int64 {
	var s int64
	for i := range a {
		s += int64(a[i]) * int64(b[i])
	}
	return s
}

func checkDot(t *testing.T, a []int16, b []int8) {
	t.Helper()
	want := dotCodesRef(a, b[:len(a)])
	if got := embedded.DotCodes(a, b); int64(got) != want {
		t.Fatalf("n=%d: DotCodes = %d, want %d", len(a), got, want)
	}
	for name, dot := range embedded.DotKernels() {
		if got := dot(a, b[:len(a)]); int64(got) != want {
			t.Fatalf("n=%d: kernel %s = %d, want %d", len(a), name, got, want)
		}
	}
}

func TestDotCodes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for n := range 200 {
		top := int(embedded.QueryCodeMax(n))
		a, b := make([]int16, n), make([]int8, n+r.IntN(3)) // b may be longer
		for i := range a {
			a[i] = int16(r.IntN(2*top+1) - top)
		}
		for i := range b {
			b[i] = int8(r.IntN(255) - 127)
		}
		checkDot(t, a, b)
	}
	// The extremes the int32 accumulator must hold: every product at its
	// largest magnitude, for a short and for the longest vector.
	for _, n := range []int{384, embedded.MaxDimension} {
		top := int16(embedded.QueryCodeMax(n))
		a, b := make([]int16, n), make([]int8, n)
		for i := range a {
			a[i], b[i] = -top, 127
		}
		checkDot(t, a, b)
		for i := range a {
			a[i], b[i] = top, 127
		}
		checkDot(t, a, b)
	}
}

// DotCodesMany scores a row against consecutive rows of b, as an IVF
// scores a row against its centroids: each product as the reference's,
// for lengths around the kernels' 32- and 64-element steps and their
// tails, and at the accumulator's extremes.
func TestDotCodesMany(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for _, n := range []int{0, 1, 15, 31, 32, 33, 63, 64, 65, 97, 383, 384, 385, embedded.MaxDimension} {
		for _, m := range []int{0, 1, 2, 7, 50} {
			top := int(embedded.QueryCodeMax(n))
			a, b := make([]int16, n), make([]int8, m*n+r.IntN(3)) // b may be longer
			for i := range a {
				a[i] = int16(r.IntN(2*top+1) - top)
			}
			for i := range b {
				b[i] = int8(r.IntN(255) - 127)
			}
			if m > 0 && n > 0 {
				for i := range a { // one row at the extremes
					a[i], b[i] = int16(top), 127
				}
			}
			out := make([]int32, m)
			for j := range out {
				out[j] = -1
			}
			embedded.DotCodesMany(a, b, out)
			for j := range out {
				if want := dotCodesRef(a, b[j*n:(j+1)*n]); int64(out[j]) != want {
					t.Fatalf("n=%d, m=%d: row %d = %d, want %d", n, m, j, out[j], want)
				}
			}
		}
	}
}

func FuzzDotCodes(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{255, 128, 127, 0})
	f.Add(make([]byte, 94), make([]byte, 47))
	f.Fuzz(func(t *testing.T, x, y []byte) {
		n := min(len(x)/2, len(y))
		top := int(embedded.QueryCodeMax(n))
		a, b := make([]int16, n), make([]int8, n)
		for i := range n {
			a[i] = int16(int(int16(uint16(x[2*i])|uint16(x[2*i+1])<<8)) % (top + 1))
			b[i] = max(-127, int8(y[i]))
		}
		checkDot(t, a, b)
	})
}

// The int8 pass only decides which rows are scored in float32: Retrieve
// must return exactly what scoring every row returns, scores and ties
// included, on data built to stress the bounds (repeated values and exact
// duplicates for ties, outlier components for coarse codes, zero and
// unnormalised vectors).
func TestSearchMatchesFullScan(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		dim := rapid.IntRange(1, 80).Draw(rt, "dim")
		n := rapid.IntRange(1, 400).Draw(rt, "n")
		distance := rapid.SampledFrom([]embedded.Distance{embedded.Cosine, embedded.L2, embedded.InnerProduct}).Draw(rt, "distance")
		levels := rapid.SampledFrom([]int{3, 7, 0}).Draw(rt, "levels") // 0: gaussian
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 2))
		vec := func() []float32 {
			v := make([]float32, dim)
			for i := range v {
				if levels > 0 {
					v[i] = float32(r.IntN(levels) - levels/2)
				} else {
					v[i] = float32(r.NormFloat64())
				}
				if r.IntN(50) == 0 {
					v[i] *= 40 // an outlier coarsens the row's codes
				}
			}
			if distance != embedded.Cosine && r.IntN(20) == 0 {
				clear(v)
			}
			if distance == embedded.Cosine && !slices.ContainsFunc(v, func(x float32) bool { return x != 0 }) {
				v[0] = 1
			}
			return v
		}
		docs := make([]spi.Document, n)
		for i := range docs {
			docs[i] = spi.Document{ID: fmt.Sprintf("d%04d", i), Tenant: fmt.Sprint("t", i%3),
				Metadata: spi.Strings(map[string]string{"m": fmt.Sprint(i % 4)}), Vector: vec()}
			if i > 0 && r.IntN(10) == 0 {
				docs[i].Vector = docs[r.IntN(i)].Vector
			}
		}
		par := rapid.IntRange(1, 3).Draw(rt, "parallelism")
		s, err := embedded.Open(context.Background(), embedded.Config{Dir: t.TempDir(), Dimension: dim,
			Distance: distance, Parallelism: par, NoSync: true})
		if err != nil {
			rt.Fatal(err)
		}
		defer s.Close()
		if err := s.Upsert(context.Background(), docs); err != nil {
			rt.Fatal(err)
		}
		for range 5 {
			req := spi.VectorRequest{Vector: vec(), K: rapid.IntRange(1, 30).Draw(rt, "k")}
			if r.IntN(2) == 0 {
				req.Vector = docs[r.IntN(n)].Vector
			}
			switch r.IntN(4) {
			case 1:
				req.Tenant = "t1"
			case 2:
				req.Filter = spi.StringFilter(map[string][]string{"m": {"2", "3"}})
			}
			got, err := s.Retrieve(context.Background(), req)
			if err != nil {
				rt.Fatal(err)
			}
			want, err := embedded.FullScan(s, req)
			if err != nil {
				rt.Fatal(err)
			}
			if !slices.Equal(got, want) {
				rt.Fatalf("Retrieve(k=%d tenant=%q filter=%v)\n got %v\nwant %v", req.K, req.Tenant, req.Filter, got, want)
			}
		}
	})
}
