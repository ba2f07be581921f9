package keyword

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
)

// Rebuilds of the postings: compaction of dead slots and the clustered
// order, and how a rebuild runs beside searches and writes.
//
// A rebuild renumbers the live slots in clustered order (clusterOrder)
// and rewrites every per-slot array, postings list and bitmap without the
// dead slots (compacted): about 13 s of CPU at 1,000,000 documents, and
// 4–5 s more for the bisection of the order (bisect.go) in the settle's.
// It runs on a goroutine of its own, in three steps, and no step makes a
// search wait, nor a write wait longer than one round of replay:
//
//  1. Freeze. The writer that finds a rebuild due (compactWhenDue), or
//     the settle timer (settleNow), holding wmu, so no
//     write runs, takes a frozen view of the slots (freeze).
//     Below their lengths the per-slot arrays, the ids (a put appends, a
//     removal unlinks: idtable.Table.Frozen) and the postings' blocks,
//     packed words and tails are never written again (writes only
//     append, and a sealed tail is replaced, not reused), so the view
//     copies their slice headers; what a write changes in place
//     (the alive bits, the versions a removal clears, each list's header)
//     it copies. From then on every write also appends itself to the
//     rebuild's log (rebuild.ops): a put with its slot and postings, a
//     removal with its slot.
//  2. Build. The goroutine builds the compacted copy from the frozen view,
//     holding no lock: searches read the live index and writes go on.
//  3. Catch up. It replays the log on the copy in rounds, each under wmu:
//     a write waits for at most one round. The first round replays up to
//     roundOps writes and each next one twice as many, so the log is
//     emptied even while writes keep coming faster than the rounds replay
//     them. A round that empties the log swaps the copy in under mu
//     before it releases wmu, so no write falls between the last one
//     replayed and the swap. A put is replayed as a new slot at the end
//     of the copy (in arrival order, as between rebuilds) and a removal
//     kills the copy's slot of the removed one (remap), in log order: the
//     copy then holds exactly the live index's documents, and the swap
//     takes df per term from the live index, whose statistics (counts,
//     lengths, df per tenant, dictionaries) every write kept current.
//
// A search holds mu for reading from its plan to its last window, so it
// answers from the index before the swap or after it, never a mix.

// roundOps is the most writes the first round of catch-up replays while
// writes wait (step 3 above); each next round replays twice as many.
const roundOps = 1024

// rebuild is a rebuild running beside writes. ops and post are appended
// by writes and read by the catch-up, both under wmu.
type rebuild struct {
	ops    []logOp
	post   []termFreq // the postings of the puts in ops
	done   chan struct{}
	cancel context.CancelFunc
	reason string
	start  time.Time
}

// logOp is one write the rebuild must replay: a put of the live index's
// slot (its postings are post[lo:hi]) or a removal (kill) of it.
type logOp struct {
	slot   uint32
	kill   bool
	lo, hi uint32
}

// termFreq is one posting of a logged put.
type termFreq struct {
	tid      uint32
	tfT, tfX uint16
}

// logPut and logKill record a write in the running rebuild's log, if any.
// The caller holds wmu.
func (x *impactIndex) logPut(slot uint32, lo int) {
	if x.rb != nil {
		x.rb.ops = append(x.rb.ops, logOp{slot: slot, lo: uint32(lo), hi: uint32(len(x.rb.post))})
	}
}

func (x *impactIndex) logKill(slot uint32) {
	if x.rb != nil {
		x.rb.ops = append(x.rb.ops, logOp{slot: slot, kill: true})
	}
}

// compactWhenDue starts a rebuild (compacted, in clustered order) once
// dead slots make up a quarter of the slots (and at least 1024), or once
// the slots appended since the last rebuild, in arrival order, make up a
// quarter of the slots ordered by it (and at least reorderMin), unless
// one runs. Short of that, once the slots in arrival order make up a
// thirty-second of all (and at least reorderMin), or the last rebuild
// did not bisect (settleDue), it arms the settle timer, which every later
// write pushes back, up to settleWithin after the settle became due: a
// collection whose writes pause for settleAfter is rebuilt then (settle),
// so that a bulk load ends in bisected clustered order instead of leaving
// up to a fifth of it in arrival order, which searches pay for until the
// collection grows by another quarter; one whose writes never pause, once
// settleWithin has passed. The caller holds wmu and not mu.
func (x *impactIndex) compactWhenDue() {
	switch {
	case x.rb != nil || x.stopped:
	case x.rebuildDue():
		reason := "grown by a quarter"
		if x.compactionDue() {
			reason = "dead slots"
		}
		x.startRebuild(reason, false)
	case x.settleDue():
		x.armSettle()
	}
}

