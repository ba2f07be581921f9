package keyword

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/document"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/ragd/ragd/internal/idtable"
	"github.com/ragd/ragd/spi"
)

// The in-memory postings of plain-text search, and its scoring.
//
// bleve stays the index of record: documents, analysis, stored fields,
// query-string (Syntax) searches, persistence. But its searchers walk a
// heap of per-term iterators and build a DocumentMatch for every matching
// document, so a plain-text query costs in proportion to all its matches.
// This index keeps, per term, the documents holding it with their title
// and text frequencies in compressed blocks with score bounds
// (postings.go), and per document its field lengths, tenant, metadata and
// version in flat arrays, so a query visits only the blocks whose bound
// can still beat the k-th best score found (prune.go).
//
// Scoring is Lucene's BM25, not bleve's. bleve's own BM25 takes
// sqrt(freq) as the term frequency, multiplies every term's score by its
// idf a second time (through the query weight), and multiplies a
// disjunction by coord = matched clauses / all clauses. Here each (term,
// field) pair scores as Lucene's BM25Similarity does,
//
//	qtf · w_field · idf · f / (f + k1 · (1 − b + b · len / avglen))
//	idf = ln(1 + (N − df + 0.5) / (df + 0.5))
//
// summed over the query's distinct terms and the two fields, as Lucene's
// and Elasticsearch's multi-field "most_fields" search does. qtf is the
// term's count in the query, w_field the field weight (text 1, title
// Config.TitleBoost), len the field's analysed token count (stats.go) and
// avglen its exact average. N is the number of live documents, df the live
// documents containing the term in any field (a document-level idf, as in
// BM25F). For a query restricted to a tenant, N, df and the averages are
// counted over that tenant's live documents only, so its scores never
// depend on other tenants' documents; for a query without a tenant, over
// every live document. Metadata filters restrict the candidates only.
//
// It is built from the bleve index at open (postings walked term by term,
// stored fields read once per document) and updated after every committed
// batch, under the store's writer lock. A document's slot is never reused:
// replacing or deleting it marks the old slot dead. A rebuild (compaction)
// drops the dead slots and renumbers the live ones in clustered order
// (similar documents in neighbouring slots, so block bounds are tight)
// once dead slots make up a quarter of the slots, or the slots appended
// since the last rebuild a quarter of those it ordered, and after the
// load at open; it builds the copy on a goroutine of its own while
// searches and writes go on, replays the writes made meanwhile and swaps
// it in (reorder.go).
//
// Invariants (checkInvariants in the tests checks each after every
// operation of the model test):
//   - every per-slot array (tenant, lens, verTag, verSeq, and
//     metaOff less one) has one entry per slot, ids one entry per slot
//     (internal/idtable: slot s's id is entry s, linked while s is live),
//     and alive has a bit per slot (bits past the last slot are 0);
//   - live is the number of set alive bits, dead the rest of the slots;
//     tLive, tTotT, tTotX are the live count and length totals per tenant
//     and totT, totX their sums;
//   - ids finds exactly the live slots (and holds its own invariant); tBits[t] holds exactly tenant t's
//     live slots and pairBits[p] exactly the live slots holding pair p;
//   - post[tid].df is the number of live slots whose document holds the
//     term, and tdf[t<<32|tid] the same for tenant t's (absent when 0);
//   - each postings list holds every live slot holding its term (and may
//     hold dead ones), with bounds that dominate its postings;
//   - ordered ≤ the number of slots, and tenant[:ordered] ascends (a
//     rebuild orders slots by tenant first); while a rebuild runs (rb),
//     its log holds every write since its frozen view, in order.
type impactIndex struct {
	// wmu serialises the index's writers (put, remove, apply) and a
	// rebuild's catch-up (reorder.go); taken before mu. mu guards what
	// searches read: held for reading by a search, for writing by a
	// write's changes and a rebuild's swap.
	wmu sync.Mutex
	mu  sync.RWMutex

	// per slot
	ids     idtable.Table
	tenant  []uint32
	lens    []docLen
	verTag  []uint32 // index in tags of the version's log tag; 0: no version
	verSeq  []uint64
	metaOff []uint32 // slot s's metadata pairs are metaIDs[metaOff[s]:metaOff[s+1]]
	metaIDs []uint32
	alive   []uint64 // bit s: slot s is live

	termIdx map[string]uint32
	post    []postings
	tdf     map[uint64]int32 // tenant<<32 | term id -> live documents of the tenant holding it

	tenants map[string]uint32
	// per tenant id: live documents and field length totals, the
	// statistics of a query restricted to the tenant, and its live slots
	tLive        []int
	tTotT, tTotX []int64
	tBits        []*roaring.Bitmap

	pairs    map[pair]uint32
	pairBits []*roaring.Bitmap
	pairVal  []spi.Value             // pair p's scalar (zero for a presence pair)
	keyPairs map[string]*sortedPairs // each key's number and time pairs in value order, for ranges

	tags     map[[8]byte]uint32
	tagOf    [][8]byte // tagOf[0] is unused (no version)
	live     int
	dead     int
	ordered  int  // slots [0, ordered) are in the clustered order of the last rebuild
	bisected bool // and that rebuild bisected (clusterOrder)

	totT   int64
	totX   int64
	states sync.Pool // *searchState

	rb           *rebuild      // a rebuild running beside writes (reorder.go); guarded by wmu
	settle       *time.Timer   // starts a rebuild once writes pause or settleWithin passes (armSettle); guarded by wmu
	stopped      bool          // no rebuild starts any more (stopRebuild); guarded by wmu
	settleAfter  time.Duration // Config.SettleAfter, tests: overrides settleAfter when > 0
	settleWithin time.Duration // Config.SettleWithin: 0 DefaultSettleWithin, < 0 no bound
	settleSince  time.Time     // when the armed settle became due (armSettle); guarded by wmu
	settleLate   bool          // the armed timer fires at settleWithin, not after a pause; guarded by wmu
	log          *slog.Logger  // where a rebuild beside writes says it is done; nil: nowhere
	reorderMin   int           // tests: overrides reorderMin when > 0
	roundOps     int           // tests: overrides roundOps when > 0
	parallelMin  int           // tests: overrides parallelMin when > 0
	candidates   int           // tests and benchmarks: 1 always searchCandidates, -1 never, 0 fewCandidates decides
	rangeMin     int           // tests: overrides rangeSlots when > 0 (a multiple of 64)
	minWin       int           // tests: overrides minWindow when > 0
	noBisect     bool          // clusterOrder leaves the bisection out: a growth rebuild's frozen view (startRebuild), tests, benchmarks
	bisectMax    int           // tests: overrides bisectSample when > 0

	rebuildHook func(stage string) // tests: runs on a rebuild's goroutine before it builds ("start"), once built ("built") and between rounds ("round")
	searchHook  func()             // tests: runs inside a search, after its first window
	writeHook   func()             // tests: runs as a write is about to take the write lock
}

