package keyword

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ragd/ragd/internal/topk"
	"github.com/ragd/ragd/spi"
)

// searchExhaustive is the oracle of the pruned search: every posting of
// every query term scored into a per-slot accumulator, term after term in
// query order (so a document's parts are summed in the order the pruned
// search sums them), then the k best candidates. It shares the plan
// (statistics, weights, candidates) with the pruned search; the plan
// itself is checked against the formula by bruteBM25.
func (x *impactIndex) searchExhaustive(tokens []string, k int, tenant string, filter spi.Filter, p bm25Params) []spi.Ref {
	x.mu.RLock()
	defer x.mu.RUnlock()
	st := &searchState{}
	pl, ok := x.plan(tokens, tenant, filter, p, st)
	if !ok {
		return []spi.Ref{}
	}
	acc := make([]float64, x.slots())
	for _, t := range pl.terms {
		t.p.each(func(e posting) {
			if pl.allowed[e.slot>>6]&(1<<(e.slot&63)) == 0 {
				return
			}
			if s := pl.sc.score(uint32(e.tfT), uint32(e.tfX), x.lens[e.slot].t, x.lens[e.slot].x); s != 0 {
				acc[e.slot] += t.w * s
			}
		})
	}
	h := topk.NewHeap(k, x.below)
	for s, v := range acc {
		if v != 0 {
			h.Offer(hit{v, uint32(s)})
		}
	}
	return x.refs(h)
}

