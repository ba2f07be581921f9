package keyword

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/ragd/ragd/internal/topk"
	"github.com/ragd/ragd/spi"
)

// Plain-text search with block-max MaxScore (Turtle & Flood's MaxScore
// over block-max bounds, as Lucene's MaxScoreBulkScorer, PISA's
// block_max_maxscore and Mallia et al., SIGIR 2019, do it; Ding & Suel,
// SIGIR 2011, for the block-max idea).
//
// Each range of slots (searchRanges, below) is visited in windows of at
// most 4,096 slots. A window starts where the last one ended and ends
// where the first of the query terms' current blocks ends, or after
// minWindow slots if that is later (as Lucene's MaxScoreBulkScorer
// scores at least an inner window of docs), so within it each term has
// one block or a few, and one bound: the greatest of its blocks' w ·
// bound.score, times a slack of 1 + 1e-9 that covers floating-point
// rounding. Once k documents are
// held, θ is the k-th best score. Terms whose bounds sum to less than θ
// are non-essential: a document holding only those cannot enter, so only
// the essential terms' postings supply candidates, and a window where all
// terms are non-essential is skipped without decoding a block. The window
// then stretches to the first essential block's end when the
// non-essential bounds over the longer range (several of their blocks)
// still sum below θ. Candidates are scored on their essential terms; the
// non-essential ones are looked up, largest bound first, and a candidate
// is dropped once its parts so far plus the bounds left fall below θ.
//
// Exactness: a document is passed over only when a true upper bound of
// its score is below θ, strictly, so a document tying the k-th score (and
// winning on id) is never lost; a document kept is scored in full, its
// terms' parts summed in query order, as the exhaustive scorer (the
// tests' oracle) sums them: the same bits.
//
// Candidates are the live slots, or the allowed set of a tenant and
// metadata filter (the tenant's slots and the filter's pairs, bitmaps
// made dense for the query): a posting outside it is passed over before
// it is scored. Bounds and θ do not depend on the filter, so it cannot
// make pruning wrong; a selective filter still costs the decoding of the
// postings it passes over.

// slack widens every bound against the rounding of the scores it bounds.
const slack = 1 + 1e-9

// scorer holds the BM25 constants of a query: per field,
// f + k1·(1 − b + b·len/avg) = f + a + c·len, and the field weight.
type scorer struct{ aT, cT, wT, aX, cX, wX float64 }

// score is a posting's score before idf and qtf: small enough to inline
// where a search scores postings (a slot's two lengths come in one load:
// docLen).
func (s *scorer) score(tfT, tfX, lt, lx uint32) float64 {
	return saturate(tfT, s.wT, s.aT, s.cT, lt) + saturate(tfX, s.wX, s.aX, s.cX, lx)
}

// score is what no posting the bound dominates can exceed, before idf
// and qtf.
func (b *bound) score(s *scorer) float64 {
	v := 0.0
	if b.tT > 0 {
		v = saturate(uint32(b.tT), s.wT, s.aT, s.cT, uint32(b.lT))
	}
	m := 0.0
	for _, q := range b.x {
		if q.tf > 0 {
			m = max(m, saturate(uint32(q.tf), s.wX, s.aX, s.cX, uint32(q.len)))
		}
	}
	return v + m
}

// plan is a query resolved against the index: its terms in query order
// (terms no candidate holds dropped) with weight qtf · idf, the scorer of
// its statistics, and its candidates.
type plan struct {
	terms    []planTerm
	sc       scorer
	allowed  []uint64 // bit s: slot s is a candidate
	nAllowed int      // the candidates, when a tenant or filter restricts them; else 0
}

type planTerm struct {
	p *postings
	w float64
}

// searchState is a search's reusable memory.
type searchState struct {
	curs    []cursor
	act     []*cursor
	allowed []uint64
	terms   []planTerm
	acc     *[window]float64 // a window's sums, zero between windows
	vals    []float64        // per term, its part in each slot of the window
	held    []uint64         // per term, the window's slots holding it
	cands   []uint32
	part    []float64
	bounds  []float64 // the cursors' block bounds, computed once per query (cursor.ubs)
	rangeUB []float64 // per range, its bound (−1: no candidate in it)
	order   []int32   // the ranges in the order they are searched
	seen    [window / 64]uint64

	w     uint64  // a window's most slots, for the query's number of terms
	theta float64 // the worker's k-th best score, 0 until it holds k
	wins  int     // windows the worker searched
}

func (x *impactIndex) state() *searchState {
	if st, ok := x.states.Get().(*searchState); ok {
		return st
	}
	return &searchState{}
}

