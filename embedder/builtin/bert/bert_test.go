package bert_test

import (
	"errors"
	"math"
	"testing"

	"github.com/ragd/ragd/embedder/builtin/bert"
	"github.com/ragd/ragd/embedder/builtin/internal/reference"
	"github.com/ragd/ragd/internal/integration"
)

func loadMiniLM(tb testing.TB) *bert.Model {
	tb.Helper()
	m, err := bert.Load(integration.ModelDir(tb), bert.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func cosine(a []float32, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

// TestReferenceVectors embeds the token ids of every third reference text
// (batches of mixed lengths, as the embedder sends them) and compares with
// ONNX Runtime's vectors. The embedder's own test runs all of them, from
// the texts.
func TestReferenceVectors(t *testing.T) {
	m := loadMiniLM(t)
	var cases []reference.Case
	for i, c := range reference.MustLoad(t, "../testdata/"+reference.File) {
		if i%3 == 0 {
			cases = append(cases, c)
		}
	}
	minCos, sum := 1.0, 0.0
	worst := -1
	for lo := 0; lo < len(cases); lo += 37 {
		hi := min(lo+37, len(cases))
		seqs := make([][]int32, 0, hi-lo)
		for _, c := range cases[lo:hi] {
			seqs = append(seqs, c.IDs)
		}
		vecs, err := m.Embed(seqs, bert.PoolMean, true)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range cases[lo:hi] {
			cs := cosine(vecs[i], c.Vec)
			sum += cs
			if cs < minCos {
				minCos, worst = cs, c.Index
			}
			if cs < 0.999 {
				t.Errorf("case %d (%s, %d tokens): cosine %.6f with ONNX Runtime, want ≥ 0.999", c.Index, c.Kind, len(c.IDs), cs)
			}
		}
	}
	t.Logf("%d reference texts: cosine with ONNX Runtime min %.9f (case %d), mean %.9f", len(cases), minCos, worst, sum/float64(len(cases)))
}

// TestBatchIndependence: a sequence's vector does not depend on what else
// is in its batch (no padding, no cross-talk between sequences), nor on
// how many goroutines the pass is split over (EmbedThreads).
func TestBatchIndependence(t *testing.T) {
	m, err := bert.Load(integration.ModelDir(t), bert.Options{Threads: 2}) // split even on one core
	if err != nil {
		t.Fatal(err)
	}
	cases := reference.MustLoad(t, "../testdata/"+reference.File)
	var seqs [][]int32
	for _, c := range cases[:24] {
		seqs = append(seqs, c.IDs)
	}
	batch, err := m.Embed(seqs, bert.PoolCLS, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{1, m.Threads()} {
		for i, s := range seqs {
			one, err := m.EmbedThreads([][]int32{s}, bert.PoolCLS, false, threads)
			if err != nil {
				t.Fatal(err)
			}
			for j := range one[0] {
				if d := math.Abs(float64(one[0][j] - batch[i][j])); d > 1e-4 {
					t.Fatalf("sequence %d alone on %d goroutines differs from in a batch at [%d]: %v vs %v", i, threads, j, one[0][j], batch[i][j])
				}
			}
		}
	}
	// The whole batch on one goroutine: rows no longer split.
	one, err := m.EmbedThreads(seqs, bert.PoolCLS, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range seqs {
		for j := range one[i] {
			if d := math.Abs(float64(one[i][j] - batch[i][j])); d > 1e-4 {
				t.Fatalf("sequence %d in a batch on 1 goroutine differs at [%d]: %v vs %v", i, j, one[i][j], batch[i][j])
			}
		}
	}
}

func TestEmbedRejects(t *testing.T) {
	m := loadMiniLM(t)
	long := make([]int32, m.MaxPositions()+1)
	for _, seqs := range [][][]int32{
		{{101, 102}, {}},
		{long},
		{{101, -1, 102}},
		{{101, int32(m.Config().VocabSize), 102}},
	} {
		if _, err := m.Embed(seqs, bert.PoolMean, true); !errors.Is(err, bert.ErrInput) {
			t.Errorf("Embed(%d sequences) = %v, want ErrInput", len(seqs), err)
		}
	}
	out, err := m.Embed(nil, bert.PoolMean, true)
	if err != nil || len(out) != 0 {
		t.Fatalf("Embed(nil) = %v, %v", out, err)
	}
}
