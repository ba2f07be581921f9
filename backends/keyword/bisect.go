package keyword

import (
	"cmp"
	"context"
	"math"
	"slices"
)

// Recursive graph bisection over a sample of the documents, for the
// clustered order (clusterOrder).
//
// Recursive graph bisection (Dhulipala et al., KDD 2016; Lucene's
// BPIndexReorderer, PISA's recursive_graph_bisection) orders documents
// so that those sharing terms sit together: it splits the documents in
// two, swaps documents between the halves while a swap lowers the
// estimated cost of the terms' gaps, and recurses into each half. Over
// every document its passes would cost minutes of CPU at 1,000,000
// documents, and a rebuild runs each time a collection grows by a
// quarter. So it runs over a sample (sampleSize: an eighth of the
// documents, at most about bisectSample), each with its rarest
// distinctive terms only (keepTerms, which clusterOrder collects), and
// every document then takes the place of the sample document it shares
// the most with: first the leaf of the bisection (bisectLeaf sample
// documents in a row) whose documents share the most of its terms, each
// shared term weighing its idf, then the document of that leaf sharing
// the most. Near-copies of one document find copies of it in the sample,
// which the bisection put side by side, so they end up side by side too.
//
// A rebuild bisects only in the settle (once writes pause, or settleWithin
// after it became due) and at open; one started by growth or dead slots
// keeps the cheaper key (startRebuild).

const (
	keepTerms    = 12      // rarest distinctive terms kept per slot
	bisectSample = 1 << 15 // documents bisected, about, at most
	bisectShare  = 8       // and at most about one in bisectShare
	bisectLeaf   = 4       // a part this small is not split further
	bisectIters  = 8       // swap rounds per split at most
	nearLeaves   = 1024    // terms in more leaves do not vote for a slot's place
)

// sampleSize is how many documents of live the bisection samples.
func sampleSize(live int) int {
	return min(bisectSample, max(live/bisectShare, 1024))
}

// slotTerms are each slot's rarest distinctive terms, at most keep of
// them, as ranks (fewest documents first): terms[s*keep:][:n[s]].
type slotTerms struct {
	keep  int
	terms []uint32
	n     []uint8
}

func newSlotTerms(slots, keep int) *slotTerms {
	return &slotTerms{keep: keep, terms: make([]uint32, slots*keep), n: make([]uint8, slots)}
}

// add appends rank r to slot s's terms unless it holds keep already.
func (f *slotTerms) add(s, r uint32) {
	if k := int(f.n[s]); k < f.keep {
		f.terms[int(s)*f.keep+k] = r
		f.n[s]++
	}
}

func (f *slotTerms) of(s uint32) []uint32 {
	return f.terms[int(s)*f.keep : int(s)*f.keep+int(f.n[s])]
}

// bisectKeys returns for every slot of live its place in the bisection
// order of a sample of about size of them: the place of the sample
// document it shares the most rare terms with in the leaf (bisectLeaf
// sample documents in a row) it shares the most with, each shared term
// weighing its idf (idf gives a rank's); none for a slot without
// distinctive terms. The bisection starts from the sample sorted by cmp.
func bisectKeys(ctx context.Context, f *slotTerms, live []uint32, size, nranks int, cmp func(a, b uint32) int, idf func(uint32) float64) ([]uint32, error) {
	const none = math.MaxUint32
	// The sample: about size of the slots holding distinctive terms,
	// drawn by a hash of the slot (every n-th slot of an arrival order
	// that cycles through sources would draw a few sources only).
	with := 0
	for _, s := range live {
		if f.n[s] > 0 {
			with++
		}
	}
	var sample []uint32
	for _, s := range live {
		if f.n[s] > 0 && (with <= size || mix64(uint64(s))%uint64(with) < uint64(size)) {
			sample = append(sample, s)
		}
	}
	slices.SortFunc(sample, cmp)
	// The sample's terms renumbered densely, and its documents' term
	// lists in one array (off).
	dense := make([]int32, nranks)
	for i := range dense {
		dense[i] = -1
	}
	var rankOf []uint32
	off := make([]int32, 1, len(sample)+1)
	var tids []int32
	for _, s := range sample {
		for _, r := range f.of(s) {
			if dense[r] < 0 {
				dense[r] = int32(len(rankOf))
				rankOf = append(rankOf, r)
			}
			tids = append(tids, dense[r])
		}
		off = append(off, int32(len(tids)))
	}
	b := &bisector{
		off: off, tids: tids,
		deg: make([][2]int32, len(rankOf)), gain: make([][2]float64, len(rankOf)),
		stamp: make([]uint32, len(rankOf)), docGain: make([]float64, len(sample)),
	}
	ids := make([]int32, len(sample))
	for i := range ids {
		ids[i] = int32(i)
	}
	if err := b.split(ctx, ids); err != nil {
		return nil, err
	}
	// ids is the sample in bisection order. lists: for each dense term,
	// the leaves (bisectLeaf sample documents in a row of that order)
	// holding it, with how many of their documents do, by leaf.
	type leafCount struct{ leaf, n int32 }
	lists := make([][]leafCount, len(rankOf))
	for p, i := range ids {
		leaf := int32(p / bisectLeaf)
		for _, t := range tids[off[i]:off[i+1]] {
			l := lists[t]
			if k := len(l) - 1; k >= 0 && l[k].leaf == leaf {
				l[k].n++
			} else {
				lists[t] = append(l, leafCount{leaf, 1})
			}
		}
	}
	// Each live slot's nearest leaf.
	wt := make([]float64, len(rankOf)) // a dense term's idf
	for t, r := range rankOf {
		wt[t] = idf(r)
	}
	keys := make([]uint32, len(f.n))
	acc := make([]float64, (len(sample)+bisectLeaf-1)/bisectLeaf)
	var touched []int32
	for n, s := range live {
		if n%4096 == 4095 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		for _, r := range f.of(s) {
			t := dense[r]
			if t < 0 || len(lists[t]) > nearLeaves {
				continue
			}
			w := wt[t]
			for _, lc := range lists[t] {
				if acc[lc.leaf] == 0 {
					touched = append(touched, lc.leaf)
				}
				acc[lc.leaf] += w * float64(lc.n)
			}
		}
		leaf, most := int32(-1), 0.0
		for _, l := range touched {
			if a := acc[l]; a > most || a == most && l < leaf {
				leaf, most = l, a
			}
			acc[l] = 0
		}
		touched = touched[:0]
		if leaf < 0 {
			keys[s] = none
			continue
		}
		// Within the leaf, the sample document sharing the most.
		lo := int(leaf) * bisectLeaf
		best, most := lo, -1.0
		for p := lo; p < min(lo+bisectLeaf, len(ids)); p++ {
			if w := shared(f.of(s), f.of(sample[ids[p]]), dense, wt); w > most {
				best, most = p, w
			}
		}
		keys[s] = uint32(best)
	}
	return keys, nil
}

