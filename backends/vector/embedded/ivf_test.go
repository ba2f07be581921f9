package embedded

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ragd/ragd/spi"
)

// A probe that visits a part of the lists (the default probe, without the
// floor of rows visited that would cover all of this small index) still
// finds nearly all of the exact top 10 on clustered data, unfiltered and
// filtered: a floor that a probe ranking the lists wrongly, visiting too
// few or skipping eligible rows falls through.
func TestIVFRecallPartialProbe(t *testing.T) {
	const n, dim = 20000, 16
	r := rand.New(rand.NewPCG(6, 6))
	centres := make([][]float32, 24)
	for i := range centres {
		centres[i] = make([]float32, dim)
		for j := range centres[i] {
			centres[i][j] = float32(r.NormFloat64())
		}
	}
	point := func() []float32 {
		c := centres[r.IntN(len(centres))]
		v := make([]float32, dim)
		for j := range v {
			v[j] = c[j] + 0.35*float32(r.NormFloat64())
		}
		return v
	}
	ix := newIndex(dim, true)
	vecs := map[string][]float32{}
	for i := range n {
		id := fmt.Sprintf("d%05d", i)
		v := point()
		ix.put(id, fmt.Sprint("t", i%3), spi.Strings(map[string]string{"c": fmt.Sprint(i % 10)}), v, 0)
		normalizeInPlace(v)
		vecs[id] = v
	}
	ix.ann.minVisit = 0
	if err := ix.buildIVF(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	best := func(q query, ids []string) []string {
		slices.SortFunc(ids, func(a, b string) int {
			if c := cmp.Compare(dot(q.vec, vecs[b]), dot(q.vec, vecs[a])); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		return ids[:min(len(ids), q.k)]
	}
	for _, c := range []struct {
		name   string
		tenant string
		filter spi.Filter
	}{
		{"unfiltered", "", spi.Filter{}},
		{"tenant", "t1", spi.Filter{}},
		{"filter 30%", "", spi.In("c", spi.String("1"), spi.String("4"), spi.String("7"))},
	} {
		hits, total, seenAll := 0, 0, 0
		for range 200 {
			q := query{vec: point(), k: 10, anyTen: c.tenant == "", tenantName: c.tenant, filter: c.filter}
			normalizeInPlace(q.vec)
			q.tenant = ix.tenantIDs[c.tenant]
			got, _, _, err := ix.candidates(context.Background(), q, 1)
			if err != nil {
				t.Fatal(err)
			}
			q.exact = true
			want, _, _, err := ix.candidates(context.Background(), q, 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range best(q, want) {
				if slices.Contains(best(q, got), id) {
					hits++
				}
			}
			total += min(q.k, len(want))
			// How much of the index the probe visited.
			eligible := n
			q.rows = nil
			if e := q.eligibleExpr(); e != nil {
				q.rows = ix.post.rows(e, n)
				eligible = popcount(q.rows)
			}
			minLists, need := ix.ann.probe(n, ix.ivf.nlist(), eligible, q.k)
			qq := newQuantQuery(q.vec)
			_, seen, err := ix.probe(context.Background(), q, &qq, newLowerBounds(q.k), minLists, need, false)
			if err != nil {
				t.Fatal(err)
			}
			seenAll += seen
		}
		recall := float64(hits) / float64(total)
		visited := float64(seenAll) / 200
		t.Logf("%s: recall@10 %.3f, %.0f eligible rows visited per search of %d", c.name, recall, visited, n)
		if recall < 0.9 {
			t.Errorf("%s: recall@10 %.3f, want >= 0.9", c.name, recall)
		}
		if visited > n/4 {
			t.Errorf("%s: the probe visited %.0f rows of %d: not a partial probe, the test proves nothing", c.name, visited, n)
		}
	}
}

// TestListOrderKeys checks listOrder's keys (listKey) against the
// comparison they replace: descending score, ties by list number, −0
// equal to +0; and ascending's order of them.
func TestListOrderKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, math.MaxFloat32, -math.MaxFloat32,
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, float32(math.Inf(1)), float32(math.Inf(-1))}
	for round := range 200 {
		n := 1 + r.IntN(300)
		scores := make([]float32, n)
		for i := range scores {
			switch r.IntN(4) {
			case 0:
				scores[i] = special[r.IntN(len(special))]
			case 1:
				scores[i] = float32(r.IntN(5) - 2) // many ties
			default:
				scores[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(20)-10)))
			}
		}
		want := make([]int32, n)
		keys := make([]uint64, n)
		for c := range n {
			want[c] = int32(c)
			keys[c] = listKey(scores[c], c)
		}
		slices.SortFunc(want, func(a, b int32) int {
			if c := cmp.Compare(scores[b], scores[a]); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		// The heap's order, drained or stopped after a few (as a probe
		// stops), against the comparison.
		stop := n
		if round%2 == 1 {
			stop = 1 + r.IntN(n)
		}
		i := 0
		for k := range ascending(keys) {
			if got := int32(uint32(k)); got != want[i] {
				t.Fatalf("round %d: position %d holds list %d (score %g), want %d (score %g)", round, i, got, scores[got], want[i], scores[want[i]])
			}
			if i++; i == stop {
				break
			}
		}
		if i != stop {
			t.Fatalf("round %d: ascending yielded %d keys, want %d", round, i, stop)
		}
	}
}

// Retraining: an index trains anew at regrow times or 1/regrow of its
// trained rows, and a store that grew trains the lists of the cycle's
// middle, so that until the next training its lists stay within regrow^¼
// of lists(n), the count a fresh build would take.
func TestRetrainCycle(t *testing.T) {
	p := defaultANN
	v := &ivf{trained: 600_000}
	for _, c := range []struct {
		n    int
		want bool
	}{{600_000, false}, {899_999, false}, {900_000, true}, {400_001, false}, {400_000, true}} {
		if got := p.retrain(v, c.n); got != c.want {
			t.Errorf("retrain(trained 600,000, n %d) = %v, want %v", c.n, got, c.want)
		}
	}
	if got, want := p.buildLists(nil, 600_000), p.lists(600_000); got != want {
		t.Errorf("a first build over 600,000 rows trains %d lists, want lists(n) %d", got, want)
	}
	if got, want := p.buildLists(&ivf{trained: 900_000}, 600_000), p.lists(600_000); got != want {
		t.Errorf("a build after a shrink trains %d lists, want lists(n) %d", got, want)
	}
	// From a build at n (grown from n/regrow) to the next at regrow·n.
	n := 600_000
	nlist := p.buildLists(&ivf{trained: int(float64(n) / p.regrow)}, n)
	worst := 1.0
	for m := n; float64(m) < p.regrow*float64(n); m += 10_000 {
		r := float64(nlist) / float64(p.lists(m))
		worst = max(worst, r, 1/r)
	}
	if limit := math.Pow(p.regrow, 0.25) * 1.001; worst > limit {
		t.Errorf("over a growth cycle the lists were up to %.3f× off lists(n), want at most regrow^¼ = %.3f", worst, limit)
	}
	if plain := math.Sqrt(p.regrow); worst >= plain/1.05 {
		t.Errorf("the middle's count is %.3f× off at worst, no better than lists(n)'s %.3f", worst, plain)
	}
}
