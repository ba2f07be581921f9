package keyword_test

import (
	"math"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/en"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

// refIndex is an independent, brute-force implementation of the scoring
// documented in impact.go, over the same analyser: Lucene's BM25 per
// (term, field), summed, weighted by the query term frequency and the
// field weight, with a document-level idf. Documents are analysed once.
type refIndex struct {
	an   analysis.Analyzer
	docs []refDoc
}

type refDoc struct {
	id, tenant  string
	title, text map[string]int
	tl, xl      int
}

func newRefIndex(docs []spi.Document) *refIndex {
	r := &refIndex{an: bleve.NewIndexMapping().AnalyzerNamed("en")}
	for _, d := range docs {
		rd := refDoc{id: d.ID, tenant: d.Tenant}
		rd.title, rd.tl = r.count(d.Title)
		rd.text, rd.xl = r.count(d.Text)
		r.docs = append(r.docs, rd)
	}
	return r
}

func (r *refIndex) count(s string) (map[string]int, int) {
	m := map[string]int{}
	toks := r.an.Analyze([]byte(s))
	for _, t := range toks {
		m[string(t.Term)]++
	}
	return m, len(toks)
}

// scores returns the score of every document matching query; with a
// tenant, of that tenant's documents, over that tenant's statistics
// (N, df, average lengths).
func (r *refIndex) scores(query, tenant string, titleW, k1, b float64) map[string]float64 {
	var fs []refDoc
	for _, d := range r.docs {
		if tenant == "" || d.tenant == tenant {
			fs = append(fs, d)
		}
	}
	var sumT, sumX float64
	for _, f := range fs {
		sumT += float64(f.tl)
		sumX += float64(f.xl)
	}
	n := float64(len(fs))
	avgT, avgX := sumT/n, sumX/n
	qtf, _ := r.count(query)
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
			if f == 0 {
				return 0
			}
			return f / (f + k1*(1-b+b*float64(l)/avg))
		}
		for _, f := range fs {
			ft, fx := float64(f.title[term]), float64(f.text[term])
			if ft == 0 && fx == 0 {
				continue
			}
			scores[f.id] += float64(qf) * idf * (titleW*sat(ft, f.tl, avgT) + sat(fx, f.xl, avgX))
		}
	}
	return scores
}

// The scores Retrieve returns are the documented BM25, to 1e-9, whatever the
// title weight and BM25 parameters, over every tenant and over one tenant
// (whose own documents are then the collection).
func TestBM25MatchesReference(t *testing.T) {
	docs := append(spitest.KeywordFiller(120),
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
		ref := newRefIndex(docs)
		for _, q := range queries {
			for _, tenant := range []string{"", "t0", "t1"} {
				want := ref.scores(q, tenant, p.titleW, p.k1, p.b)
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
	mustUpsert(t, b, append(spitest.KeywordFiller(50),
		spi.Document{ID: "a", Title: "notes", Text: "turbine blade cooling"},
		spi.Document{ID: "b", Title: "notes", Text: "turbine nozzle erosion"},
	)...)
	spitest.WantIDs(t, mustRetrieve(t, b, spi.KeywordRequest{Text: "cooling erosion erosion", K: 2}), "b", "a")
	spitest.WantIDs(t, mustRetrieve(t, b, spi.KeywordRequest{Text: "cooling cooling erosion", K: 2}), "a", "b")
}