// checkInvariants checks what impact.go, postings.go and internal/idtable say
// must hold of the index. The caller holds no lock.
func (x *impactIndex) checkInvariants(t *testing.T) {
	t.Helper()
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := x.slots()
	for name, l := range map[string]int{"tenant": len(x.tenant), "lens": len(x.lens),
		"verTag": len(x.verTag), "verSeq": len(x.verSeq), "metaOff-1": len(x.metaOff) - 1} {
		if l != n {
			t.Fatalf("%s has %d entries for %d slots", name, l, n)
		}
	}
	if len(x.alive) != (n+63)/64 {
		t.Fatalf("alive has %d words for %d slots", len(x.alive), n)
	}
	if x.ordered > n || !slices.IsSorted(x.tenant[:x.ordered]) {
		t.Fatalf("the %d slots of the last rebuild (of %d) are not in tenant order", x.ordered, n)
	}
	// Every number or time pair sits once in its key's sorted values, in
	// ascending order.
	ranged := 0
	for pk, p := range x.pairs {
		if v := x.pairVal[p]; pk.val != "" && (v.IsNumber() || v.Kind() == spi.KindTime) {
			ranged++
			if sp := x.keyPairs[pk.key]; sp == nil || !slices.Contains(*sp.slot(v), p) {
				t.Fatalf("pair %v is not in its key's sorted values", pk)
			}
		}
	}
	sorted := 0
	for k, sp := range x.keyPairs {
		for _, sl := range [][]uint32{sp.nums, sp.times} {
			sorted += len(sl)
			for i := 1; i < len(sl); i++ {
				if c, ok := spi.Compare(x.pairVal[sl[i-1]], x.pairVal[sl[i]]); !ok || c >= 0 {
					t.Fatalf("key %q: sorted values out of order at %d", k, i)
				}
			}
		}
	}
	if sorted != ranged {
		t.Fatalf("sorted values hold %d pairs, %d are numbers or times", sorted, ranged)
	}
	live := 0
	for i, w := range x.alive {
		if i == len(x.alive)-1 && n%64 != 0 && w>>(n%64) != 0 {
			t.Fatalf("alive has bits past slot %d", n)
		}
		live += bits.OnesCount64(w)
	}
	if live != x.live || x.dead != n-live {
		t.Fatalf("live %d dead %d, alive bits %d of %d slots", x.live, x.dead, live, n)
	}
	// Per tenant and per pair: statistics and bitmaps from the slots.
	tLive := make([]int, len(x.tLive))
	tT, tX := make([]int64, len(x.tLive)), make([]int64, len(x.tLive))
	var totT, totX int64
	pairSlots := make([][]uint32, len(x.pairBits))
	tenantSlots := make([][]uint32, len(x.tBits))
	if err := x.ids.Check(); err != nil {
		t.Fatalf("id table: %v", err)
	}
	if x.ids.Len() != n || x.ids.Linked() != live {
		t.Fatalf("id table holds %d slots, %d linked, for %d slots, %d live", x.ids.Len(), x.ids.Linked(), n, live)
	}
	for s := range uint32(n) {
		got, ok := x.ids.Lookup(x.ids.String(int(s)))
		if x.isAlive(s) != (ok && got == int(s)) {
			t.Fatalf("slot %d (%q) alive %v, id table finds %d %v", s, x.ids.String(int(s)), x.isAlive(s), got, ok)
		}
		if !x.isAlive(s) {
			continue
		}
		tn := x.tenant[s]
		tLive[tn]++
		tT[tn] += int64(x.lens[s].t)
		tX[tn] += int64(x.lens[s].x)
		totT += int64(x.lens[s].t)
		totX += int64(x.lens[s].x)
		tenantSlots[tn] = append(tenantSlots[tn], s)
		for _, p := range x.metaIDs[x.metaOff[s]:x.metaOff[s+1]] {
			pairSlots[p] = append(pairSlots[p], s)
		}
	}
	if !slices.Equal(tLive, x.tLive) || !slices.Equal(tT, x.tTotT) || !slices.Equal(tX, x.tTotX) || totT != x.totT || totX != x.totX {
		t.Fatalf("tenant statistics %v %v %v (%d %d), slots say %v %v %v (%d %d)", x.tLive, x.tTotT, x.tTotX, x.totT, x.totX, tLive, tT, tX, totT, totX)
	}
	for i, b := range x.tBits {
		if got := b.ToArray(); !slices.Equal(got, tenantSlots[i]) && len(got)+len(tenantSlots[i]) > 0 {
			t.Fatalf("tenant %d bitmap %v, live slots %v", i, got, tenantSlots[i])
		}
	}
	for i, b := range x.pairBits {
		if got := b.ToArray(); !slices.Equal(got, pairSlots[i]) && len(got)+len(pairSlots[i]) > 0 {
			t.Fatalf("pair %d bitmap %v, live slots %v", i, got, pairSlots[i])
		}
	}
	// Postings: order, shape, bounds, df per term and per tenant.
	tdf := map[uint64]int32{}
	for tid := range x.post {
		p := &x.post[tid]
		for i, b := range p.blocks {
			want := uint32(0)
			if i+1 < len(p.blocks) {
				want = p.blocks[i+1].off
			} else {
				want = uint32(len(p.data))
			}
			if b.off+2*uint32(b.wd)+2*uint32(b.wt)+2*uint32(b.wx) != want {
				t.Fatalf("term %d block %d: words [%d, %d) with widths %d/%d/%d", tid, i, b.off, want, b.wd, b.wt, b.wx)
			}
		}
		if len(p.tail) >= blockSize {
			t.Fatalf("term %d: tail of %d", tid, len(p.tail))
		}
		df := int32(0)
		prev := int64(-1)
		k := 0
		p.each(func(e posting) {
			if int64(e.slot) <= prev || int(e.slot) >= n {
				t.Fatalf("term %d: slot %d after %d (%d slots)", tid, e.slot, prev, n)
			}
			prev = int64(e.slot)
			b := &p.tailB
			if blk := k / blockSize; blk < len(p.blocks) {
				b = &p.blocks[blk].b
				if k%blockSize == blockSize-1 && p.blocks[blk].last != e.slot {
					t.Fatalf("term %d block %d: last %d, holds %d", tid, blk, p.blocks[blk].last, e.slot)
				}
			}
			k++
			if !b.dominates(e, x.lens[e.slot].t, x.lens[e.slot].x) {
				t.Fatalf("term %d: bound %+v does not dominate %+v (lengths %d, %d)", tid, *b, e, x.lens[e.slot].t, x.lens[e.slot].x)
			}
			if x.isAlive(e.slot) {
				df++
				tdf[tdfKey(x.tenant[e.slot], uint32(tid))]++
			}
		})
		if df != p.df {
			t.Fatalf("term %d: df %d, live postings %d", tid, p.df, df)
		}
	}
	if len(tdf) != len(x.tdf) {
		t.Fatalf("tenant df has %d entries, postings say %d", len(x.tdf), len(tdf))
	}
	for key, v := range tdf {
		if x.tdf[key] != v {
			t.Fatalf("tenant df %x = %d, postings say %d", key, x.tdf[key], v)
		}
	}
}

