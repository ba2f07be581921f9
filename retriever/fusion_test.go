package retriever_test

import (
	"math"
	"slices"
	"testing"

	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

const eps = 1e-12

func scored(pairs ...any) []spi.Ref {
	out := make([]spi.Ref, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, spi.Ref{ID: pairs[i].(string), Score: pairs[i+1].(float64)})
	}
	return out
}

func fusedIDs(fs []retriever.Fused) []string {
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.ID
	}
	return ids
}

func fusedScore(t *testing.T, fs []retriever.Fused, id string) float64 {
	t.Helper()
	for _, f := range fs {
		if f.ID == id {
			return f.Score
		}
	}
	t.Fatalf("id %q not in fused result %v", id, fusedIDs(fs))
	return 0
}

func near(a, b float64) bool { return math.Abs(a-b) < eps }

func TestFuseRRFHandComputed(t *testing.T) {
	A := retriever.RankedList{Source: "A", Weight: 1, Refs: scored("a", 9.0, "b", 8.0, "c", 7.0)}
	B := retriever.RankedList{Source: "B", Weight: 1, Refs: scored("c", 0.9, "a", 0.8, "d", 0.7)}
	got := retriever.FuseRRF([]retriever.RankedList{A, B}, 60)
	want := map[string]float64{
		"a": 1.0/61 + 1.0/62,
		"b": 1.0 / 62,
		"c": 1.0/63 + 1.0/61,
		"d": 1.0 / 63,
	}
	if ids := fusedIDs(got); !slices.Equal(ids, []string{"a", "c", "b", "d"}) {
		t.Fatalf("order = %v, want [a c b d]", ids)
	}
	for id, w := range want {
		if s := fusedScore(t, got, id); !near(s, w) {
			t.Errorf("score(%s) = %.15f, want %.15f", id, s, w)
		}
	}
	// Parts: one entry per list, in list order; absent → Rank 0.
	var a, d retriever.Fused
	for _, f := range got {
		switch f.ID {
		case "a":
			a = f
		case "d":
			d = f
		}
	}
	if len(a.Parts) != 2 || a.Parts[0].Rank != 1 || a.Parts[1].Rank != 2 || a.Parts[1].RawScore != 0.8 || !near(a.Parts[1].Contribution, 1.0/62) {
		t.Errorf("a.Parts = %+v", a.Parts)
	}
	if d.Parts[0].Rank != 0 || d.Parts[0].Contribution != 0 || d.Parts[1].Rank != 3 {
		t.Errorf("d.Parts = %+v", d.Parts)
	}
}

func TestFuseRRFWeightsChangeOrder(t *testing.T) {
	A := retriever.RankedList{Source: "A", Weight: 1, Refs: scored("a", 9.0, "b", 8.0, "c", 7.0)}
	B := retriever.RankedList{Source: "B", Weight: 2, Refs: scored("c", 0.9, "a", 0.8, "d", 0.7)}
	got := retriever.FuseRRF([]retriever.RankedList{A, B}, 60)
	// a = 1/61 + 2/62 = 0.048651; c = 1/63 + 2/61 = 0.048660: c overtakes a.
	if ids := fusedIDs(got); !slices.Equal(ids, []string{"c", "a", "d", "b"}) {
		t.Fatalf("order = %v, want [c a d b]", ids)
	}
	if s := fusedScore(t, got, "d"); !near(s, 2.0/63) {
		t.Errorf("score(d) = %v, want 2/63", s)
	}
	if s := fusedScore(t, got, "c"); !near(s, 1.0/63+2.0/61) {
		t.Errorf("score(c) = %v", s)
	}
}

func TestFuseRRFConstant(t *testing.T) {
	A := retriever.RankedList{Source: "A", Weight: 1, Refs: scored("a", 1.0, "b", 0.5)}
	got := retriever.FuseRRF([]retriever.RankedList{A}, 1)
	if s := fusedScore(t, got, "a"); !near(s, 1.0/2) {
		t.Errorf("k=1: score(a) = %v, want 1/2", s)
	}
	if s := fusedScore(t, got, "b"); !near(s, 1.0/3) {
		t.Errorf("k=1: score(b) = %v, want 1/3", s)
	}
	def := retriever.FuseRRF([]retriever.RankedList{A}, 0)
	if s := fusedScore(t, def, "a"); !near(s, 1.0/61) {
		t.Errorf("k=0 must mean the default 60: score(a) = %v, want 1/61", s)
	}
}

