package keyword

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// nearCopies fills an index with n near-copies of sources random
// documents, in arrival order source 0, 1, ..., sources-1, 0, 1, ...:
// each copy swaps a fifth of its source's words for words drawn by
// frequency, as the scale benchmark's corpus does (synth_corpus.py).
// Ids are "SOURCE-copyN".
func nearCopies(t *testing.T, seed uint64, sources, n int) *impactIndex {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	zipf := rand.NewZipf(rng, 1.1, 2, 20000)
	word := func() string { return fmt.Sprintf("v%d", zipf.Uint64()) }
	src := make([][]string, sources)
	for i := range src {
		for range 30 + rng.IntN(40) {
			src[i] = append(src[i], word())
		}
	}
	x := newImpactIndex()
	for i := range n {
		s := i % sources
		f := map[string]int{}
		for _, w := range src[s] {
			if rng.Float64() < 0.2 {
				w = word()
			}
			f[w]++
		}
		x.putLocked(fmt.Sprintf("s%d-copy%d", s, i), "acme", nil, docLens{0, len(src[s])}, nil, fieldFreqs{text: f}, nil)
	}
	return x
}

// copyLayout says where an order put the copies of each source (ids
// "SOURCE-copyN", as nearCopies and synth_corpus.py make them): the runs
// of consecutive live slots they lie in and the ranges of 16,384 slots
// they touch, per source on average, and how many sources there are.
func (x *impactIndex) copyLayout() (runs, ranges float64, sources int) {
	nruns := map[string]int{}
	touched := map[string]map[int]bool{}
	prev := ""
	for s := range x.slots() {
		if !x.isAlive(uint32(s)) {
			continue
		}
		src, _, _ := strings.Cut(string(x.ids.Bytes(s)), "-copy")
		if src != prev {
			nruns[src]++
			prev = src
		}
		if touched[src] == nil {
			touched[src] = map[int]bool{}
		}
		touched[src][s/16384] = true
	}
	if len(nruns) == 0 {
		return 0, 0, 0
	}
	for src, r := range nruns {
		runs += float64(r)
		ranges += float64(len(touched[src]))
	}
	return runs / float64(len(nruns)), ranges / float64(len(nruns)), len(nruns)
}

// TestClusterOrderGroupsNearCopies: a rebuild puts the near-copies of a
// document side by side although a fifth of each copy's words are
// noise, with every document in the bisected sample and with a sample
// of a tenth of them (the path of a large collection). The order before
// the bisection (each slot keyed by its rarest terms alone) leaves them
// scattered, which this test's last part shows, so that it can fail.
func TestClusterOrderGroupsNearCopies(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sample   int
		noBisect bool
		atMost   float64
		atLeast  float64
	}{
		{name: "whole", sample: 1 << 20, atMost: 4},
		{name: "sampled", sample: 400, atMost: 4},
		{name: "without bisection", noBisect: true, atLeast: 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := nearCopies(t, 7, 50, 4000)
			x.bisectMax, x.noBisect = tc.sample, tc.noBisect
			before, _, _ := x.copyLayout()
			x.rebuildNow()
			got, _, _ := x.copyLayout()
			t.Logf("copies of a source lie in %.1f runs (%.1f in arrival order)", got, before)
			if x.live != 4000 || x.slots() != 4000 {
				t.Fatalf("rebuild kept %d live of %d slots, want 4000", x.live, x.slots())
			}
			if tc.atMost > 0 && got > tc.atMost {
				t.Errorf("copies of a source lie in %.1f runs, want at most %.1f", got, tc.atMost)
			}
			if tc.atLeast > 0 && got < tc.atLeast {
				t.Errorf("without the bisection, copies lie in %.1f runs, want at least %.1f: the corpus no longer tells the orders apart", got, tc.atLeast)
			}
		})
	}
}
