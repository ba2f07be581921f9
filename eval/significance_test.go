package eval_test

import (
	"math"
	"strings"
	"testing"

	"github.com/ragd/ragd/eval"
)

func TestPairedRandomization(t *testing.T) {
	ones := func(n int, v float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	tests := []struct {
		name         string
		a, b         []float64
		diff, lo, hi float64
	}{
		// No difference at all: every sign assignment ties, p = 1.
		{"identical", []float64{0.1, 0.5, 0.9}, []float64{0.1, 0.5, 0.9}, 0, 1, 1},
		// Three equal gains: only "all +" and "all −" are as extreme, 2/8.
		{"three equal gains", ones(3, 0.6), ones(3, 0.5), 0.1, 0.23, 0.27},
		// Twenty equal gains: 2/2^20, so p is the floor 1/(samples+1).
		{"twenty equal gains", ones(20, 0.5), ones(20, 0.4), 0.1, 0, 0.0002},
		// A gain on one query and an equal loss on another: mean 0, p = 1.
		{"gain and loss cancel", []float64{0.5, 0.3}, []float64{0.3, 0.5}, 0, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, p, err := eval.PairedRandomization(tt.a, tt.b, eval.RandomizationSamples, eval.RandomizationSeed)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(d-tt.diff) > 1e-12 || p < tt.lo || p > tt.hi {
				t.Fatalf("diff %v p %v, want diff %v and p in [%v, %v]", d, p, tt.diff, tt.lo, tt.hi)
			}
		})
	}
	if _, _, err := eval.PairedRandomization([]float64{1}, []float64{1, 2}, 10, 1); err == nil {
		t.Fatal("unequal lengths accepted")
	}
}

func TestReportComparisons(t *testing.T) {
	r := &eval.Report{Modes: []eval.ModeReport{
		{Mode: "keyword", Single: "keyword", NDCG10: 0.5, PerQueryNDCG10: []float64{0.5, 0.5, 0.5, 0.5}},
		{Mode: "vector", Single: "vector", NDCG10: 0.25, PerQueryNDCG10: []float64{0, 0.5, 0, 0.5}},
		{Mode: "hybrid", NDCG10: 0.6, PerQueryNDCG10: []float64{0.6, 0.5, 0.8, 0.5}},
	}}
	if b := r.BestSingle(); b == nil || b.Mode != "keyword" {
		t.Fatalf("best single = %+v", b)
	}
	// Hybrid against each single source, the best one first.
	cs, err := r.Comparisons()
	if err != nil || len(cs) != 2 {
		t.Fatalf("comparisons %+v, %v; want hybrid vs keyword and hybrid vs vector", cs, err)
	}
	c := cs[0]
	if c.A != "hybrid" || c.B != "keyword" || c.Better != 2 || c.Tied != 2 || c.Worse != 0 || math.Abs(c.MeanDiff-0.1) > 1e-12 {
		t.Fatalf("comparison %+v", c)
	}
	c = cs[1]
	if c.A != "hybrid" || c.B != "vector" || c.Better != 2 || c.Tied != 2 || c.Worse != 0 || math.Abs(c.MeanDiff-0.35) > 1e-12 {
		t.Fatalf("comparison %+v", c)
	}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"hybrid vs keyword (best single source): ΔnDCG@10 = +0.1000, p = ", "hybrid vs vector: ΔnDCG@10 = +0.3500, p = "} {
		if !strings.Contains(b.String(), line) {
			t.Fatalf("table lacks %q:\n%s", line, b.String())
		}
	}
}

func TestSplit(t *testing.T) {
	ds := &eval.Dataset{Name: "d"}
	for _, id := range strings.Fields("1 2 3 4 5 6 7 8 9 10 q-a q-b") {
		ds.Queries = append(ds.Queries, eval.Query{ID: id})
	}
	tune, test := ds.Split(eval.TuneHalf), ds.Split(eval.TestHalf)
	if len(tune.Queries)+len(test.Queries) != len(ds.Queries) || len(tune.Queries) == 0 || len(test.Queries) == 0 {
		t.Fatalf("halves of %d and %d queries", len(tune.Queries), len(test.Queries))
	}
	for _, q := range tune.Queries {
		if eval.QueryHalf(q.ID) != eval.TuneHalf {
			t.Fatalf("query %s in the wrong half", q.ID)
		}
	}
	// The rule is fixed: "1" hashes even, "2" odd.
	if eval.QueryHalf("1") != eval.TuneHalf || eval.QueryHalf("2") != eval.TestHalf {
		t.Fatalf("halves of 1 and 2: %s, %s", eval.QueryHalf("1"), eval.QueryHalf("2"))
	}
	if ds.Split(eval.AllQueries) != ds {
		t.Fatal("AllQueries copies the dataset")
	}
	for in, want := range map[string]eval.Half{"all": eval.AllQueries, "": eval.AllQueries, "Tune": eval.TuneHalf, "test": eval.TestHalf} {
		if h, err := eval.ParseHalf(in); err != nil || h != want {
			t.Fatalf("ParseHalf(%q) = %q, %v", in, h, err)
		}
	}
	if _, err := eval.ParseHalf("odd"); err == nil {
		t.Fatal("ParseHalf accepted odd")
	}
}

func TestParseModeSettings(t *testing.T) {
	ms, err := eval.ParseModes("keyword, hybrid(fusion=dbsf keyword=1 vector=0.5 graph=0 expand=0),hybrid")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || ms[0].Single != "keyword" || ms[2].Name != "hybrid" || ms[2].Sources != nil {
		t.Fatalf("modes %+v", ms)
	}
	h := ms[1]
	if h.Name != "hybrid(fusion=dbsf keyword=1 vector=0.5 graph=0 expand=0)" || h.Single != "" || h.Fusion.Mode != "dbsf" {
		t.Fatalf("mode %+v", h)
	}
	if s := h.Sources["vector"]; s.Enabled == nil || !*s.Enabled || s.Weight != 0.5 {
		t.Fatalf("vector %+v", s)
	}
	if s := h.Sources["graph"]; s.Enabled == nil || *s.Enabled {
		t.Fatalf("graph %+v", s)
	}
	if h.Expand.Enabled == nil || *h.Expand.Enabled {
		t.Fatalf("expand %+v", h.Expand)
	}
	for _, bad := range []string{"hybrid(fusion=max)", "hybrid(vector=-1)", "hybrid(colour=1)", "hybrid(vector)", "keyword(fusion=rrf)", "hybrid(fusion=rrf", "bm25"} {
		if _, err := eval.ParseModes(bad); err == nil {
			t.Errorf("ParseModes(%q) accepted", bad)
		}
	}
}