// plan resolves tokens (a token repeated counts repeatedly) for tenant
// (when set) and filter; false when no document can match. The caller
// holds mu for reading.
func (x *impactIndex) plan(tokens []string, tenant string, filter spi.Filter, p bm25Params, st *searchState) (plan, bool) {
	if x.live == 0 || len(tokens) == 0 {
		return plan{}, false
	}
	// N, the average lengths and df are the tenant's own when the query
	// names one. A tenant holding every live document (a single-tenant
	// deployment) has the collection's statistics: the collection's
	// numbers are used, the same values without looking up df per tenant.
	t := uint32(0)
	live, totT, totX := x.live, x.totT, x.totX
	scoped := false
	if tenant != "" {
		var ok bool
		if t, ok = x.tenants[tenant]; !ok || x.tLive[t] == 0 {
			return plan{}, false
		}
		scoped = x.tLive[t] < x.live
		live, totT, totX = x.tLive[t], x.tTotT[t], x.tTotX[t]
	}
	n := float64(live)
	avgT, avgX := float64(totT)/n, float64(totX)/n
	var sc scorer
	sc.aT, sc.aX = p.k1*(1-p.b), p.k1*(1-p.b)
	if avgT > 0 {
		sc.cT = p.k1 * p.b / avgT
	}
	if avgX > 0 {
		sc.cX = p.k1 * p.b / avgX
	}
	sc.wT, sc.wX = p.titleWeight, 1
	if avgT <= 0 {
		sc.wT = 0 // an empty field scores nothing
	}
	if avgX <= 0 {
		sc.wX = 0
	}

	// Distinct terms in order of first appearance, with their counts.
	terms := st.terms[:0]
	var tids []uint32
	for _, tok := range tokens {
		tid, ok := x.termIdx[tok]
		if !ok {
			continue
		}
		if i := slices.Index(tids, tid); i >= 0 {
			terms[i].w++
			continue
		}
		tids = append(tids, tid)
		terms = append(terms, planTerm{p: &x.post[tid], w: 1})
	}
	kept := terms[:0]
	for i, pt := range terms {
		df := pt.p.df
		if scoped {
			df = x.tdf[tdfKey(t, tids[i])]
		}
		if df <= 0 {
			continue
		}
		d := float64(df)
		pt.w *= math.Log(1 + (n-d+0.5)/(d+0.5))
		kept = append(kept, pt)
	}
	st.terms = kept
	if len(kept) == 0 {
		return plan{}, false
	}

	allowed := x.alive
	if scoped || !filter.IsEmpty() {
		var set *roaring.Bitmap
		if scoped {
			set = x.tBits[t]
		}
		if e := filter.Root(); e != nil {
			f := x.filterBits(e)
			if set == nil {
				set = f
			} else {
				set = roaring.And(set, f)
			}
		}
		if set.IsEmpty() {
			return plan{}, false
		}
		words := len(x.alive)
		if cap(st.allowed) < words {
			st.allowed = make([]uint64, words, words+words/8)
		}
		allowed = st.allowed[:words]
		clear(allowed)
		set.WriteDenseTo(allowed)
		n := 0
		for w := range allowed {
			allowed[w] &= x.alive[w] // a $not's complement holds dead slots
			n += bits.OnesCount64(allowed[w])
		}
		if n == 0 {
			return plan{}, false
		}
		return plan{terms: kept, sc: sc, allowed: allowed, nAllowed: n}, true
	}
	return plan{terms: kept, sc: sc, allowed: allowed}, true
}

// filterBits returns the slots matching e, from the pairs' bitmaps: $in
// is the union of its values' pairs, a range the union of the key's pairs
// whose scalar is in range (a binary search in the key's sorted numbers or
// times), $exists
// the presence pair, $not the complement over every slot (dead ones
// included: the caller keeps only live slots). The bitmaps of the index
// are only read. The caller holds mu for reading.
func (x *impactIndex) filterBits(e *spi.Expr) *roaring.Bitmap {
	all := func() *roaring.Bitmap { return roaring.Flip(roaring.New(), 0, uint64(x.slots())) }
	switch e.Kind {
	case spi.ExprAnd:
		if len(e.Args) == 0 {
			return all()
		}
		set := x.filterBits(e.Args[0])
		for _, a := range e.Args[1:] {
			set = roaring.And(set, x.filterBits(a))
		}
		return set
	case spi.ExprOr:
		subs := make([]*roaring.Bitmap, len(e.Args))
		for i, a := range e.Args {
			subs[i] = x.filterBits(a)
		}
		return roaring.FastOr(subs...)
	case spi.ExprNot:
		return roaring.Flip(x.filterBits(e.Args[0]), 0, uint64(x.slots()))
	case spi.ExprExists:
		if p, ok := x.pairs[pair{e.Key, ""}]; ok {
			return x.pairBits[p].Clone()
		}
	case spi.ExprIn:
		var alts []*roaring.Bitmap
		for _, v := range e.Values {
			if p, ok := x.pairs[pair{e.Key, v.EqualityKey()}]; ok {
				alts = append(alts, x.pairBits[p])
			}
		}
		return roaring.FastOr(alts...)
	case spi.ExprCmp:
		var alts []*roaring.Bitmap
		if sp := x.keyPairs[e.Key]; sp != nil {
			for _, p := range sp.inRange(x.pairVal, e.Op, e.Values[0]) {
				alts = append(alts, x.pairBits[p])
			}
		}
		return roaring.FastOr(alts...)
	}
	return roaring.New()
}