// shared is the weight of the terms a and b (ranks, ascending) share, b
// a sample document's: wt of each one's dense id.
func shared(a, b []uint32, dense []int32, wt []float64) float64 {
	w := 0.0
	for len(a) > 0 && len(b) > 0 {
		switch {
		case a[0] < b[0]:
			a = a[1:]
		case a[0] > b[0]:
			b = b[1:]
		default:
			w += wt[dense[a[0]]]
			a, b = a[1:], b[1:]
		}
	}
	return w
}

// bisector holds the sample's term lists and the scratch of its splits.
type bisector struct {
	off     []int32      // document i's terms are tids[off[i]:off[i+1]]
	tids    []int32      // dense term ids
	deg     [][2]int32   // a term's documents in each half of the current split
	gain    [][2]float64 // what moving a document out of half 0 (1) gains per term
	stamp   []uint32     // the round gain was computed for
	round   uint32
	docGain []float64
}

func (b *bisector) terms(i int32) []int32 { return b.tids[b.off[i]:b.off[i+1]] }

// split orders ids (sample documents) by recursive bisection, in place.
func (b *bisector) split(ctx context.Context, ids []int32) error {
	if len(ids) <= bisectLeaf {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	half := [2][]int32{ids[:len(ids)/2], ids[len(ids)/2:]}
	size := [2]float64{float64(len(half[0])), float64(len(half[1]))}
	for range bisectIters {
		for h := range half {
			for _, i := range half[h] {
				for _, t := range b.terms(i) {
					b.deg[t][h]++
				}
			}
		}
		b.round++
		for h := range half {
			for _, i := range half[h] {
				g := 0.0
				for _, t := range b.terms(i) {
					if b.stamp[t] != b.round {
						b.stamp[t] = b.round
						b.gain[t] = moveGains(b.deg[t], size)
					}
					g += b.gain[t][h]
				}
				b.docGain[i] = g
			}
			slices.SortFunc(half[h], func(x, y int32) int {
				if c := cmp.Compare(b.docGain[y], b.docGain[x]); c != 0 {
					return c
				}
				return cmp.Compare(x, y)
			})
		}
		swaps := 0
		for i := range min(len(half[0]), len(half[1])) {
			if b.docGain[half[0][i]]+b.docGain[half[1][i]] <= 0 {
				break
			}
			half[0][i], half[1][i] = half[1][i], half[0][i]
			swaps++
		}
		for _, i := range ids {
			for _, t := range b.terms(i) {
				b.deg[t] = [2]int32{}
			}
		}
		if swaps == 0 {
			break
		}
	}
	if err := b.split(ctx, half[0]); err != nil {
		return err
	}
	return b.split(ctx, half[1])
}

// moveGains returns, for a term with deg documents in halves of the
// given sizes, how much moving one of its documents out of half 0, and
// out of half 1, lowers the log-gap cost estimate of the term's postings:
// d·log2(n/(d+1)) per half (Dhulipala et al.).
func moveGains(deg [2]int32, size [2]float64) [2]float64 {
	cost := func(d0, d1 int32) float64 {
		return float64(d0)*math.Log2(size[0]/float64(d0+1)) + float64(d1)*math.Log2(size[1]/float64(d1+1))
	}
	now := cost(deg[0], deg[1])
	var g [2]float64
	if deg[0] > 0 {
		g[0] = now - cost(deg[0]-1, deg[1]+1)
	}
	if deg[1] > 0 {
		g[1] = now - cost(deg[0]+1, deg[1]-1)
	}
	return g
}