// pair is one metadata key with one value's spi.Value.EqualityKey, or
// with "" for the key's presence: a slot holds the pairs rowPairs gives
// its metadata.
type pair struct{ key, val string }

// rowPairs returns the pairs metadata md holds (each once), with the
// scalar each equality pair stands for.
func rowPairs(md spi.Metadata) map[pair]spi.Value {
	out := make(map[pair]spi.Value, 2*len(md))
	for k, v := range md {
		out[pair{k, ""}] = spi.Value{}
		for _, it := range v.Scalars() {
			out[pair{k, it.EqualityKey()}] = it
		}
	}
	return out
}

// sortedPairs is one key's pairs holding numbers and those holding times,
// each ascending by value (spi.Compare). Pairs are never dropped (their
// bitmaps may empty), so it only grows, like pairs.
type sortedPairs struct {
	nums, times []uint32
}

func (sp *sortedPairs) slot(v spi.Value) *[]uint32 {
	if v.Kind() == spi.KindTime {
		return &sp.times
	}
	return &sp.nums
}

// search returns the index of the first pair of ids whose value is not
// below v.
func searchPairs(ids []uint32, vals []spi.Value, v spi.Value) int {
	return sort.Search(len(ids), func(i int) bool {
		c, _ := spi.Compare(vals[ids[i]], v)
		return c >= 0
	})
}

func (sp *sortedPairs) insert(vals []spi.Value, p uint32) {
	sl := sp.slot(vals[p])
	*sl = slices.Insert(*sl, searchPairs(*sl, vals, vals[p]), p)
}