// hit is a scored slot.
type hit struct {
	score float64
	slot  uint32
}

// search returns the k best live documents for the analysed query tokens
// (a token repeated counts repeatedly), restricted to tenant (when set)
// and filter, by the BM25 above: score descending, then id ascending.
func (x *impactIndex) search(ctx context.Context, tokens []string, k int, tenant string, filter spi.Filter, p bm25Params) ([]spi.Ref, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	st := x.state()
	defer x.states.Put(st)
	pl, ok := x.plan(tokens, tenant, filter, p, st)
	if !ok {
		return []spi.Ref{}, nil
	}
	h := topk.NewHeap(k, x.below)
	search := x.searchRanges
	if x.fewCandidates(pl) {
		search = x.searchCandidates
	}
	if err := search(ctx, pl, h, k, st); err != nil {
		return nil, err
	}
	return x.refs(h), nil
}

// Candidates first. A selective filter (a user's or a folder's documents
// among a million) leaves few candidates, spread over the whole index:
// nearly every range and window holds one, so pruning by windows decodes
// about every posting of the query's essential terms to score a few.
// Looking each candidate up in each term's postings (searchCandidates)
// costs a skip over the blocks' last slots and at most one block's
// decoding per term and candidate instead, and scores every candidate:
// exact without bounds. It is chosen when the candidates times the terms
// are at most the query's postings in the ranges holding a candidate
// (its postings times the share of such ranges: the windows read no
// other) over candidateRatio; so a small tenant's run of slots, which
// the windows read alone, keeps the windows (BenchmarkImpactSearch,
// filters of 0.1 % to 5 %: docs/keyword.md, "Candidates first").
const candidateRatio = 32

// fewCandidates reports whether pl's candidates are few enough to be
// looked up one by one (searchCandidates) rather than found in windows
// of the postings (searchRanges).
func (x *impactIndex) fewCandidates(pl plan) bool {
	switch {
	case x.candidates < 0 || pl.nAllowed == 0:
		return false
	case x.candidates > 0:
		return true
	}
	postings := 0
	for _, t := range pl.terms {
		postings += int(t.p.df)
	}
	cost := pl.nAllowed * len(pl.terms) * candidateRatio
	if cost > postings {
		return false // more than every range's postings
	}
	size := x.rangeSize()
	ranges, spanned := int((uint64(x.slots())+size-1)/size), 0
	for r := range ranges {
		if holdsCandidate(pl.allowed, r, size) {
			spanned++
		}
	}
	return cost*ranges <= postings*spanned
}

// holdsCandidate reports whether range r (of size slots) holds a slot
// allowed holds.
func holdsCandidate(allowed []uint64, r int, size uint64) bool {
	wordsPer := int(size / 64)
	for _, w := range allowed[min(r*wordsPer, len(allowed)):min((r+1)*wordsPer, len(allowed))] {
		if w != 0 {
			return true
		}
	}
	return false
}

// searchCandidates offers to h every candidate of pl holding a term of
// the query, in slot order: each term's cursor moves forward to the
// candidate (probe), and the candidate's score is its terms' parts summed
// in query order, the exhaustive scorer's sum.
func (x *impactIndex) searchCandidates(ctx context.Context, pl plan, h *topk.Heap[hit], _ int, st *searchState) error {
	m := len(pl.terms)
	if cap(st.curs) < m {
		st.curs = make([]cursor, m)
	}
	curs := st.curs[:m]
	for i, t := range pl.terms {
		curs[i].open(t.p, t.w, i)
	}
	for wi, word := range pl.allowed {
		if wi%1024 == 1023 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		for b := word; b != 0; b &= b - 1 {
			slot := uint32(wi<<6 + bits.TrailingZeros64(b))
			l := &x.lens[slot]
			score := 0.0
			for i := range curs {
				if c := &curs[i]; c.probe(slot) {
					tfT, tfX := c.freqAt(c.i)
					score += c.w * pl.sc.score(tfT, tfX, l.t, l.x)
				}
			}
			if score > 0 {
				h.Offer(hit{score, slot})
			}
		}
	}
	return nil
}