// armSettle (re)arms the settle timer: settleAfter from now, but no
// later than settleWithin after the write that first found the settle due
// (settleWait), so that a collection whose writes never pause still gets
// the bisected order, one settle's rebuild per settleWithin at most. The
// caller holds wmu.
func (x *impactIndex) armSettle() {
	now := time.Now()
	if x.settleSince.IsZero() {
		x.settleSince = now
	}
	d := settleWait(x.settleSince, now, x.settleDelay(), x.settleMax())
	x.settleLate = d < x.settleDelay()
	if x.settle == nil {
		x.settle = time.AfterFunc(d, x.settleNow)
	} else {
		x.settle.Reset(d)
	}
}

// settleWait is how long from now the settle timer waits: after, unless
// the settle, due since since, would then have waited longer than within
// (0: no bound), in which case what is left of within.
func settleWait(since, now time.Time, after, within time.Duration) time.Duration {
	if within <= 0 {
		return after
	}
	return max(0, min(after, since.Add(within).Sub(now)))
}

// startRebuild freezes the slots and starts the rebuild's goroutine;
// reason is what its log line gives. Only the settle's rebuild bisects
// (clusterOrder): a rebuild due to growth or dead slots runs while writes
// go on, and at 1,000,000 documents the bisection would add about a
// third to it; the settle follows it once writes pause, or settleWithin
// after (settleDue). The caller holds wmu, and no rebuild runs.
func (x *impactIndex) startRebuild(reason string, bisect bool) {
	if x.settle != nil {
		x.settle.Stop()
	}
	x.settleSince = time.Time{}
	f := x.freeze()
	f.noBisect = x.noBisect || !bisect
	ctx, cancel := context.WithCancel(context.Background())
	rb := &rebuild{done: make(chan struct{}), cancel: cancel, reason: reason, start: time.Now()}
	x.rb = rb
	go x.runRebuild(ctx, f, rb)
}

func (x *impactIndex) rebuildDue() bool {
	unordered := x.slots() - x.ordered
	return x.compactionDue() || (unordered >= x.reorderAt() && 4*unordered >= x.ordered)
}

// compactionDue: dead slots are a quarter of the slots, and at least 1024.
func (x *impactIndex) compactionDue() bool {
	return x.dead >= 1024 && x.dead > x.slots()/4
}

// settleDue: the slots in arrival order are a thirty-second of all (and
// at least reorderMin), or the last rebuild did not bisect.
func (x *impactIndex) settleDue() bool {
	unordered := x.slots() - x.ordered
	return unordered >= x.reorderAt() && 32*unordered >= x.slots() || x.ordered > 0 && !x.bisected
}

// The settle's rebuild's reasons, in its log line: writes paused for
// settleAfter, or went on for settleWithin.
const (
	reasonSettle     = "writes paused"
	reasonSettleLate = "writes went on"
)

// settleAfter is how long writes must pause before a collection with a
// thirty-second of its slots in arrival order is rebuilt (compactWhenDue),
// unless Config.SettleAfter says otherwise. A pause this short ends most
// bulk loads; a loader pausing this long between batches pays a rebuild
// per thirty-second of growth at most. A variable so that this package's
// tests can lengthen it: a rebuild they did not ask for would race their
// hooks (settle_internal_test.go).
var settleAfter = DefaultSettleAfter

func (x *impactIndex) settleDelay() time.Duration {
	if x.settleAfter > 0 {
		return x.settleAfter
	}
	return settleAfter
}

// settleMax is the longest a due settle waits for writes to pause
// (Config.SettleWithin; negative: no bound).
func (x *impactIndex) settleMax() time.Duration {
	if x.settleWithin != 0 {
		return x.settleWithin
	}
	return DefaultSettleWithin
}

// settleNow is the settle timer's function: it starts the rebuild if it
// is still due and nothing stopped the index or started one meanwhile.
// Tests call it directly, in place of the timer.
func (x *impactIndex) settleNow() {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	x.settleSince = time.Time{}
	if x.rb == nil && !x.stopped && x.settleDue() {
		reason := reasonSettle
		if x.settleLate {
			reason = reasonSettleLate
		}
		x.startRebuild(reason, true)
	}
}