func TestFuseTiesByID(t *testing.T) {
	// Symmetric lists give exactly equal scores; ties go by id ascending,
	// whatever the input order.
	A := retriever.RankedList{Source: "A", Weight: 1, Refs: scored("y", 1.0, "x", 0.5)}
	B := retriever.RankedList{Source: "B", Weight: 1, Refs: scored("x", 1.0, "y", 0.5)}
	for _, lists := range [][]retriever.RankedList{{A, B}, {B, A}} {
		for name, fs := range map[string][]retriever.Fused{
			"rrf":   retriever.FuseRRF(lists, 60),
			"score": retriever.FuseScore(lists),
			"dbsf":  retriever.FuseDBSF(lists),
		} {
			if ids := fusedIDs(fs); !slices.Equal(ids, []string{"x", "y"}) {
				t.Errorf("%s: order = %v, want [x y]", name, ids)
			}
			if fs[0].Score != fs[1].Score {
				t.Errorf("%s: scores %v and %v should tie", name, fs[0].Score, fs[1].Score)
			}
		}
	}
	// A lone list with equal scores keeps rank order in RRF (ranks differ).
	C := retriever.RankedList{Source: "C", Weight: 1, Refs: scored("z", 0.5, "a", 0.5)}
	if ids := fusedIDs(retriever.FuseRRF([]retriever.RankedList{C}, 60)); !slices.Equal(ids, []string{"z", "a"}) {
		t.Errorf("RRF must follow ranks, not ids, when scores differ: %v", ids)
	}
}

func TestFuseDuplicates(t *testing.T) {
	A := retriever.RankedList{Source: "A", Weight: 1, Refs: scored("a", 3.0, "a", 2.0, "b", 1.0)}
	got := retriever.FuseRRF([]retriever.RankedList{A}, 60)
	if len(got) != 2 {
		t.Fatalf("got %d fused docs, want 2 (duplicate merged): %v", len(got), fusedIDs(got))
	}
	if s := fusedScore(t, got, "a"); !near(s, 1.0/61) {
		t.Errorf("repeated id must keep only its first rank: score(a) = %v, want 1/61", s)
	}
	if s := fusedScore(t, got, "b"); !near(s, 1.0/63) {
		t.Errorf("score(b) = %v, want 1/63 (rank is the position in the list)", s)
	}
}

func TestFuseEmpty(t *testing.T) {
	if got := retriever.FuseRRF(nil, 60); len(got) != 0 {
		t.Errorf("FuseRRF(nil) = %v", got)
	}
	if got := retriever.FuseScore([]retriever.RankedList{{Source: "A", Weight: 1}}); len(got) != 0 {
		t.Errorf("FuseScore(empty list) = %v", got)
	}
}

func TestFuseScoreHandComputed(t *testing.T) {
	A := retriever.RankedList{Source: "A", Weight: 1, Refs: scored("a", 10.0, "b", 5.0, "c", 0.0)}
	B := retriever.RankedList{Source: "B", Weight: 2, Refs: scored("c", 0.9, "a", 0.3)}
	got := retriever.FuseScore([]retriever.RankedList{A, B})
	// A: a=1, b=0.5, c=0. B: c=1, a=0 (weighted ×2).
	want := map[string]float64{"a": 1, "b": 0.5, "c": 2}
	for id, w := range want {
		if s := fusedScore(t, got, id); !near(s, w) {
			t.Errorf("score(%s) = %v, want %v", id, s, w)
		}
	}
	if ids := fusedIDs(got); !slices.Equal(ids, []string{"c", "a", "b"}) {
		t.Errorf("order = %v, want [c a b]", ids)
	}
	var c retriever.Fused
	for _, f := range got {
		if f.ID == "c" {
			c = f
		}
	}
	if c.Parts[0].Rank != 3 || c.Parts[0].RawScore != 0 || c.Parts[0].Contribution != 0 ||
		c.Parts[1].Rank != 1 || c.Parts[1].RawScore != 0.9 || !near(c.Parts[1].Contribution, 2) {
		t.Errorf("c.Parts = %+v", c.Parts)
	}
}

func TestFuseScoreDegenerateLists(t *testing.T) {
	single := retriever.RankedList{Source: "S", Weight: 0.5, Refs: scored("a", 42.0)}
	equal := retriever.RankedList{Source: "E", Weight: 1, Refs: scored("b", 3.0, "c", 3.0)}
	got := retriever.FuseScore([]retriever.RankedList{single, equal})
	if s := fusedScore(t, got, "a"); !near(s, 0.5) {
		t.Errorf("single-result list must normalise to 1.0 (×0.5): %v", s)
	}
	for _, id := range []string{"b", "c"} {
		if s := fusedScore(t, got, id); !near(s, 1) {
			t.Errorf("all-equal list must normalise to 1.0: score(%s) = %v", id, s)
		}
	}
}