// Best ranges first. The slots are cut into ranges of rangeSlots; a
// range's bound is the sum over the query's terms of the greatest bound
// of the term's blocks that overlap it. The ranges are searched in order
// of their bounds, greatest first, so that the documents that can score
// most are scored first and θ rises sooner; the search ends at the first
// range whose bound is below θ, as every range after it is (Mackenzie et
// al., "Anytime Ranking on Document-Ordered Indexes", TOIS 2022, search
// ranges in this order). Where every range holds a high-scoring document
// of each common term, the bounds differ little and the order gains
// little (docs/keyword.md, "Best ranges first"). The order cannot change
// the answer: a document is passed over only when a true bound of its
// score is below the k-th best score of documents held.
//
// Intra-query parallelism: a search of a large index (parallelMin slots
// or more) runs one worker per core (at most maxWorkers), each taking the
// next range in that order, with its own heap, as Lucene searches an
// index's slices on an executor. The workers share θ (sharedTheta): the
// greatest k-th best score any worker holds is below the k-th best of
// all, so every worker may prune with it; a document of the k best
// overall is among its own worker's k best, so merging the workers' heaps
// gives the answer of one search (TestPrunedSearchEqualsExhaustive runs
// workers on small indexes too). It buys latency, not CPU: the workers do
// about the work of one search between them.
const (
	rangeSlots  = 16384
	parallelMin = 1 << 17
	maxWorkers  = 4
)

func (x *impactIndex) parallelAt() int {
	if x.parallelMin > 0 {
		return x.parallelMin
	}
	return parallelMin
}

// minWindow returns the const minWindow, or the tests' minWin, at most w.
func (x *impactIndex) minWindow(w uint64) uint64 {
	if x.minWin > 0 {
		return min(uint64(x.minWin), w)
	}
	return min(minWindow, w)
}

func (x *impactIndex) rangeSize() uint64 {
	if x.rangeMin > 0 {
		return uint64(x.rangeMin)
	}
	return rangeSlots
}