// inRange returns the pairs whose value satisfies op against v.
func (sp *sortedPairs) inRange(vals []spi.Value, op spi.CmpOp, v spi.Value) []uint32 {
	sl := *sp.slot(v)
	ge := searchPairs(sl, vals, v)
	gt := ge
	if gt < len(sl) {
		if c, _ := spi.Compare(vals[sl[gt]], v); c == 0 {
			gt++
		}
	}
	switch op {
	case spi.OpGt:
		return sl[gt:]
	case spi.OpGte:
		return sl[ge:]
	case spi.OpLt:
		return sl[:ge]
	}
	return sl[:gt]
}

func newImpactIndex() *impactIndex {
	return &impactIndex{
		metaOff: []uint32{0},
		termIdx: map[string]uint32{}, tdf: map[uint64]int32{},
		tenants: map[string]uint32{"": 0}, tLive: []int{0}, tTotT: []int64{0}, tTotX: []int64{0},
		tBits: []*roaring.Bitmap{roaring.New()}, pairs: map[pair]uint32{}, keyPairs: map[string]*sortedPairs{},
		tags: map[[8]byte]uint32{}, tagOf: [][8]byte{{}},
	}
}

// fieldFreqs is a document's analysed term frequencies in title and text;
// or, for a removed document of a lean index (terms.go), the ids of its
// distinct terms in tids.
type fieldFreqs struct {
	title, text map[string]int
	tids        []uint32
}

// terms calls fn with each distinct term of f once.
func (f fieldFreqs) terms(fn func(string)) {
	for t := range f.title {
		fn(t)
	}
	for t := range f.text {
		if _, both := f.title[t]; !both {
			fn(t)
		}
	}
}

func (x *impactIndex) slots() int { return x.ids.Len() }

func (x *impactIndex) isAlive(s uint32) bool { return x.alive[s>>6]&(1<<(s&63)) != 0 }

// docLen is a slot's title and text lengths, side by side: a search
// scoring a slot reads both, from one cache line.
type docLen struct{ t, x uint32 }

func tdfKey(t, tid uint32) uint64 { return uint64(t)<<32 | uint64(tid) }

// put adds or replaces a document. old is the replaced document's
// analysed terms, when the caller has them (nil: found in the postings,
// slowly). The caller holds no lock of the index.
func (x *impactIndex) put(id, tenant string, meta spi.Metadata, lens docLens, f fieldFreqs, old *fieldFreqs) {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	if x.writeHook != nil {
		x.writeHook()
	}
	x.mu.Lock()
	x.putLocked(id, tenant, meta, lens, nil, f, old)
	x.mu.Unlock()
	x.compactWhenDue()
}

func (x *impactIndex) putLocked(id, tenant string, meta spi.Metadata, lens docLens, ver []byte, f fieldFreqs, old *fieldFreqs) {
	x.removeLocked(id, old)
	slot := uint32(x.ids.Append(id))
	t, ok := x.tenants[tenant]
	if !ok {
		t = uint32(len(x.tLive))
		x.tenants[tenant] = t
		x.tLive, x.tTotT, x.tTotX = append(x.tLive, 0), append(x.tTotT, 0), append(x.tTotX, 0)
		x.tBits = append(x.tBits, roaring.New())
	}
	lt, lx := uint32(min(lens.title, math.MaxUint32)), uint32(min(lens.text, math.MaxUint32))
	x.tLive[t]++
	x.tTotT[t] += int64(lt)
	x.tTotX[t] += int64(lx)
	x.tBits[t].Add(slot)
	x.tenant = append(x.tenant, t)
	x.lens = append(x.lens, docLen{lt, lx})
	tag, seq := x.version(ver)
	x.verTag, x.verSeq = append(x.verTag, tag), append(x.verSeq, seq)
	for pk, v := range rowPairs(meta) {
		p, ok := x.pairs[pk]
		if !ok {
			p = uint32(len(x.pairBits))
			x.pairs[pk] = p
			x.pairBits = append(x.pairBits, roaring.New())
			x.pairVal = append(x.pairVal, v)
			if pk.val != "" && (v.IsNumber() || v.Kind() == spi.KindTime) {
				sp := x.keyPairs[pk.key]
				if sp == nil {
					sp = &sortedPairs{}
					x.keyPairs[pk.key] = sp
				}
				sp.insert(x.pairVal, p)
			}
		}
		x.pairBits[p].Add(slot)
		x.metaIDs = append(x.metaIDs, p)
	}
	x.metaOff = append(x.metaOff, uint32(len(x.metaIDs)))
	if int(slot>>6) >= len(x.alive) {
		x.alive = append(x.alive, 0)
	}
	x.alive[slot>>6] |= 1 << (slot & 63)
	x.live++
	x.totT += int64(lt)
	x.totX += int64(lx)
	lo := 0
	if x.rb != nil {
		lo = len(x.rb.post)
	}
	f.terms(func(term string) {
		tid := x.termID(term)
		e := posting{slot, cap16(f.title[term]), cap16(f.text[term])}
		x.post[tid].add(e, x.lens)
		x.post[tid].df++
		x.tdf[tdfKey(t, tid)]++
		if x.rb != nil {
			x.rb.post = append(x.rb.post, termFreq{tid, e.tfT, e.tfX})
		}
	})
	x.logPut(slot, lo)
}