// dominates reports whether b bounds posting e of lengths lt, lx.
func (b *bound) dominates(e posting, lt, lx uint32) bool {
	if e.tfT > 0 && (e.tfT > b.tT || uint32(b.lT) > lt) {
		return false
	}
	if e.tfX == 0 {
		return true
	}
	for _, q := range b.x {
		if q.tf >= e.tfX && uint32(q.len) <= lx {
			return true
		}
	}
	return false
}

// The pruned search answers exactly what exhaustive scoring answers (ids,
// scores to the bit, order on ties) and what the formula answers, over
// random corpora with skewed vocabularies, random queries, tenants,
// metadata filters (strings, and ranges and negations over typed values),
// replacements, deletes, compactions and rebuilds in clustered order
// (which renumber the slots of the typed pairs' bitmaps; the settle's
// bisect the order, the others do not) with writes made while they build
// and catch up, at several k, searched whole or in parts
// at once (odd seeds); the index's invariants hold after every step.
func TestPrunedSearchEqualsExhaustive(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { prunedEqualsExhaustive(t, seed) })
	}
}

func prunedEqualsExhaustive(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	vocab := make([]string, 60+rng.IntN(200))
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%d", i)
	}
	// Zipf-like: a few terms in most documents, many in few.
	zipf := rand.NewZipf(rand.New(rand.NewPCG(seed, 7)), 1.1, 2, uint64(len(vocab)-1))
	word := func() string { return vocab[zipf.Uint64()] }
	freqs := func(n int) map[string]int {
		m := map[string]int{}
		for range n {
			m[word()]++
		}
		return m
	}
	x := newImpactIndex()
	// Rebuilds in clustered order (renumbering every slot) every few
	// hundred writes, besides the compactions of dead slots. Each is held
	// once built while up to 60 more writes go on (logged, then replayed
	// in rounds of 1 to 8 writes doubling), then waited for.
	x.reorderMin = 100 + rng.IntN(400)
	x.roundOps = 1 + rng.IntN(8)
	if seed%2 == 1 { // searches run by workers at once (prune.go)
		x.parallelMin = 64 + rng.IntN(256)
	}
	// Ranges of 64 to 512 slots, searched greatest bound first; windows
	// of at least 1 to 512 slots (one block of a term, or several).
	x.rangeMin = 64 << rng.IntN(4)
	x.minWin = 1 << rng.IntN(10)
	built, release := make(chan struct{}), make(chan struct{})
	x.rebuildHook = func(stage string) {
		if stage == "built" {
			built <- struct{}{}
			<-release
		}
	}
	held, left, rebuilds, bisected := false, 0, 0, 0
	model := map[string]refDoc{}
	tenants := []string{"", "t1", "t2", "t3"}
	ids := 600 + rng.IntN(1500)
	params := []bm25Params{{1.2, 0.75, 1}, {0.9, 0.4, 2.5}, {2, 1, 0.3}, {1.2, 0, 1}}
	check := func(step int) {
		t.Helper()
		x.checkInvariants(t)
		for q := range 30 {
			var tokens []string
			for range 1 + rng.IntN(8) {
				tokens = append(tokens, word())
			}
			if q%5 == 0 {
				tokens = append(tokens, vocab[rng.IntN(len(vocab))], "unknown")
			}
			tenant := tenants[rng.IntN(len(tenants))]
			var filter spi.Filter
			switch rng.IntN(7) {
			case 1:
				filter = spi.StringFilter(map[string][]string{"lang": {"en"}})
			case 2:
				filter = spi.StringFilter(map[string][]string{"lang": {"de", "fr"}, "rare": {"yes"}})
			case 3:
				filter = spi.StringFilter(map[string][]string{"lang": {"none"}})
			case 4:
				filter = spi.Cmp("n", []spi.CmpOp{spi.OpGt, spi.OpGte, spi.OpLt, spi.OpLte}[rng.IntN(4)], spi.Float(float64(rng.IntN(20))/2))
			case 5:
				filter = spi.Or(spi.Gte("n", spi.Int(7)), spi.Not(spi.Exists("lang")))
			case 6:
				filter = spi.And(spi.Ne("lang", spi.String("en")), spi.In("n", spi.Int(int64(rng.IntN(10))), spi.Float(2.5)))
			}
			p := params[rng.IntN(len(params))]
			k := []int{1, 2, 5, 10, 50}[rng.IntN(5)]
			// Candidates looked up one by one (searchCandidates), found
			// in windows (searchRanges), or as fewCandidates decides.
			x.candidates = []int{-1, 0, 1}[rng.IntN(3)]
			got, err := x.search(context.Background(), tokens, k, tenant, filter, p)
			if err != nil {
				t.Fatal(err)
			}
			want := x.searchExhaustive(tokens, k, tenant, filter, p)
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: query %v k=%d tenant %q filter %v params %+v:\npruned     %v\nexhaustive %v", step, tokens, k, tenant, filter, p, got, want)
			}
			all := bruteBM25(model, tokens, tenant, filter, p, len(model))
			if len(got) != min(k, len(all)) {
				t.Fatalf("step %d query %v: %d refs, formula %d", step, tokens, len(got), min(k, len(all)))
			}
			for i := range got {
				if math.Abs(got[i].Score-all[i].Score) > 1e-9*all[i].Score {
					t.Fatalf("step %d query %v: ref %d = %+v, formula %+v", step, tokens, i, got[i], all[i])
				}
			}
		}
	}
	steps := 4 * ids
	var dups []refDoc // contents put under several ids
	for step := range steps {
		id := fmt.Sprintf("d%04d", rng.IntN(ids))
		if rng.IntN(5) == 0 {
			old, ok := model[id]
			if ok && rng.IntN(2) == 0 {
				x.remove(id, &fieldFreqs{title: old.title, text: old.text})
			} else {
				x.remove(id, nil) // the index finds the terms itself
			}
			delete(model, id)
		} else {
			d := refDoc{id: id, tenant: tenants[rng.IntN(len(tenants))], title: freqs(rng.IntN(5)), text: freqs(1 + rng.IntN(40))}
			if len(dups) > 0 && rng.IntN(3) == 0 {
				// A copy of an earlier document: equal scores, ranked by id.
				o := dups[rng.IntN(len(dups))]
				d.title, d.text = maps.Clone(o.title), maps.Clone(o.text)
			} else if len(dups) < 50 && rng.IntN(4) == 0 {
				short := refDoc{title: freqs(rng.IntN(2)), text: freqs(1 + rng.IntN(4))}
				dups = append(dups, short)
				d.title, d.text = maps.Clone(short.title), maps.Clone(short.text)
			}
			if rng.IntN(9) == 0 {
				d.text[word()] += 20 + rng.IntN(200) // a frequency far above the block's others
			}
			switch rng.IntN(4) {
			case 0:
				d.meta = spi.Strings(map[string]string{"lang": []string{"en", "de", "fr"}[rng.IntN(3)]})
			case 1:
				d.meta = spi.Strings(map[string]string{"lang": "de", "rare": "yes"})
			}
			switch rng.IntN(3) { // typed: an integer, or a float (2.0 equals 2)
			case 0:
				d.meta = d.meta.Clone()
				if d.meta == nil {
					d.meta = spi.Metadata{}
				}
				d.meta["n"] = spi.Int(int64(rng.IntN(10)))
			case 1:
				d.meta = d.meta.Clone()
				if d.meta == nil {
					d.meta = spi.Metadata{}
				}
				d.meta["n"] = spi.Float(float64(rng.IntN(20)) / 2)
			}
			var old *fieldFreqs
			if o, ok := model[id]; ok && rng.IntN(2) == 0 {
				old = &fieldFreqs{title: o.title, text: o.text}
			}
			x.put(d.id, d.tenant, d.meta, d.lens(), fieldFreqs{title: d.title, text: d.text}, old)
			model[id] = d
		}
		if !held && !x.rebuilding() && x.settleDue() && rng.IntN(4) == 0 {
			x.settleNow() // as the timer would once writes pause: a rebuild that bisects
		}
		switch {
		case held && left == 0:
			release <- struct{}{}
			x.waitRebuild()
			held = false
			if x.bisected {
				bisected++
			}
		case held:
			left--
		case x.rebuilding():
			<-built
			held, left = true, rng.IntN(60)
			rebuilds++
		}
		if step%(steps/6) == steps/6-1 {
			check(step)
		}
	}
	if held {
		release <- struct{}{}
		x.waitRebuild()
	}
	check(steps)
	if rebuilds < 2 || bisected < 1 {
		t.Fatalf("%d rebuilds in %d writes, %d of them bisected: want 2 and 1 at least", rebuilds, steps, bisected)
	}
}