// rebuildNow rebuilds on the caller's goroutine: at load, before the
// index is shared (and in benchmarks). The caller holds wmu (or is the
// index's only user) and not mu.
func (x *impactIndex) rebuildNow() {
	c, _, _ := x.compacted(context.Background())
	x.mu.Lock()
	x.swap(c)
	x.mu.Unlock()
}

// runRebuild is the rebuild's goroutine: build from the frozen view f,
// then catch up and swap (steps 2 and 3 above).
func (x *impactIndex) runRebuild(ctx context.Context, f *impactIndex, rb *rebuild) {
	defer close(rb.done)
	defer rb.cancel()
	x.hook("start")
	c, remap, err := f.compacted(ctx)
	f = nil
	x.hook("built")
	for next, size := 0, x.roundSize(); ; size *= 2 {
		x.wmu.Lock()
		if err != nil || ctx.Err() != nil {
			x.rb = nil
			x.wmu.Unlock()
			return
		}
		end := min(len(rb.ops), next+size)
		for _, op := range rb.ops[next:end] {
			if op.kill {
				c.replayKill(remap[op.slot])
				continue
			}
			for int(op.slot) >= len(remap) {
				remap = append(remap, 0)
			}
			remap[op.slot] = c.replayPut(x, op.slot, rb.post[op.lo:op.hi])
		}
		next = end
		if next == len(rb.ops) {
			x.mu.Lock()
			x.swap(c)
			x.mu.Unlock()
			live, replayed := x.live, len(rb.ops)
			x.rb = nil
			if !x.stopped && x.settleDue() {
				x.armSettle() // the writes may have ended before this rebuild did
			}
			x.wmu.Unlock()
			if x.log != nil {
				x.log.Info("keyword: postings rebuilt in clustered order", "reason", rb.reason,
					"documents", live, "writes_replayed", replayed, "elapsed", time.Since(rb.start))
			}
			return
		}
		x.wmu.Unlock()
		x.hook("round")
	}
}

func (x *impactIndex) roundSize() int {
	if x.roundOps > 0 {
		return x.roundOps
	}
	return roundOps
}

func (x *impactIndex) hook(stage string) {
	if x.rebuildHook != nil {
		x.rebuildHook(stage)
	}
}

// stopRebuild cancels a running rebuild and waits for its goroutine to
// end, and stops the settle timer: no rebuild starts after it. The index
// stays as it was. The caller holds neither lock.
func (x *impactIndex) stopRebuild() {
	x.wmu.Lock()
	x.stopped = true
	if x.settle != nil {
		x.settle.Stop()
	}
	rb := x.rb
	x.wmu.Unlock()
	if rb != nil {
		rb.cancel()
		<-rb.done
	}
}

// freeze returns a view of the slots as they are, for a rebuild to read
// without a lock while writes go on (step 1 above): the fields compacted
// and clusterOrder read. The caller holds wmu.
func (x *impactIndex) freeze() *impactIndex {
	return &impactIndex{
		ids:    x.ids.Frozen(),
		tenant: x.tenant, lens: x.lens,
		verTag: slices.Clone(x.verTag), verSeq: slices.Clone(x.verSeq),
		metaOff: x.metaOff, metaIDs: x.metaIDs,
		alive: slices.Clone(x.alive),
		post:  slices.Clone(x.post),
		tBits: make([]*roaring.Bitmap, len(x.tBits)), pairBits: make([]*roaring.Bitmap, len(x.pairBits)),
		live: x.live,
	}
}

// swap puts the rebuilt copy c in place of the per-slot arrays, postings
// and bitmaps; df per term comes from the live index (c's are the frozen
// view's). The caller holds wmu and mu.
func (x *impactIndex) swap(c *impactIndex) {
	for len(c.post) < len(x.post) {
		c.post = append(c.post, postings{})
	}
	for tid := range c.post {
		c.post[tid].df = x.post[tid].df
	}
	c.growBitmaps(x)
	x.ids, x.tenant, x.lens = c.ids, c.tenant, c.lens
	x.verTag, x.verSeq, x.metaOff, x.metaIDs, x.alive = c.verTag, c.verSeq, c.metaOff, c.metaIDs, c.alive
	x.post, x.tBits, x.pairBits = c.post, c.tBits, c.pairBits
	x.dead, x.ordered, x.bisected = c.dead, c.ordered, c.bisected
	x.states = sync.Pool{} // states sized for the old slot count
}