func TestFuseDBSFHandComputed(t *testing.T) {
	// Scores 1, 2, 3: mean 2, sample σ 1, bounds [-1, 5]:
	// 1 → 2/6, 2 → 3/6, 3 → 4/6.
	A := retriever.RankedList{Source: "A", Weight: 1, Refs: scored("c", 3.0, "b", 2.0, "a", 1.0)}
	// Scores 4, 4: σ 0 → 0.5 each; weight 2 → 1.0.
	B := retriever.RankedList{Source: "B", Weight: 2, Refs: scored("a", 4.0, "d", 4.0)}
	got := retriever.FuseDBSF([]retriever.RankedList{A, B})
	want := map[string]float64{"a": 2.0/6 + 1, "b": 3.0 / 6, "c": 4.0 / 6, "d": 1}
	for id, w := range want {
		if s := fusedScore(t, got, id); !near(s, w) {
			t.Errorf("score(%s) = %v, want %v", id, s, w)
		}
	}
	if ids := fusedIDs(got); !slices.Equal(ids, []string{"a", "d", "c", "b"}) {
		t.Errorf("order = %v, want [a d c b]", ids)
	}
	one := retriever.FuseDBSF([]retriever.RankedList{{Source: "S", Weight: 1, Refs: scored("x", 7.0)}})
	if s := fusedScore(t, one, "x"); !near(s, 0.5) {
		t.Errorf("single-result list must normalise to 0.5: %v", s)
	}
}

func TestFuseDBSFClips(t *testing.T) {
	// Ten zeros and one 100: mean 100/11, sample σ = sqrt(909.09...),
	// μ + 3σ ≈ 99.5 < 100, so 100 clips to 1.
	ids := []string{"o", "z0", "z1", "z2", "z3", "z4", "z5", "z6", "z7", "z8", "z9"}
	rs := []spi.Ref{{ID: "o", Score: 100}}
	for _, id := range ids[1:] {
		rs = append(rs, spi.Ref{ID: id, Score: 0})
	}
	got := retriever.FuseDBSF([]retriever.RankedList{{Source: "A", Weight: 1, Refs: rs}})
	if s := fusedScore(t, got, "o"); s != 1 {
		t.Errorf("outlier must clip to 1, got %v", s)
	}
	mean := 100.0 / 11
	sd := math.Sqrt((10*mean*mean + (100-mean)*(100-mean)) / 10)
	wantZero := (0 - (mean - 3*sd)) / (6 * sd)
	if s := fusedScore(t, got, "z0"); !near(s, wantZero) {
		t.Errorf("score(z0) = %v, want %v", s, wantZero)
	}
}

func TestFuseDispatch(t *testing.T) {
	lists := []retriever.RankedList{{Source: "A", Weight: 1, Refs: scored("a", 10.0, "b", 0.0)}}
	if s := fusedScore(t, retriever.Fuse(retriever.FusionScore, lists, 0), "b"); s != 0 {
		t.Errorf("score mode: b = %v, want 0", s)
	}
	if s := fusedScore(t, retriever.Fuse(retriever.FusionRRF, lists, 10), "b"); !near(s, 1.0/12) {
		t.Errorf("rrf mode k=10: b = %v, want 1/12", s)
	}
	if s := fusedScore(t, retriever.Fuse(retriever.FusionDBSF, lists, 0), "a"); s <= 0.5 || s >= 1 {
		t.Errorf("dbsf mode: a = %v, want in (0.5, 1)", s)
	}
}

// Issue 18 item 13: extreme finite scores (a backend's or a caller's)
// never make a fused score NaN or infinite, and one list's order survives
// normalisation: the best raw score ranks first.
func TestFuseFiniteAtExtremes(t *testing.T) {
	lists := [][]spi.Ref{
		scored("a", 1e300, "b", 0.0, "c", -1e300),
		scored("a", math.MaxFloat64, "b", 1.0, "c", -math.MaxFloat64),
		scored("a", 1.7e308, "c", -1.7e308),
		scored("a", 5e-324, "c", 0.0),
	}
	for _, refs := range lists {
		for _, mode := range []string{retriever.FusionScore, retriever.FusionDBSF} {
			got := retriever.Fuse(mode, []retriever.RankedList{{Source: "A", Weight: retriever.MaxWeight, Refs: refs}, {Source: "B", Weight: 1, Refs: scored("c", 3.0)}}, 0)
			for _, f := range got {
				if math.IsNaN(f.Score) || math.IsInf(f.Score, 0) {
					t.Fatalf("%s over %v: %s scored %v", mode, refs, f.ID, f.Score)
				}
			}
			single := retriever.Fuse(mode, []retriever.RankedList{{Source: "A", Weight: 1, Refs: refs}}, 0)
			if ids := fusedIDs(single); ids[0] != "a" || ids[len(ids)-1] != "c" {
				t.Fatalf("%s over %v alone: order %v, want a first and c last", mode, refs, ids)
			}
		}
	}
}