// Block packing round-trips every width, and a block's bound dominates
// its postings.
func TestBlockPackingRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for w := uint(0); w <= 32; w++ {
		var v, got [blockSize]uint32
		for i := range v {
			if w > 0 {
				v[i] = uint32(rng.Uint64() & (1<<w - 1))
			}
		}
		v[rng.IntN(blockSize)] = uint32(1<<w - 1)
		words := pack(nil, &v, w)
		if len(words) != int(2*w) {
			t.Fatalf("width %d: %d words", w, len(words))
		}
		if rest := unpack(append(words, 42), &got, w); got != v || len(rest) != 1 {
			t.Fatalf("width %d: unpacked %v, want %v", w, got[:4], v[:4])
		}
		// The same words as slot gaps: each slot is the one before plus
		// one plus its gap.
		var slots, want [blockSize]uint32
		next := uint32(rng.IntN(1 << 20))
		f := gapUnpackers[w]
		after := f(words[w:], slots[64:], f(words[:w], slots[:64], next))
		for i, g := range v {
			want[i] = next + g
			next = want[i] + 1
		}
		if slots != want || after != next {
			t.Fatalf("width %d: slots %v (next %d), want %v (next %d)", w, slots[:4], after, want[:4], next)
		}
	}
}

// Documents tying the k-th score are ranked by id, whichever slot they
// sit in: a bound equal to θ does not prune (copies of one document have
// bounds equal to their scores, the slack aside).
func TestPrunedSearchKeepsTiesByID(t *testing.T) {
	x := newImpactIndex()
	rng := rand.New(rand.NewPCG(5, 6))
	n := 3000
	for _, i := range rng.Perm(n) {
		f := fieldFreqs{title: map[string]int{"alpha": 1}, text: map[string]int{"alpha": 2, "beta": 1}}
		x.put(fmt.Sprintf("c%05d", i), "", nil, docLens{title: 1, text: 3}, f, nil)
	}
	for i := range 50 {
		x.put(fmt.Sprintf("o%02d", i), "", nil, docLens{text: 5}, fieldFreqs{text: map[string]int{"beta": 5}}, nil)
	}
	p := bm25Params{k1: 1.2, b: 0.75, titleWeight: 1}
	for _, q := range [][]string{{"alpha"}, {"alpha", "beta"}, {"beta"}} {
		for _, k := range []int{1, 10, 100} {
			got, err := x.search(context.Background(), q, k, "", spi.Filter{}, p)
			if err != nil {
				t.Fatal(err)
			}
			if want := x.searchExhaustive(q, k, "", spi.Filter{}, p); !slices.Equal(got, want) {
				t.Fatalf("%v k=%d:\npruned     %v\nexhaustive %v", q, k, got, want)
			}
		}
	}
	got, _ := x.search(context.Background(), []string{"alpha"}, 3, "", spi.Filter{}, p)
	if len(got) != 3 || got[0].ID != "c00000" || got[2].ID != "c00002" {
		t.Fatalf("alpha, k=3: %v, want c00000..c00002", got)
	}
}