// growBitmaps adds empty bitmaps for the tenants and pairs x made since
// c was frozen.
func (c *impactIndex) growBitmaps(x *impactIndex) {
	for len(c.tBits) < len(x.tBits) {
		c.tBits = append(c.tBits, roaring.New())
	}
	for len(c.pairBits) < len(x.pairBits) {
		c.pairBits = append(c.pairBits, roaring.New())
	}
}

// replayPut appends to the copy c the live index x's slot s, put after c
// was frozen, with its postings; it returns c's slot. The caller holds
// x's wmu.
func (c *impactIndex) replayPut(x *impactIndex, s uint32, post []termFreq) uint32 {
	ns := uint32(c.ids.AppendBytes(x.ids.Bytes(int(s))))
	t := x.tenant[s]
	c.tenant, c.lens = append(c.tenant, t), append(c.lens, x.lens[s])
	c.verTag, c.verSeq = append(c.verTag, x.verTag[s]), append(c.verSeq, x.verSeq[s])
	c.growBitmaps(x)
	for _, p := range x.metaIDs[x.metaOff[s]:x.metaOff[s+1]] {
		c.metaIDs = append(c.metaIDs, p)
		c.pairBits[p].Add(ns)
	}
	c.metaOff = append(c.metaOff, uint32(len(c.metaIDs)))
	c.tBits[t].Add(ns)
	if int(ns>>6) >= len(c.alive) {
		c.alive = append(c.alive, 0)
	}
	c.alive[ns>>6] |= 1 << (ns & 63)
	for _, e := range post {
		for int(e.tid) >= len(c.post) {
			c.post = append(c.post, postings{})
		}
		c.post[e.tid].add(posting{ns, e.tfT, e.tfX}, c.lens)
	}
	return ns
}

// replayKill kills the copy's live slot ns (a removal after c was
// frozen). Its postings stay, dead, as in the live index.
func (c *impactIndex) replayKill(ns uint32) {
	c.ids.Unlink(int(ns))
	c.alive[ns>>6] &^= 1 << (ns & 63)
	c.tBits[c.tenant[ns]].Remove(ns)
	for _, p := range c.metaIDs[c.metaOff[ns]:c.metaOff[ns+1]] {
		c.pairBits[p].Remove(ns)
	}
	c.verTag[ns], c.verSeq[ns] = 0, 0
	c.dead++
}

// reorderMin is the fewest slots appended in arrival order that make a
// rebuild in clustered order due (compactWhenDue).
const reorderMin = 1 << 14

func (x *impactIndex) reorderAt() int {
	if x.reorderMin > 0 {
		return x.reorderMin
	}
	return reorderMin
}

// compacted returns the live slots renumbered in clustered order
// (clusterOrder), with every postings list and bitmap rebuilt without the
// dead ones, in new arrays, and the new slot of each old live slot.
// Statistics, term ids, tenants and pairs keep their numbers; df per term
// is x's. x is the index with no writer running, or a frozen view of it.
// A done ctx stops it with ctx's error.
func (x *impactIndex) compacted(ctx context.Context) (*impactIndex, []uint32, error) {
	n := x.live
	c := &impactIndex{
		tenant: make([]uint32, 0, n), lens: make([]docLen, 0, n),
		verTag: make([]uint32, 0, n), verSeq: make([]uint64, 0, n), metaOff: make([]uint32, 1, n+1),
		alive: make([]uint64, (n+63)/64), post: make([]postings, len(x.post)),
		tBits: make([]*roaring.Bitmap, len(x.tBits)), pairBits: make([]*roaring.Bitmap, len(x.pairBits)),
		ordered: n, bisected: !x.noBisect,
	}
	c.ids.Reserve(n, x.ids.IDBytes()*n/max(1, x.slots()))
	for i := range c.tBits {
		c.tBits[i] = roaring.New()
	}
	for i := range c.pairBits {
		c.pairBits[i] = roaring.New()
	}
	order, err := x.clusterOrder(ctx)
	if err != nil {
		return nil, nil, err
	}
	remap := make([]uint32, x.slots())
	for _, s := range order {
		ns := uint32(c.ids.AppendBytes(x.ids.Bytes(int(s))))
		remap[s] = ns
		t := x.tenant[s]
		c.tenant, c.lens = append(c.tenant, t), append(c.lens, x.lens[s])
		c.verTag, c.verSeq = append(c.verTag, x.verTag[s]), append(c.verSeq, x.verSeq[s])
		for _, p := range x.metaIDs[x.metaOff[s]:x.metaOff[s+1]] {
			c.metaIDs = append(c.metaIDs, p)
			c.pairBits[p].Add(ns)
		}
		c.metaOff = append(c.metaOff, uint32(len(c.metaIDs)))
		c.tBits[t].Add(ns)
		c.alive[ns>>6] |= 1 << (ns & 63)
	}
	var buf []posting
	for tid := range x.post {
		if tid%256 == 255 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		p := &x.post[tid]
		q := &c.post[tid]
		q.df = p.df
		q.data = make([]uint64, 0, len(p.data)*int(p.df)/max(1, p.count()))
		buf = buf[:0]
		p.each(func(e posting) {
			if x.isAlive(e.slot) {
				e.slot = remap[e.slot]
				buf = append(buf, e)
			}
		})
		slices.SortFunc(buf, func(a, b posting) int { return cmp.Compare(a.slot, b.slot) })
		for _, e := range buf {
			q.add(e, c.lens)
		}
		q.trim()
	}
	for _, b := range c.tBits {
		b.RunOptimize()
	}
	for _, b := range c.pairBits {
		b.RunOptimize()
	}
	return c, remap, nil
}

