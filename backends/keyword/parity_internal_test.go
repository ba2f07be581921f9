package keyword

import (
	"context"
	"math"
	"testing"

	"github.com/blevesearch/bleve/v2"

	"github.com/ragd/ragd/eval"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

// The in-memory postings answer plain-text queries exactly as the bleve
// BM25 query of bm25.go over the same index: on Cranfield, every query's
// top 100 have the same scores (to 1e-9, the length norms round-trip) and
// the same ids, up to the order of exact ties.
func TestImpactMatchesBleveBM25(t *testing.T) {
	ds, err := eval.LoadBEIR(spitest.CranfieldDir(t), "test")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	if err := b.Upsert(ctx, ds.Corpus); err != nil {
		t.Fatal(err)
	}
	st := b.st
	n, err := st.idx.DocCount()
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, q := range ds.Queries {
		tokens := st.an.Analyze([]byte(q.Text))
		sr := bleve.NewSearchRequestOptions(b.textQuery(st, tokens, n), 100, 0, false)
		sr.SortBy([]string{"-_score", "_id"})
		res, err := st.idx.SearchInContext(ctx, sr)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.Retrieve(ctx, spi.KeywordRequest{Text: q.Text, K: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(res.Hits) {
			t.Fatalf("query %s: %d refs, bleve %d", q.ID, len(got), len(res.Hits))
		}
		for i, h := range res.Hits {
			if math.Abs(got[i].Score-h.Score) > 1e-9*h.Score {
				t.Fatalf("query %s rank %d: score %v (%s), bleve %v (%s)", q.ID, i+1, got[i].Score, got[i].ID, h.Score, h.ID)
			}
			if got[i].ID != h.ID && (i == 0 || math.Abs(got[i].Score-res.Hits[i-1].Score) > 1e-9*h.Score) &&
				(i+1 == len(res.Hits) || math.Abs(got[i].Score-res.Hits[i+1].Score) > 1e-9*h.Score) {
				t.Fatalf("query %s rank %d: %s, bleve %s (scores %v, %v)", q.ID, i+1, got[i].ID, h.ID, got[i].Score, h.Score)
			}
			compared++
		}
	}
	t.Logf("%d ranked refs compared over %d queries", compared, len(ds.Queries))
}