// nextAllowed finds the first allowed slot from s below hi, across words.
func TestNextAllowed(t *testing.T) {
	allowed := []uint64{1 << 5, 0, 0, 1<<63 | 1<<2}
	for _, c := range []struct{ s, hi, want uint64 }{
		{0, 256, 5}, {5, 256, 5}, {6, 256, 194}, {6, 194, 194}, {6, 195, 194},
		{195, 256, 255}, {255, 256, 255}, {256, 300, 300}, {6, 100, 100},
	} {
		if got := nextAllowed(allowed, c.s, c.hi); got != c.want {
			t.Errorf("nextAllowed(from %d, below %d) = %d, want %d", c.s, c.hi, got, c.want)
		}
	}
}

// The rule between the two searches (fewCandidates): 100 candidates of
// 16,384 slots are looked up one by one when a filter scatters them over
// every range, and found in windows when they are a tenant's run of
// slots in one range, which the windows read alone; the answers are the
// exhaustive scorer's either way.
func TestFewCandidatesRule(t *testing.T) {
	x := newImpactIndex()
	x.rangeMin = 1024
	x.noBisect = true
	for i := range 16384 {
		tenant := "big"
		if i < 100 {
			tenant = "small"
		}
		var meta spi.Metadata
		if i%164 == 0 {
			meta = spi.Strings(map[string]string{"pick": "yes"})
		}
		x.put(fmt.Sprintf("d%05d", i), tenant, meta, docLens{text: 2 + i%7},
			fieldFreqs{text: map[string]int{"common": 1 + i%3, fmt.Sprintf("w%d", i%50): 1}}, nil)
	}
	x.waitRebuild() // the growth rebuilds the puts started
	x.stopSettle()
	x.rebuildNow() // the tenants' runs: small's 100 slots first, in one range
	p := bm25Params{k1: 1.2, b: 0.75, titleWeight: 1}
	tokens := []string{"common", "w7"}
	for _, tc := range []struct {
		name   string
		tenant string
		filter spi.Filter
		few    bool
	}{
		{"scattered filter", "", spi.StringFilter(map[string][]string{"pick": {"yes"}}), true},
		{"small tenant's run", "small", spi.Filter{}, false},
		{"every document", "", spi.Filter{}, false},
	} {
		x.mu.RLock()
		pl, ok := x.plan(tokens, tc.tenant, tc.filter, p, &searchState{})
		few := ok && x.fewCandidates(pl)
		x.mu.RUnlock()
		if !ok || few != tc.few || (tc.name != "every document" && pl.nAllowed != 100) {
			t.Fatalf("%s: plan %v, %d candidates, few %v; want 100 candidates, few %v", tc.name, ok, pl.nAllowed, few, tc.few)
		}
		got, err := x.search(context.Background(), tokens, 10, tc.tenant, tc.filter, p)
		if err != nil {
			t.Fatal(err)
		}
		if want := x.searchExhaustive(tokens, 10, tc.tenant, tc.filter, p); len(got) != 10 || !slices.Equal(got, want) {
			t.Fatalf("%s: %v, exhaustive %v", tc.name, got, want)
		}
	}
}
