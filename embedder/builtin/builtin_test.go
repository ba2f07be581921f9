package builtin_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/ragd/ragd/embedder/builtin"
	"github.com/ragd/ragd/embedder/builtin/internal/kernel"
	"github.com/ragd/ragd/embedder/builtin/internal/reference"
	"github.com/ragd/ragd/internal/integration"
)

// openMiniLM opens all-MiniLM-L6-v2 in fp32, the precision of the reference
// vectors.
func openMiniLM(tb testing.TB) *builtin.Model {
	tb.Helper()
	m, err := builtin.Open(builtin.Config{Dir: integration.ModelDir(tb), Name: "sentence-transformers/all-MiniLM-L6-v2", Precision: "fp32"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	return m
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

// TestReferenceTexts embeds the reference texts through the whole embedder
// (tokeniser, truncation, batching, pooling, normalisation) and compares
// with ONNX Runtime's vectors.
func TestReferenceTexts(t *testing.T) {
	m := openMiniLM(t)
	cases := reference.MustLoad(t, "testdata/"+reference.File)
	var texts []string
	var kept []reference.Case
	for _, c := range cases {
		texts = append(texts, c.Text)
		kept = append(kept, c)
	}
	vecs, err := m.Documents().Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
	}
	minCos, sum := 1.0, 0.0
	for i, c := range kept {
		if len(vecs[i]) != m.Dimension() {
			t.Fatalf("vector %d has %d dimensions, want %d", i, len(vecs[i]), m.Dimension())
		}
		cs := cosine(vecs[i], c.Vec)
		sum += cs
		minCos = min(minCos, cs)
		if cs < 0.999 {
			t.Errorf("case %d (%s): cosine %.6f with ONNX Runtime, want ≥ 0.999", c.Index, c.Kind, cs)
		}
	}
	t.Logf("%d texts: cosine with ONNX Runtime min %.9f mean %.9f", len(kept), minCos, sum/float64(len(kept)))
}

func TestIdentity(t *testing.T) {
	m := openMiniLM(t)
	id := m.Identity()
	for _, want := range []string{"kind=builtin", `model="sentence-transformers/all-MiniLM-L6-v2"`, "sha256=",
		"pooling=mean", "normalize=true", "max_seq_length=256", "dimension=384"} {
		if !strings.Contains(id, want) {
			t.Errorf("Identity() = %s, want it to contain %s", id, want)
		}
	}
	other, err := builtin.Open(builtin.Config{Dir: integration.ModelDir(t), Name: "x", MaxSeqLength: 128, QueryPrefix: "query: "})
	if err != nil {
		t.Fatal(err)
	}
	if oid := other.Identity(); oid == id || !strings.Contains(oid, "max_seq_length=128") || !strings.Contains(oid, `query_prefix="query: "`) {
		t.Errorf("Identity() with other settings = %s", oid)
	}
	if _, err := builtin.Open(builtin.Config{Dir: integration.ModelDir(t), MaxSeqLength: 513}); err == nil {
		t.Error("MaxSeqLength past the model's positions: no error")
	}
}

// TestRolesAndPrefix: the query role prepends QueryPrefix; without one the
// two roles embed alike.
func TestRolesAndPrefix(t *testing.T) {
	m := openMiniLM(t)
	ctx := context.Background()
	d, err := m.Documents().Embed(ctx, []string{"wing flutter"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := m.Queries().Embed(ctx, []string{"wing flutter"})
	if err != nil {
		t.Fatal(err)
	}
	if c := cosine(d[0], q[0]); c < 0.999999 {
		t.Errorf("no prefixes: document and query vectors differ (cosine %v)", c)
	}
	pm, err := builtin.Open(builtin.Config{Dir: integration.ModelDir(t), QueryPrefix: "query: ", Precision: "fp32"})
	if err != nil {
		t.Fatal(err)
	}
	pq, err := pm.Queries().Embed(ctx, []string{"wing flutter"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.Documents().Embed(ctx, []string{"query: wing flutter"})
	if err != nil {
		t.Fatal(err)
	}
	if c := cosine(pq[0], want[0]); c < 0.999999 {
		t.Errorf("query prefix not applied: cosine %v with the prefixed text", c)
	}
	if c := cosine(pq[0], q[0]); c > 0.9999 {
		t.Errorf("query prefix made no difference (cosine %v)", c)
	}
}

func TestEmbedCancelled(t *testing.T) {
	m := openMiniLM(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Documents().Embed(ctx, []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Embed(cancelled ctx) = %v, want context.Canceled", err)
	}
}

// TestConcurrentEmbed: concurrent callers get the same vectors as one alone.
func TestConcurrentEmbed(t *testing.T) {
	m := openMiniLM(t)
	texts := []string{"the boundary layer", "", "shock waves at hypersonic speed " + strings.Repeat("word ", 300)}
	want, err := m.Documents().Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for g := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := m.Documents().Embed(context.Background(), texts)
			if err != nil {
				errs[g] = err
				return
			}
			for i := range want {
				if c := cosine(got[i], want[i]); c < 0.999999 {
					errs[g] = errors.New("vectors differ under concurrency")
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestEmbedCancelledBetweenBatches: a ctx cancelled while a batch runs stops
// the call before the next batch, with the ctx's error.
func TestEmbedCancelledBetweenBatches(t *testing.T) {
	m, err := builtin.Open(builtin.Config{Dir: "testdata/tiny"})
	if err != nil {
		t.Fatal(err)
	}
	// Every text fills max_seq_length (24 ids): DocumentBatchTokens/24 texts
	// a chunk.
	texts := make([]string, 3*builtin.DocumentBatchTokens/24)
	for i := range texts {
		texts[i] = strings.Repeat("flow ", 40)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	batches := 0
	defer builtin.SetBatchHook(func() {
		batches++
		cancel()
	})()
	if _, err := m.Documents().Embed(ctx, texts); !errors.Is(err, context.Canceled) {
		t.Fatalf("Embed = %v, want context.Canceled", err)
	}
	if batches != 1 {
		t.Fatalf("%d batches ran after the cancel, want 1", batches)
	}
}

// TestDefaultPrecision: int8 is the default only with the VNNI kernel; the
// AVX2 int8 kernel is no faster than fp32's, the portable one (purego, old
// arm64) far slower and NEON's unmeasured, so those CPUs keep fp32. On this CPU the default
// follows its own int8 kernel.
func TestDefaultPrecision(t *testing.T) {
	for k, want := range map[string]string{"avx512vnni": "int8", "avx2": "fp32", "neon": "fp32", "go": "fp32"} {
		if got := builtin.PrecisionFor(k); got != want {
			t.Errorf("int8 kernel %s: default precision %q, want %q", k, got, want)
		}
	}
	if got, want := builtin.DefaultPrecision(), builtin.PrecisionFor(kernel.QKernelName()); got != want {
		t.Errorf("DefaultPrecision() = %q with the %s int8 kernel, want %q", got, kernel.QKernelName(), want)
	}
}