// searchRanges offers to h every candidate that can be among its k best:
// the block bounds of the query's terms, the ranges' bounds, then the
// ranges searched greatest bound first by one worker or one a core.
func (x *impactIndex) searchRanges(ctx context.Context, pl plan, h *topk.Heap[hit], k int, st *searchState) error {
	slots := uint64(x.slots())
	size := x.rangeSize()
	nr := int((slots + size - 1) / size)
	// The ranges holding a candidate.
	if cap(st.rangeUB) < nr {
		st.rangeUB = make([]float64, nr, nr+nr/4)
	}
	ub := st.rangeUB[:nr]
	for r := range ub {
		ub[r] = -1
		if holdsCandidate(pl.allowed, r, size) {
			ub[r] = 0
		}
	}
	// Every block bound a window can read (the blocks overlapping a range
	// holding a candidate), computed once and then only read, by every
	// worker; and each range's bound, summed term by term.
	nb := 0
	for _, t := range pl.terms {
		nb += len(t.p.blocks) + 1
	}
	if cap(st.bounds) < nb {
		st.bounds = make([]float64, nb, nb+nb/4)
	}
	bounds := st.bounds[:nb]
	for i := range bounds {
		bounds[i] = -1
	}
	for i, t := range pl.terms {
		var c cursor
		c.reset(t.p, t.w, i, bounds)
		bounds = bounds[c.nb:]
		// Only the blocks overlapping a range holding a candidate are
		// visited: a tenant's query costs no more for the blocks of the
		// other tenants' runs.
		for r := range ub {
			if ub[r] < 0 {
				continue
			}
			lo, hi := uint64(r)*size, uint64(r+1)*size
			if !c.shallow(uint32(lo)) {
				break
			}
			m := 0.0
			for b := c.blk; b < c.nb; b++ {
				if c.ubs[b] < 0 {
					c.ubs[b] = c.w * c.blockBound(b).score(&pl.sc) * slack
				}
				m = max(m, c.ubs[b])
				if uint64(c.last(b))+1 >= hi {
					break // the next block starts past the range
				}
			}
			ub[r] += m
		}
	}
	order := st.order[:0]
	for r, v := range ub {
		if v > 0 {
			order = append(order, int32(r))
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := cmp.Compare(ub[b], ub[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	st.order = order

	workers := 1
	if x.slots() >= x.parallelAt() {
		workers = min(runtime.GOMAXPROCS(0), maxWorkers, len(order))
	}
	sched := &schedule{pl: pl, order: order, ub: ub, size: size, slots: slots, bounds: st.bounds[:nb]}
	if workers <= 1 {
		return x.work(ctx, sched, h, st, true)
	}
	heaps := make([]*topk.Heap[hit], workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		heaps[i] = topk.NewHeap(k, x.below)
		if i == 0 {
			continue
		}
		wg.Go(func() {
			wst := x.state()
			defer x.states.Put(wst)
			errs[i] = x.work(ctx, sched, heaps[i], wst, false)
		})
	}
	errs[0] = x.work(ctx, sched, heaps[0], st, true)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, wh := range heaps {
		for _, e := range wh.Kept() {
			h.Offer(e)
		}
	}
	return nil
}

// schedule is a search's ranges, shared by its workers: the ranges in
// the order they are searched, their bounds, the next one to take, θ, and
// the query's block bounds.
type schedule struct {
	pl     plan
	order  []int32
	ub     []float64
	size   uint64
	slots  uint64
	bounds []float64 // per term (in query order), per block: its bound, slack included
	next   atomic.Int64
	theta  sharedTheta
}

// work is a worker: it takes the next range of s until none is left or
// the next one's bound is below θ, and searches it (prune). first marks
// the worker on the caller's goroutine.
func (x *impactIndex) work(ctx context.Context, s *schedule, h *topk.Heap[hit], st *searchState, first bool) error {
	st.begin(s)
	for {
		i := s.next.Add(1) - 1
		if i >= int64(len(s.order)) {
			return nil
		}
		r := uint64(s.order[i])
		if s.ub[r] < max(st.theta, s.theta.load()) {
			return nil // and every range after it
		}
		if err := x.prune(ctx, s, h, st, r*s.size, min((r+1)*s.size, s.slots), first); err != nil {
			return err
		}
	}
}

// sharedTheta is the greatest k-th best score the workers of a search
// hold (the bits of a float64 ≥ 0, which order as the floats do).
type sharedTheta struct{ bits atomic.Uint64 }

func (t *sharedTheta) load() float64 { return math.Float64frombits(t.bits.Load()) }

// raise makes θ at least v.
func (t *sharedTheta) raise(v float64) {
	nb := math.Float64bits(v)
	for {
		old := t.bits.Load()
		if old >= nb || t.bits.CompareAndSwap(old, nb) {
			return
		}
	}
}

// below is ragd's order on hits: a lower score, or on a tie the larger id.
func (x *impactIndex) below(a, b hit) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return bytes.Compare(x.ids.Bytes(int(a.slot)), x.ids.Bytes(int(b.slot))) > 0
}

func (x *impactIndex) refs(h *topk.Heap[hit]) []spi.Ref {
	hits := h.Sorted()
	out := make([]spi.Ref, len(hits))
	for i, e := range hits {
		out[i] = spi.Ref{ID: x.ids.String(int(e.slot)), Score: e.score, Source: spi.SourceKeyword}
	}
	return out
}

// window is the most slots a window spans; fewer when the query has many
// terms, so that the per-term buffers stay within maxBuffered values.
//
// minWindow is the fewest slots a window spans (below it, the end of the
// range). BenchmarkImpactSearch at 1,000,000 documents, k = 100 (Intel
// Xeon, 2 vCPUs, 2026-12-07, one worker): 10.8–10.9 ms of CPU per query
// with windows ending at the first block's end, 9.0–9.6 with 1,024 slots
// at least, 9.1–9.6 with 4,096 (at k = 10 4,096 was 2 % ahead, at k = 100
// 1,024 by 3–5 %).
const (
	window      = 4096
	minWindow   = 1024
	maxBuffered = 1 << 16
)

// begin readies st for a worker of s: a cursor per term, on the shared
// block bounds, and the window's buffers.
func (st *searchState) begin(s *schedule) {
	m := len(s.pl.terms)
	if cap(st.curs) < m {
		st.curs = make([]cursor, m)
	}
	curs := st.curs[:m]
	bounds := s.bounds
	for i, t := range s.pl.terms {
		curs[i].reset(t.p, t.w, i, bounds)
		bounds = bounds[curs[i].nb:]
	}
	w := uint64(window)
	for w > 64 && uint64(m)*w > maxBuffered {
		w >>= 1
	}
	st.w, st.theta, st.wins = w, 0, 0
	if uint64(len(st.vals)) < uint64(m)*w {
		st.vals = make([]float64, uint64(m)*w)
		st.held = make([]uint64, uint64(m)*(w/64))
	}
	if st.acc == nil {
		st.acc = new([window]float64)
	}
}

// prune offers to h every candidate in the slots [lo, hi) that can be
// among its k best, by block-max MaxScore (above). Within a window, the
// essential terms' postings are scored term by term into buffers of the
// window's slots (each term's part, and their running sum), as Lucene's
// MaxScoreBulkScorer does; each slot they reach is a candidate, dropped
// when its sum and the non-essential bounds cannot reach θ; the
// non-essential terms are then looked up for the candidates left, largest
// bound first, dropping candidates as the bounds left shrink. A candidate
// left is scored by summing its terms' parts in query order.
//
// θ is the worker's (st.theta, which holds across its ranges) or the
// other workers' (s.theta, read at each window), whichever is greater;
// raised whenever the worker's heap is full. first marks the worker on
// the search's goroutine, which runs searchHook after its first window.
func (x *impactIndex) prune(ctx context.Context, s *schedule, h *topk.Heap[hit], st *searchState, lo, hi uint64, first bool) error {
	pl := &s.pl
	m := len(pl.terms)
	curs := st.curs[:m]
	w := st.w
	hw := w / 64
	acc, seen := st.acc, &st.seen
	vals, held := st.vals, st.held
	scv := pl.sc // the constants in registers where postings are scored
	allowed := pl.allowed
	lens := x.lens
	theta := st.theta // the k-th best score held, 0 until k are
	defer func() { st.theta = theta }()
	upTo := lo
	act := st.act[:0] // the terms with blocks in the range
	for i := range curs {
		if c := &curs[i]; c.jump(uint32(lo)) {
			act = append(act, c)
		}
	}
	st.act = act
	for upTo < hi {
		if st.wins++; st.wins%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if st.wins == 2 && first && x.searchHook != nil {
			x.searchHook()
		}
		theta = max(theta, s.theta.load())
		// Slots no candidate holds are passed over: another tenant's run
		// of slots (a rebuild orders them by tenant), dead ones.
		if upTo = nextAllowed(allowed, upTo, hi); upTo >= hi {
			break
		}
		// The window: from upTo to the end of the first current block
		// (at most w slots, not past hi; at least minWindow, below).
		// The terms with blocks left
		// stay in the order of the last window's bounds, which changes
		// little from one window to the next: sorting them again below
		// then moves few (sorting them from query order every window
		// took 4% of a search's CPU at 1,000,000 documents).
		start, end := upTo, min(upTo+w, hi)
		left := act[:0]
		for _, c := range act {
			if c.shallow(uint32(min(upTo, math.MaxUint32))) {
				left = append(left, c)
				end = min(end, uint64(c.last(c.blk))+1)
			}
		}
		act = left
		if len(act) == 0 {
			return nil
		}
		// At least minWindow slots: a window per block of the densest
		// term spent more on its set-up than on its postings (bounds,
		// the terms' order, the buffers). Each term's bound is then its
		// blocks' greatest over the window, and an essential term's
		// postings below are read across its blocks in the window.
		end = max(end, min(start+x.minWindow(w), hi))
		for _, c := range act {
			c.mx = c.rangeMax(end)
		}
		// Non-essential terms: the smallest bounds summing below θ.
		ess, neSum := act, 0.0
		full := theta > 0 // scores are > 0: k are held (by this worker or another)
		if full {
			for i := 1; i < len(act); i++ { // few terms: insertion sort
				for j := i; j > 0 && act[j].mx < act[j-1].mx; j-- {
					act[j], act[j-1] = act[j-1], act[j]
				}
			}
			split := 0
			for split < len(act) && neSum+act[split].mx < theta {
				neSum += act[split].mx
				split++
			}
			if split == len(act) {
				upTo = end
				continue // nothing in the window can enter
			}
			ess = act[split:]
			// Stretch the window to the first essential block's end
			// when the non-essential terms' bounds over it (several of
			// their blocks) still sum below θ.
			if split > 0 {
				e := min(start+w, hi)
				for _, c := range ess {
					e = min(e, uint64(c.last(c.blk))+1)
				}
				if e > end {
					sum := 0.0
					for _, c := range act[:split] {
						c.mxe = c.rangeMax(e)
						sum += c.mxe
					}
					if sum < theta {
						end, neSum = e, sum
						for _, c := range act[:split] {
							c.mx = c.mxe
						}
					}
				}
			}
		}
		upTo = end
		ne := act[:len(act)-len(ess)]
		words := (end - start + 63) >> 6
		// The essential terms' parts.
		for _, c := range ess {
			tv, th := vals[uint64(c.qi)*w:], held[uint64(c.qi)*hw:]
			c.seek(uint32(start))
			for { // the term's blocks that hold slots of the window
				c.freqs()
				// The cursor's position, weight and arrays in locals:
				// kept in registers across the stores below, which the
				// compiler cannot tell apart from the cursor's fields.
				i, n, cw := c.i, c.n, c.w
				slots, tfT, tfX := &c.slots, &c.tfT, &c.tfX
				for ; i < n; i++ {
					s := slots[i]
					if uint64(s) >= end {
						break
					}
					if allowed[s>>6]&(1<<(s&63)) == 0 {
						continue
					}
					j := uint64(s) - start
					l := &lens[s]
					v := cw * scv.score(tfT[i], tfX[i], l.t, l.x)
					tv[j] = v
					th[j>>6] |= 1 << (j & 63)
					acc[j] += v
					seen[j>>6] |= 1 << (j & 63)
				}
				if c.i = i; i < n {
					break
				}
				c.blk++
				if c.blk >= c.nb || uint64(c.last(c.blk-1))+1 >= end {
					break
				}
				c.load()
			}
		}
		// Candidates whose parts so far and the bounds left reach θ.
		// (While fewer than k are held θ is 0 and every slot reached
		// passes.) Each slot is written and kept by advancing n, not by a
		// branch: which slots pass is data the branch predictor cannot
		// learn.
		if uint64(cap(st.cands)) < w {
			st.cands, st.part = make([]uint32, w), make([]float64, w)
		}
		cands, part := st.cands[:w], st.part[:w]
		n := 0
		for wi := range words {
			for b := seen[wi]; b != 0; b &= b - 1 {
				j := wi<<6 + uint64(bits.TrailingZeros64(b))
				p := acc[j]
				cands[n], part[n] = uint32(j), p
				if p*slack+neSum >= theta {
					n++
				}
				acc[j] = 0
			}
			seen[wi] = 0
		}
		cands, part = cands[:n], part[:n]
		// The non-essential terms, largest bound first.
		rem := neSum
		for k := len(ne) - 1; k >= 0 && len(cands) > 0; k-- {
			c := ne[k]
			rem -= c.mx
			tv, th := vals[uint64(c.qi)*w:], held[uint64(c.qi)*hw:]
			kept := 0
			for i, j := range cands {
				slot := uint32(start + uint64(j))
				if c.probe(slot) {
					tfT, tfX := c.freqAt(c.i)
					l := &lens[slot]
					v := c.w * scv.score(tfT, tfX, l.t, l.x)
					tv[j] = v
					th[j>>6] |= 1 << (j & 63)
					part[i] += v
				}
				cands[kept], part[kept] = j, part[i]
				if part[i]*slack+rem >= theta {
					kept++
				}
			}
			cands, part = cands[:kept], part[:kept]
		}
		// The candidates left, summed in query order: the exhaustive
		// scorer's sum.
		for _, j := range cands {
			score := 0.0
			for q := range uint64(m) {
				if held[q*hw+uint64(j>>6)]&(1<<(j&63)) != 0 {
					score += vals[q*w+uint64(j)]
				}
			}
			if score > 0 {
				h.Offer(hit{score, uint32(start + uint64(j))})
				if h.Full() {
					worst, _ := h.Worst()
					if worst.score > theta {
						theta = worst.score
						s.theta.raise(theta)
					}
				}
			}
		}
		st.cands, st.part = cands, part
		for _, c := range act {
			clear(held[uint64(c.qi)*hw : uint64(c.qi)*hw+words])
		}
	}
	return nil
}

// nextAllowed returns the first slot from s that allowed holds, or hi
// when none below hi does.
func nextAllowed(allowed []uint64, s, hi uint64) uint64 {
	wi := s >> 6
	if wi >= uint64(len(allowed)) {
		return hi
	}
	if b := allowed[wi] >> (s & 63); b != 0 {
		return min(s+uint64(bits.TrailingZeros64(b)), hi)
	}
	for wi++; wi < uint64(len(allowed)) && wi<<6 < hi; wi++ {
		if b := allowed[wi]; b != 0 {
			return min(wi<<6+uint64(bits.TrailingZeros64(b)), hi)
		}
	}
	return hi
}

// cursor walks one term's postings.
type cursor struct {
	p   *postings
	w   float64   // qtf · idf
	qi  int       // the term's place in the query
	nb  int       // blocks, the tail counting as one
	blk int       // current block (nb: exhausted)
	dec int       // block whose slots are decoded into the arrays, -1 for none
	tfd int       // block whose frequencies are, -1 for none
	n   int       // postings in the decoded block
	i   int       // position in the decoded block
	mxe float64   // bound over a stretched window
	ubs []float64 // per block, its bound (w · bound.score · slack), as searchRanges computed it; −1 for a block no range holding a candidate overlaps
	mx  float64   // bound of the current window

	slots, tfT, tfX [blockSize]uint32
}

// reset starts a cursor on p; ubs begins with the bounds of its blocks
// (one more than the sealed blocks), which searchRanges fills.
func (c *cursor) reset(p *postings, w float64, qi int, ubs []float64) {
	c.open(p, w, qi)
	c.ubs = ubs[:c.nb]
}

// open starts a cursor on p without block bounds, for lookups only
// (probe, freqAt).
func (c *cursor) open(p *postings, w float64, qi int) {
	c.p, c.w, c.qi = p, w, qi
	c.nb = len(p.blocks)
	if len(p.tail) > 0 {
		c.nb++
	}
	c.ubs = nil
	c.blk, c.dec, c.tfd = 0, -1, -1
}

// last returns the last slot of block b.
func (c *cursor) last(b int) uint32 {
	if b < len(c.p.blocks) {
		return c.p.blocks[b].last
	}
	return c.p.tail[len(c.p.tail)-1].slot
}

// shallow moves to the first block whose last slot is at least target
// (galloping, then a binary search) without decoding it; false when no
// block is left.
func (c *cursor) shallow(target uint32) bool {
	if c.blk >= c.nb || c.last(c.blk) >= target {
		return c.blk < c.nb
	}
	lo, b, step := c.blk+1, c.blk+1, 1
	for b < c.nb && c.last(b) < target {
		lo = b + 1
		b += step
		step <<= 1
	}
	hi := min(b, c.nb)
	for lo < hi {
		mid := (lo + hi) / 2
		if c.last(mid) < target {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	c.blk = lo
	return c.blk < c.nb
}

// rangeMax is the greatest bound of the blocks from the current one that
// can hold slots below end, slack included.
func (c *cursor) rangeMax(end uint64) float64 {
	m := c.blockMax()
	for b := c.blk + 1; b < c.nb && uint64(c.last(b-1))+1 < end; b++ {
		m = max(m, c.ubs[b])
	}
	return m
}

// blockMax is the bound of the current block's scores, slack included,
// as searchRanges computed it for every block a window can reach.
func (c *cursor) blockMax() float64 { return c.ubs[c.blk] }

// blockBound returns block b's bound (the tail's for the last).
func (c *cursor) blockBound(b int) *bound {
	if b < len(c.p.blocks) {
		return &c.p.blocks[b].b
	}
	return &c.p.tailB
}

// jump moves to the first block whose last slot is at least target,
// backwards too (a worker searches ranges out of slot order); false when
// no block is left.
func (c *cursor) jump(target uint32) bool {
	b, _ := slices.BinarySearchFunc(c.p.blocks, target, func(e block, t uint32) int { return cmp.Compare(e.last, t) })
	if b == len(c.p.blocks) && (len(c.p.tail) == 0 || c.p.tail[len(c.p.tail)-1].slot < target) {
		b = c.nb
	}
	if c.blk = b; c.dec >= b {
		c.i = 0 // seek and probe move forward from c.i in the decoded block, which the cursor may reach again
	}
	return b < c.nb
}

// load decodes the current block, unless it is.
func (c *cursor) load() {
	if c.dec == c.blk {
		return
	}
	if c.blk < len(c.p.blocks) {
		c.p.decodeSlots(c.blk, &c.slots)
		c.n = blockSize
		c.tfd = -1
	} else {
		for j, e := range c.p.tail {
			c.slots[j], c.tfT[j], c.tfX[j] = e.slot, uint32(e.tfT), uint32(e.tfX)
		}
		c.n = len(c.p.tail)
		c.tfd = c.blk
	}
	c.dec, c.i = c.blk, 0
}

// freqs decodes the frequencies of the decoded block, unless they are:
// a block looked up only for slots it does not hold never needs them.
func (c *cursor) freqs() {
	if c.tfd != c.dec {
		c.p.decodeFreqs(c.dec, &c.tfT, &c.tfX)
		c.tfd = c.dec
	}
}

// freqAt returns the frequencies of posting i of the decoded block: from
// the arrays when the block's are decoded, else read from its packed
// words (a lookup of a few postings need not unpack all blockSize values).
func (c *cursor) freqAt(i int) (uint32, uint32) {
	if c.tfd == c.dec {
		c.freqs()
		return c.tfT[i], c.tfX[i]
	}
	b := &c.p.blocks[c.dec]
	src := c.p.data[b.off+2*uint32(b.wd):]
	return packedAt(src, i, uint(b.wt)), packedAt(src[2*uint32(b.wt):], i, uint(b.wx))
}

// packedAt returns value i of blockSize values of w bits packed in words
// (as pack packs them).
func packedAt(words []uint64, i int, w uint) uint32 {
	if w == 0 {
		return 0
	}
	bit := uint(i) * w
	v := words[bit>>6] >> (bit & 63)
	if (bit&63)+w > 64 {
		v |= words[bit>>6+1] << (64 - bit&63)
	}
	return uint32(v & (1<<w - 1))
}

// seek positions the cursor on its first posting at or after target,
// within the current block, whose last slot is at least target.
func (c *cursor) seek(target uint32) {
	c.load()
	c.i += searchSlots(c.slots[c.i:c.n], target)
}

// searchSlots returns the index of the first slot at least target.
func searchSlots(s []uint32, target uint32) int {
	lo, hi := 0, len(s)
	for lo < hi {
		mid := (lo + hi) / 2
		if s[mid] < target {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// probe moves the cursor to its first posting at or after slot and
// reports whether that is slot.
func (c *cursor) probe(slot uint32) bool {
	if !c.shallow(slot) {
		return false
	}
	c.load()
	// Candidates ascend, mostly a few postings apart: a short linear
	// scan, then a binary search for a long jump.
	i, n := c.i, c.n
	for end := min(n, i+8); i < end && c.slots[i] < slot; i++ {
	}
	if i < n && c.slots[i] < slot {
		i += searchSlots(c.slots[i:n], slot)
	}
	c.i = i
	return i < n && c.slots[i] == slot
}