func (x *impactIndex) termID(term string) uint32 {
	tid, ok := x.termIdx[term]
	if !ok {
		tid = uint32(len(x.post))
		x.termIdx[term] = tid
		x.post = append(x.post, postings{})
	}
	return tid
}

// version splits a change-log version field (apply.go: 8-byte log tag,
// 8-byte big-endian version) into a tag index and the version; any other
// value reads as no version, as tagged() reads it.
func (x *impactIndex) version(v []byte) (uint32, uint64) {
	if len(v) != 16 {
		return 0, 0
	}
	tag := [8]byte(v[:8])
	i, ok := x.tags[tag]
	if !ok {
		i = uint32(len(x.tagOf))
		x.tags[tag] = i
		x.tagOf = append(x.tagOf, tag)
	}
	return i, binary.BigEndian.Uint64(v[8:])
}

func cap16(n int) uint16 { return uint16(min(n, math.MaxUint16)) }

// apply mirrors a committed batch: documents as buildDoc built them, and
// deleted ids. gone holds the analysed terms of the live documents the
// batch replaces or deletes, by id (an id missing is found in the
// postings, slowly). The caller serialises writes (the store's writer
// lock), so gone describes the index as this apply finds it.
func (x *impactIndex) apply(docs []spi.Document, built []*document.Document, lens []docLens, vers [][]byte, del []string, gone map[string]fieldFreqs) {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	if x.writeHook != nil {
		x.writeHook()
	}
	x.mu.Lock()
	for i, d := range docs {
		var old *fieldFreqs
		if f, ok := gone[d.ID]; ok {
			old = &f
		}
		x.putLocked(d.ID, d.Tenant, d.Metadata, lens[i], vers[i], freqsOf(built[i]), old)
	}
	for _, id := range del {
		var old *fieldFreqs
		if f, ok := gone[id]; ok {
			old = &f
		}
		x.removeLocked(id, old)
	}
	x.mu.Unlock()
	x.compactWhenDue()
}

// remove deletes a document if present; old as for put.
func (x *impactIndex) remove(id string, old *fieldFreqs) {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	if x.writeHook != nil {
		x.writeHook()
	}
	x.mu.Lock()
	x.removeLocked(id, old)
	x.mu.Unlock()
	x.compactWhenDue()
}

// has reports whether id is live.
func (x *impactIndex) has(id string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	_, ok := x.ids.Lookup(id)
	return ok
}

func (x *impactIndex) removeLocked(id string, old *fieldFreqs) {
	e, ok := x.ids.Lookup(id)
	if !ok {
		return
	}
	slot := uint32(e)
	t := x.tenant[slot]
	dropTerm := func(tid uint32) {
		x.post[tid].df--
		k := tdfKey(t, tid)
		if x.tdf[k]--; x.tdf[k] <= 0 {
			delete(x.tdf, k)
		}
	}
	if old != nil && old.tids != nil {
		for _, tid := range old.tids {
			dropTerm(tid)
		}
	} else if old != nil {
		old.terms(func(term string) {
			if tid, ok := x.termIdx[term]; ok {
				dropTerm(tid)
			}
		})
	} else {
		for _, tid := range x.termsOf(slot) {
			dropTerm(tid)
		}
	}
	x.logKill(slot)
	x.ids.Unlink(e)
	x.alive[slot>>6] &^= 1 << (slot & 63)
	x.live--
	x.dead++
	x.totT -= int64(x.lens[slot].t)
	x.totX -= int64(x.lens[slot].x)
	x.tLive[t]--
	x.tTotT[t] -= int64(x.lens[slot].t)
	x.tTotX[t] -= int64(x.lens[slot].x)
	x.tBits[t].Remove(slot)
	for _, p := range x.metaIDs[x.metaOff[slot]:x.metaOff[slot+1]] {
		x.pairBits[p].Remove(slot)
	}
	x.verTag[slot], x.verSeq[slot] = 0, 0
}

