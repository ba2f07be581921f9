package hashing_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/ragd/ragd/embedder/hashing"
	"github.com/ragd/ragd/spi"
)

func mustNew(tb testing.TB, cfg hashing.Config) *hashing.Embedder {
	tb.Helper()
	e, err := hashing.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

func embedOne(tb testing.TB, e *hashing.Embedder, text string) []float32 {
	tb.Helper()
	vs, err := e.Embed(context.Background(), []string{text})
	if err != nil {
		tb.Fatal(err)
	}
	return vs[0]
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func norm(v []float32) float64 { return math.Sqrt(dot(v, v)) }

// digest hashes the exact bits of vectors, so a golden value pins the output.
func digest(vs [][]float32) string {
	h := sha256.New()
	var b [4]byte
	for _, v := range vs {
		for _, x := range v {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
			h.Write(b[:])
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

var samples = []string{
	"experimental investigation of the aerodynamics of a wing in a slipstream .",
	"Boundary-layer transition on a flat plate at supersonic Mach numbers",
	"Heat conduction in composite slabs; the results are compared with theory.",
	"Ünïcödé téxt — Straße, naïve café, 東京 2024",
	"",
}

func TestDeterministic(t *testing.T) {
	a := mustNew(t, hashing.Config{})
	b := mustNew(t, hashing.Config{})
	va, err := a.Embed(context.Background(), samples)
	if err != nil {
		t.Fatal(err)
	}
	vb, err := b.Embed(context.Background(), samples)
	if err != nil {
		t.Fatal(err)
	}
	// Embedding one by one (different scratch reuse) gives identical bits.
	var vc [][]float32
	for _, s := range samples {
		vc = append(vc, embedOne(t, a, s))
	}
	if digest(va) != digest(vb) || digest(va) != digest(vc) {
		t.Fatalf("embeddings differ between embedders or call shapes: %s %s %s", digest(va), digest(vb), digest(vc))
	}
}

// TestGolden pins the exact output bits, so any change to tokenisation,
// hashing or weighting (which silently invalidates stored vectors) fails
// here and must come with a new Fingerprint version.
func TestGolden(t *testing.T) {
	e := mustNew(t, hashing.Config{})
	vs, err := e.Embed(context.Background(), samples)
	if err != nil {
		t.Fatal(err)
	}
	const want = "947326242acadcaa"
	if got := digest(vs); got != want {
		t.Fatalf("golden digest = %s, want %s (bump the fingerprint version if the change is intended)", got, want)
	}
	if got, want := e.Fingerprint(), "hashing-v1/d384/n3-5/w1,b0.5,c0.3"; got != want {
		t.Fatalf("Fingerprint() = %q, want %q", got, want)
	}
}

func TestUnitNormAndDimension(t *testing.T) {
	for _, dim := range []int{8, 256, 384, 1000} {
		e := mustNew(t, hashing.Config{Dimension: dim})
		if e.Dimension() != dim {
			t.Fatalf("Dimension() = %d, want %d", e.Dimension(), dim)
		}
		vs, err := e.Embed(context.Background(), samples)
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) != len(samples) {
			t.Fatalf("got %d vectors for %d texts", len(vs), len(samples))
		}
		for i, v := range vs {
			if len(v) != dim {
				t.Fatalf("dim %d: vector %d has length %d", dim, i, len(v))
			}
			if err := spi.ValidateVector(v, dim); err != nil {
				t.Fatalf("dim %d: vector %d: %v", dim, i, err)
			}
			if n := norm(v); math.Abs(n-1) > 1e-5 {
				t.Fatalf("dim %d: vector %d has norm %v", dim, i, n)
			}
		}
	}
}

func TestEmptyTextIsDefinedUnitVector(t *testing.T) {
	e := mustNew(t, hashing.Config{})
	empty := embedOne(t, e, "")
	for _, text := range []string{"   ", "the of and", ". , ; !", "a b c"} {
		v := embedOne(t, e, text)
		if digest([][]float32{v}) != digest([][]float32{empty}) {
			t.Errorf("%q: featureless text must map to the empty vector", text)
		}
	}
	nonzero := 0
	for _, x := range empty {
		if x != 0 {
			nonzero++
		}
	}
	if nonzero != 1 || math.Abs(norm(empty)-1) > 1e-6 {
		t.Fatalf("empty vector: %d non-zero components, norm %v; want one component, norm 1", nonzero, norm(empty))
	}
	c := dot(empty, embedOne(t, e, "supersonic flow"))
	if math.IsNaN(c) || math.Abs(c) > 1 {
		t.Fatalf("cosine with the empty vector = %v", c)
	}
}

func TestSimilarTextsCloser(t *testing.T) {
	e := mustNew(t, hashing.Config{})
	cases := []struct{ a, near, far string }{
		{"aerodynamics of a wing in a slipstream", "wing aerodynamic loads in propeller slipstreams", "heat conduction in composite slabs"},
		{"boundary layer transition at supersonic speed", "transition of supersonic boundary layers", "the price of coffee in brazil"},
		{"Heat transfer", "heat transfer coefficients", "structural vibration"},
		{"morphology", "morphological", "xylophone"}, // char n-grams only
	}
	for _, c := range cases {
		a, near, far := embedOne(t, e, c.a), embedOne(t, e, c.near), embedOne(t, e, c.far)
		if sn, sf := dot(a, near), dot(a, far); sn <= sf+0.1 {
			t.Errorf("%q: cos(near %q) = %.3f not clearly above cos(far %q) = %.3f", c.a, c.near, sn, c.far, sf)
		}
	}
	// Stop words and case do not matter.
	if c := dot(embedOne(t, e, "Of the AIRCRAFT Wing."), embedOne(t, e, "aircraft wing")); c < 0.999 {
		t.Errorf("stop words/case changed the vector: cos = %v", c)
	}
	// Plurals are folded for word features.
	if c := dot(embedOne(t, e, "layers"), embedOne(t, e, "layer")); c < 0.6 {
		t.Errorf("cos(layers, layer) = %.3f, want >= 0.6", c)
	}
}

func TestFeatureFamiliesCanBeDisabled(t *testing.T) {
	words := mustNew(t, hashing.Config{DisableBigrams: true, DisableCharNGrams: true})
	// With word unigrams only, order does not matter.
	if c := dot(embedOne(t, words, "flat plate"), embedOne(t, words, "plate flat")); c < 0.999 {
		t.Errorf("unigram-only: cos(flat plate, plate flat) = %v, want 1", c)
	}
	full := mustNew(t, hashing.Config{})
	if c := dot(embedOne(t, full, "flat plate"), embedOne(t, full, "plate flat")); c > 0.99 {
		t.Errorf("with bigrams: cos(flat plate, plate flat) = %v, want < 1", c)
	}
	// Without char n-grams a morphological variant shares nothing.
	if c := dot(embedOne(t, words, "morphology"), embedOne(t, words, "morphological")); math.Abs(c) > 0.5 {
		t.Errorf("unigram-only: cos(morphology, morphological) = %v, want ~0", c)
	}
}

func TestSublinearTF(t *testing.T) {
	e := mustNew(t, hashing.Config{DisableBigrams: true, DisableCharNGrams: true})
	// "wing" twice vs "plate" once: weights 1+ln2 and 1, so the cosine with
	// "wing" is (1+ln2)/sqrt((1+ln2)^2+1) unless the buckets collide.
	v := embedOne(t, e, "wing wing plate")
	got := dot(v, embedOne(t, e, "wing"))
	want := (1 + math.Ln2) / math.Sqrt((1+math.Ln2)*(1+math.Ln2)+1)
	if math.Abs(got-want) > 1e-6 {
		t.Fatalf("cos = %v, want %v (1+ln tf weighting)", got, want)
	}
}

func TestConfigValidate(t *testing.T) {
	bad := []hashing.Config{
		{Dimension: -1},
		{Dimension: 4},
		{Dimension: 1 << 20},
		{MinN: 4, MaxN: 3},
		{MinN: 0, MaxN: 9},
		{WordWeight: -1},
		{CharWeight: math.NaN()},
		{BigramWeight: math.Inf(1)},
	}
	for _, c := range bad {
		if err := c.Validate(); !errors.Is(err, hashing.ErrConfig) {
			t.Errorf("Validate(%+v) = %v, want ErrConfig", c, err)
		}
		if _, err := hashing.New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
	if err := (hashing.Config{}).Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
	got := hashing.Config{}.WithDefaults()
	if got.Dimension != 384 || got.MinN != 3 || got.MaxN != 5 {
		t.Fatalf("defaults = %+v", got)
	}
}

func TestCancelledContext(t *testing.T) {
	e := mustNew(t, hashing.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, []string{"x y"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Embed on cancelled ctx = %v, want context.Canceled", err)
	}
	vs, err := e.Embed(context.Background(), nil)
	if err != nil || len(vs) != 0 {
		t.Fatalf("Embed(nil) = %v, %v", vs, err)
	}
}

func TestVectorsDoNotAlias(t *testing.T) {
	e := mustNew(t, hashing.Config{Dimension: 8})
	vs, err := e.Embed(context.Background(), []string{"alpha beta", "gamma delta"})
	if err != nil {
		t.Fatal(err)
	}
	before := digest(vs[1:])
	_ = append(vs[0], 42) // must not write into vs[1]
	if digest(vs[1:]) != before {
		t.Fatal("appending to one vector modified the next")
	}
}

func TestConcurrentUse(t *testing.T) {
	e := mustNew(t, hashing.Config{})
	want := make([]string, len(samples))
	for i, s := range samples {
		want[i] = digest([][]float32{embedOne(t, e, s)})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for r := range 50 {
				i := (g + r) % len(samples)
				vs, err := e.Embed(context.Background(), []string{samples[i]})
				if err != nil {
					errs <- err
					return
				}
				if got := digest(vs); got != want[i] {
					errs <- fmt.Errorf("goroutine %d: text %d digest %s, want %s", g, i, got, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func BenchmarkEmbed(b *testing.B) {
	e := mustNew(b, hashing.Config{})
	short := "what similarity laws must be obeyed when constructing aeroelastic models of heated high speed aircraft ."
	long := strings.Repeat(samples[0]+" "+samples[1]+" "+samples[2]+" ", 10) // ~ 150 words
	for _, bc := range []struct {
		name string
		text string
	}{{"query_15words", short}, {"doc_150words", long}} {
		b.Run(bc.name, func(b *testing.B) {
			texts := []string{bc.text}
			b.SetBytes(int64(len(bc.text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Embed(context.Background(), texts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestLogTable(t *testing.T) {
	if len(hashing.LogTF) != 257 {
		t.Fatalf("table has %d entries, want 257", len(hashing.LogTF))
	}
	for c := 1; c < len(hashing.LogTF); c++ {
		if want := 1 + math.Log(float64(c)); math.Abs(hashing.LogTF[c]-want) > 1e-15*want {
			t.Errorf("LogTF[%d] = %v, want %v", c, hashing.LogTF[c], want)
		}
	}
}
