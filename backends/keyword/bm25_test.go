package keyword_test

import (
	"math"
	"testing"

	"github.com/blevesearch/bleve/v2"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/en"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/spi"
)

// refBM25 is an independent, brute-force implementation of the scoring
// documented in bm25.go, over the same analyser: Lucene's BM25 per (term,
// field), summed, weighted by the query term frequency and the field
// weight, with a document-level idf.
func refBM25(docs []spi.Document, query string, titleW, k1, b float64) map[string]float64 {
	an := bleve.NewIndexMapping().AnalyzerNamed("en")
	count := func(s string) (map[string]int, int) {
		m := map[string]int{}
		toks := an.Analyze([]byte(s))
		for _, t := range toks {
			m[string(t.Term)]++
		}
		return m, len(toks)
	}
	type fields struct {
		title, text map[string]int
		tl, xl      int
	}
	fs := make([]fields, len(docs))
	var sumT, sumX float64
	for i, d := range docs {
		fs[i].title, fs[i].tl = count(d.Title)
		fs[i].text, fs[i].xl = count(d.Text)
		sumT += float64(fs[i].tl)
		sumX += float64(fs[i].xl)
	}
	n := float64(len(docs))
	avgT, avgX := sumT/n, sumX/n
	qtf, _ := count(query)
	scores := map[string]float64{}
	for term, qf := range qtf {
		df := 0
		for _, f := range fs {
			if f.title[term] > 0 || f.text[term] > 0 {
				df++
			}
		}
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
		sat := func(f float64, l int, avg float64) float64 {
			return f / (f + k1*(1-b+b*float64(l)/avg))
		}
		for i, f := range fs {
			ft, fx := float64(f.title[term]), float64(f.text[term])
			if ft == 0 && fx == 0 {
				continue
			}
			scores[docs[i].ID] += float64(qf) * idf * (titleW*sat(ft, f.tl, avgT) + sat(fx, f.xl, avgX))
		}
	}
	return scores
}

// The scores Retrieve returns are the documented BM25, to 1e-9, whatever the
// title weight and BM25 parameters, with and without a tenant filter (which
// restricts the candidates without changing the statistics).
func TestBM25MatchesReference(t *testing.T) {
	docs := append(filler(120),
		spi.Document{ID: "rep", Tenant: "t0", Title: "alpha alpha", Text: "alpha beta alpha gamma alpha"},
		spi.Document{ID: "long", Tenant: "t1", Title: "a rather long title about beta and delta and more", Text: "beta"},
		spi.Document{ID: "notitle", Tenant: "t2", Text: "omega omega psi"},
	)
	b := mustOpen(t, keyword.Config{BatchSize: 50})
	mustUpsert(t, b, docs...)
	byTenant := map[string]string{}
	for _, d := range docs {
		byTenant[d.ID] = d.Tenant
	}
	queries := []string{"alpha", "alpha beta", "beta beta delta", "omega psi psi psi", "gamma rho nothinghere", "long title"}
	for _, p := range []struct{ titleW, k1, b float64 }{{1, 1.2, 0.75}, {2.5, 1.2, 0.75}, {0.3, 2, 0.3}} {
		v := b.WithScoring(p.titleW, p.k1, p.b)
		for _, q := range queries {
			want := refBM25(docs, q, p.titleW, p.k1, p.b)
			for _, tenant := range []string{"", "t0"} {
				refs := mustRetrieve(t, v, spi.KeywordRequest{Text: q, K: 1000, Tenant: tenant})
				n := 0
				for id := range want {
					if tenant == "" || byTenant[id] == tenant {
						n++
					}
				}
				if len(refs) != n {
					t.Fatalf("%+v %q tenant %q: %d refs, want %d", p, q, tenant, len(refs), n)
				}
				for _, r := range refs {
					if w := want[r.ID]; math.Abs(r.Score-w) > 1e-9*math.Max(1, w) {
						t.Fatalf("%+v %q tenant %q: %s scored %.12f, want %.12f", p, q, tenant, r.ID, r.Score, w)
					}
				}
			}
		}
	}
}

// A word repeated in the query weighs more (query term frequency).
func TestBM25QueryTermFrequency(t *testing.T) {
	b := mustOpen(t, keyword.Config{})
	mustUpsert(t, b, append(filler(50),
		spi.Document{ID: "a", Title: "notes", Text: "turbine blade cooling"},
		spi.Document{ID: "b", Title: "notes", Text: "turbine nozzle erosion"},
	)...)
	wantIDs(t, mustRetrieve(t, b, spi.KeywordRequest{Text: "cooling erosion erosion", K: 2}), "b", "a")
	wantIDs(t, mustRetrieve(t, b, spi.KeywordRequest{Text: "cooling cooling erosion", K: 2}), "a", "b")
}