// clusterOrder returns the live slots in an order that puts documents
// sharing their distinctive terms next to each other, so that a term's
// blocks hold documents of similar scores and block bounds separate them
// (document reordering: recursive graph bisection over a sample, then
// each slot beside its nearest sample document, bisect.go). Only terms
// held by at least two live documents and at most an eighth of them
// count (rare terms group nothing, common ones group everything), and of
// those each slot keeps its keepTerms rarest (fewest documents first,
// ties by a hash of the term). Slots sort by tenant, then by their
// nearest sample document's place, then by their rarest term, their
// second rarest, the least hash over their terms (MinHash), and slot.
// Each tenant's slots are one run, so a search restricted to a tenant
// skips the others' (prune skips slots no candidate holds). x as for
// compacted.
func (x *impactIndex) clusterOrder(ctx context.Context) ([]uint32, error) {
	const none = math.MaxUint32
	hi := int32(max(2, x.live/8))
	type rank struct {
		tid uint32
		df  int32
		h   uint64
	}
	var rs []rank
	for tid := range x.post {
		if df := x.post[tid].df; df >= 2 && df <= hi {
			rs = append(rs, rank{uint32(tid), df, mix64(uint64(tid) + 1)})
		}
	}
	slices.SortFunc(rs, func(a, b rank) int {
		if a.df != b.df {
			return cmp.Compare(a.df, b.df)
		}
		return cmp.Compare(a.h, b.h)
	})
	n := x.slots()
	keep := keepTerms
	if x.noBisect {
		keep = 2 // the key's two rarest: a rebuild for growth needs no more
	}
	f := newSlotTerms(n, keep)
	minh := make([]uint32, n)
	for i := range minh {
		minh[i] = none
	}
	for r, t := range rs {
		if r%256 == 255 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		h := uint32(t.h >> 32)
		x.post[t.tid].each(func(e posting) {
			f.add(e.slot, uint32(r))
			minh[e.slot] = min(minh[e.slot], h)
		})
	}
	rarest := func(s uint32, i int) uint32 {
		if t := f.of(s); i < len(t) {
			return t[i]
		}
		return none
	}
	order := make([]uint32, 0, x.live)
	for s := range uint32(n) {
		if x.isAlive(s) {
			order = append(order, s)
		}
	}
	byTerms := func(a, b uint32) int {
		for i := range 2 {
			if c := cmp.Compare(rarest(a, i), rarest(b, i)); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(minh[a], minh[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
	var near []uint32
	if !x.noBisect {
		var err error
		near, err = bisectKeys(ctx, f, order, cmp.Or(x.bisectMax, sampleSize(x.live)), len(rs), byTerms, func(r uint32) float64 {
			return math.Log(float64(x.live) / float64(rs[r].df))
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(order, func(a, b uint32) int {
		if c := cmp.Compare(x.tenant[a], x.tenant[b]); c != 0 {
			return c
		}
		if near != nil {
			if c := cmp.Compare(near[a], near[b]); c != 0 {
				return c
			}
		}
		return byTerms(a, b)
	})
	return order, nil
}

// mix64 is SplitMix64's finaliser: a well-spread 64-bit hash of v.
func mix64(v uint64) uint64 {
	v += 0x9e3779b97f4a7c15
	v = (v ^ v>>30) * 0xbf58476d1ce4e5b9
	v = (v ^ v>>27) * 0x94d049bb133111eb
	return v ^ v>>31
}