// termsOf finds the terms whose postings hold slot, by looking up slot in
// every list: the fallback of a removal whose caller did not supply the
// document's terms (writeBatch always does).
func (x *impactIndex) termsOf(slot uint32) []uint32 {
	var out []uint32
	var slots, tfT, tfX [blockSize]uint32
	for tid := range x.post {
		p := &x.post[tid]
		if n := len(p.tail); n > 0 && p.tail[0].slot <= slot {
			for _, e := range p.tail {
				if e.slot == slot {
					out = append(out, uint32(tid))
				}
			}
			continue
		}
		lo, hi := 0, len(p.blocks)
		for lo < hi {
			m := (lo + hi) / 2
			if p.blocks[m].last < slot {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if lo == len(p.blocks) {
			continue
		}
		p.decode(lo, &slots, &tfT, &tfX)
		for _, s := range slots {
			if s == slot {
				out = append(out, uint32(tid))
			}
		}
	}
	return out
}

// versionOf returns live document id's version field (nil when it was
// written outside the change log) and whether the document is live.
func (x *impactIndex) versionOf(id string) ([]byte, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	e, ok := x.ids.Lookup(id)
	if !ok {
		return nil, false
	}
	slot := uint32(e)
	if x.verTag[slot] == 0 {
		return nil, true
	}
	tag := x.tagOf[x.verTag[slot]]
	return binary.BigEndian.AppendUint64(tag[:], x.verSeq[slot]), true
}

// bm25Params are the scoring settings of a search.
type bm25Params struct {
	k1, b, titleWeight float64
}

// saturate is one field's part of a term's score in a document, before
// idf and qtf: w · f / (f + a + c · len), 0 for a field without the term
// or of weight 0.
func saturate(tf uint32, w, a, c float64, l uint32) float64 {
	if f := float64(tf); f > 0 && w > 0 {
		return w * f / (f + a + c*float64(l))
	}
	return 0
}

// loadImpact builds the postings from a bleve index: every live document's
// tenant, metadata and lengths from its stored fields, then the title and
// text postings, term by term.
func loadImpact(ctx context.Context, idx bleve.Index) (*impactIndex, error) {
	adv, err := idx.Advanced()
	if err != nil {
		return nil, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	x := newImpactIndex()
	n, err := r.DocCount()
	if err != nil {
		return nil, err
	}
	slots := newSlotTable(n)
	dr, err := r.DocIDReaderAll()
	if err != nil {
		return nil, err
	}
	defer dr.Close()
	for {
		iid, err := dr.Next()
		if err != nil {
			return nil, err
		}
		if iid == nil {
			break
		}
		if x.slots()%1024 == 1023 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		ext, err := r.ExternalID(iid)
		if err != nil {
			return nil, err
		}
		doc, err := r.Document(ext)
		if err != nil || doc == nil {
			return nil, fmt.Errorf("document %q: %v", ext, err)
		}
		var tenant string
		var meta spi.Metadata
		var lens docLens
		var ver []byte
		var bad []string
		doc.VisitFields(func(f index.Field) {
			switch f.Name() {
			case fieldVersion:
				ver = append([]byte(nil), f.Value()...)
			case fieldTenant:
				tenant = string(f.Value())
			case fieldMetaJSON:
				if err := json.Unmarshal(f.Value(), &meta); err != nil {
					bad = append(bad, fmt.Sprintf("metadata: %v", err))
				}
			case fieldLens:
				var ok bool
				if lens, ok = parseLens(f.Value()); !ok {
					bad = append(bad, fmt.Sprintf("field lengths %q", f.Value()))
				}
			}
		})
		if len(bad) > 0 {
			// Scores would silently use wrong lengths and filters miss
			// the document: the index is damaged (OpenOrRebuild rebuilds it).
			return nil, fmt.Errorf("document %q: %s", ext, strings.Join(bad, "; "))
		}
		slots.set(internalKey(iid), int32(x.slots()))
		x.putLocked(ext, tenant, meta, lens, ver, fieldFreqs{}, nil)
	}
	// Postings, per field, in internal-id order (which is slot order): the
	// title's kept until the text's of the same term are merged with them.
	titles := map[string][]slotFreq{}
	err = walkPostings(ctx, r, fieldTitle, slots, func(term string, ps []slotFreq) { titles[term] = ps })
	if err != nil {
		return nil, err
	}
	err = walkPostings(ctx, r, fieldText, slots, func(term string, ps []slotFreq) {
		x.addPostings(term, titles[term], ps)
		delete(titles, term)
	})
	if err != nil {
		return nil, err
	}
	for term, ps := range titles {
		x.addPostings(term, ps, nil)
	}
	if x.rebuildDue() {
		x.rebuildNow() // slots in clustered order, once there are enough
	}
	return x, nil
}

type slotFreq struct {
	slot int32
	tf   uint16
}

// slotTable maps the index's internal document numbers to slots while
// loading: a lookup a posting. Scorch numbers its documents from 0 across
// its segments, deleted ones included, so the numbers below a few times
// the live documents are an array (a map of 1,000,000 entries took 28 %
// of the load's CPU in its lookups); any number beyond, a map.
type slotTable struct {
	dense  []int32 // -1: no slot
	sparse map[uint64]int32
	limit  uint64
}

func newSlotTable(docs uint64) *slotTable {
	return &slotTable{dense: make([]int32, 0, docs), sparse: map[uint64]int32{}, limit: 4*docs + 1024}
}

func (t *slotTable) set(k uint64, slot int32) {
	if k >= t.limit {
		t.sparse[k] = slot
		return
	}
	for uint64(len(t.dense)) <= k {
		t.dense = append(t.dense, -1)
	}
	t.dense[k] = slot
}

func (t *slotTable) get(k uint64) (int32, bool) {
	if k < uint64(len(t.dense)) {
		s := t.dense[k]
		return s, s >= 0
	}
	s, ok := t.sparse[k]
	return s, ok
}

// walkPostings calls fn with each term of field and its postings.
func walkPostings(ctx context.Context, r index.IndexReader, field string, slots *slotTable, fn func(string, []slotFreq)) error {
	dict, err := r.FieldDict(field)
	if err != nil {
		return err
	}
	defer dict.Close()
	var td *index.TermFieldDoc
	for {
		e, err := dict.Next()
		if err != nil || e == nil {
			return err
		}
		tfr, err := r.TermFieldReader(ctx, []byte(e.Term), field, true, false, false)
		if err != nil {
			return err
		}
		ps := make([]slotFreq, 0, e.Count)
		for {
			if td, err = tfr.Next(td); err != nil || td == nil {
				break
			}
			if s, ok := slots.get(internalKey(td.ID)); ok {
				ps = append(ps, slotFreq{s, cap16(int(td.Freq))})
			}
		}
		tfr.Close()
		if err != nil {
			return err
		}
		fn(e.Term, ps)
	}
}

// addPostings merges a term's title and text postings (each ascending)
// into its postings list. Used while loading only.
func (x *impactIndex) addPostings(term string, title, text []slotFreq) {
	tid := x.termID(term)
	p := &x.post[tid]
	add := func(s int32, tfT, tfX uint16) {
		slot := uint32(s)
		p.add(posting{slot, tfT, tfX}, x.lens)
		p.df++
		x.tdf[tdfKey(x.tenant[slot], tid)]++
	}
	i, j := 0, 0
	for i < len(title) || j < len(text) {
		switch {
		case j == len(text) || (i < len(title) && title[i].slot < text[j].slot):
			add(title[i].slot, title[i].tf, 0)
			i++
		case i == len(title) || text[j].slot < title[i].slot:
			add(text[j].slot, 0, text[j].tf)
			j++
		default:
			add(title[i].slot, title[i].tf, text[j].tf)
			i, j = i+1, j+1
		}
	}
	p.trim()
}

func internalKey(id index.IndexInternalID) uint64 {
	if len(id) == 8 {
		return binary.BigEndian.Uint64(id)
	}
	var k uint64
	for _, b := range id {
		k = k<<8 | uint64(b)
	}
	return k
}

// freqsOf returns the analysed term frequencies of a document buildDoc
// made.
func freqsOf(doc *document.Document) fieldFreqs {
	var f fieldFreqs
	for _, fl := range doc.Fields {
		af, ok := fl.(analyzedField)
		if !ok {
			continue
		}
		m := map[string]int{}
		for term, tf := range af.AnalyzedTokenFrequencies() {
			m[term] = tf.Frequency()
		}
		switch af.Name() {
		case fieldTitle:
			f.title = m
		case fieldText:
			f.text = m
		}
	}
	return f
}
