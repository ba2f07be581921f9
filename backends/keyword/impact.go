package keyword

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"strings"
	"sync"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/document"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/ragd/ragd/internal/topk"
	"github.com/ragd/ragd/spi"
)

// The in-memory postings of plain-text search, and its scoring.
//
// bleve stays the index of record: documents, analysis, stored fields,
// query-string (Syntax) searches, persistence. But its searchers walk a
// heap of per-term iterators and build a DocumentMatch for every matching
// document, so a plain-text query costs in proportion to all its matches:
// 125 ms p50 over 100k documents for Cranfield's queries (255 ms with a
// BM25 searcher written for bleve, since removed). This index keeps, per
// term, the documents holding it with their title and text frequencies,
// and per document its field lengths, tenant and metadata, so a query is a
// tight loop adding BM25 contributions into a dense per-document array,
// then a bounded top-K heap.
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
// BM25F), both counted over every tenant; tenant and metadata filters
// restrict the candidates only.
//
// It is built from the bleve index at open (postings walked term by term,
// stored fields read once per document) and updated after every committed
// batch, under the store's writer lock. A document's slot is never reused:
// replacing or deleting it marks the old slot dead, and a compaction drops
// dead slots once they make up a quarter of the slots; it builds the
// compacted copy while searches go on and swaps it in under the write lock.
type impactIndex struct {
	mu      sync.RWMutex
	ids     []string
	tenant  []uint32
	meta    []map[string]string
	lenT    []uint32
	lenX    []uint32
	ver     [][]byte   // change-log version field of each slot (apply.go), or nil
	terms   [][]uint32 // term ids of each slot, for df on removal
	alive   []bool
	pos     map[string]int32
	termIdx map[string]uint32
	post    []postings
	tenants map[string]uint32
	live    int
	dead    int
	totT    int64
	totX    int64
	// per tenant id: live documents and field length totals, the
	// statistics of a query restricted to the tenant
	tLive        []int
	tTotT, tTotX []int64
	pool         sync.Pool // *[]float64 score arrays

	compactHook func() // tests: runs while a compaction has built its copy
}

// postings of one term: slots ascending, with the term's frequency in
// each field (capped at 65535), and df, the live documents holding it.
type postings struct {
	docs     []int32
	tfT, tfX []uint16
	df       int32
}

func newImpactIndex() *impactIndex {
	return &impactIndex{pos: map[string]int32{}, termIdx: map[string]uint32{}, tenants: map[string]uint32{"": 0}}
}

// fieldFreqs is a document's analysed term frequencies in title and text.
type fieldFreqs struct {
	title, text map[string]int
}

// put adds or replaces a document. The caller holds no lock and is the
// index's one writer.
func (x *impactIndex) put(id, tenant string, meta map[string]string, lens docLens, f fieldFreqs) {
	x.mu.Lock()
	x.putLocked(id, tenant, meta, lens, nil, f)
	x.mu.Unlock()
	x.compactWhenDue()
}

func (x *impactIndex) putLocked(id, tenant string, meta map[string]string, lens docLens, ver []byte, f fieldFreqs) {
	x.removeLocked(id)
	slot := int32(len(x.ids))
	t, ok := x.tenants[tenant]
	if !ok {
		t = uint32(len(x.tenants))
		x.tenants[tenant] = t
	}
	for int(t) >= len(x.tLive) {
		x.tLive, x.tTotT, x.tTotX = append(x.tLive, 0), append(x.tTotT, 0), append(x.tTotX, 0)
	}
	x.tLive[t]++
	x.tTotT[t] += int64(lens.title)
	x.tTotX[t] += int64(lens.text)
	x.ids = append(x.ids, id)
	x.tenant = append(x.tenant, t)
	x.meta = append(x.meta, meta)
	x.lenT = append(x.lenT, uint32(lens.title))
	x.lenX = append(x.lenX, uint32(lens.text))
	x.ver = append(x.ver, ver)
	x.alive = append(x.alive, true)
	x.pos[id] = slot
	x.live++
	x.totT += int64(lens.title)
	x.totX += int64(lens.text)
	var tids []uint32
	add := func(term string, tfT, tfX int) {
		tid, ok := x.termIdx[term]
		if !ok {
			tid = uint32(len(x.post))
			x.termIdx[term] = tid
			x.post = append(x.post, postings{})
		}
		p := &x.post[tid]
		p.docs = append(p.docs, slot)
		p.tfT = append(p.tfT, cap16(tfT))
		p.tfX = append(p.tfX, cap16(tfX))
		p.df++
		tids = append(tids, tid)
	}
	for term, n := range f.title {
		add(term, n, f.text[term])
	}
	for term, n := range f.text {
		if _, both := f.title[term]; !both {
			add(term, 0, n)
		}
	}
	x.terms = append(x.terms, tids)
}

func cap16(n int) uint16 { return uint16(min(n, math.MaxUint16)) }

// apply mirrors a committed batch: documents as buildDoc built them, and
// deleted ids. The caller serialises writes (the store's writer lock).
func (x *impactIndex) apply(docs []spi.Document, built []*document.Document, lens []docLens, vers [][]byte, del []string) {
	x.mu.Lock()
	for i, d := range docs {
		x.putLocked(d.ID, d.Tenant, maps.Clone(d.Metadata), lens[i], vers[i], freqsOf(built[i]))
	}
	for _, id := range del {
		x.removeLocked(id)
	}
	x.mu.Unlock()
	x.compactWhenDue()
}

// remove deletes a document if present.
func (x *impactIndex) remove(id string) {
	x.mu.Lock()
	x.removeLocked(id)
	x.mu.Unlock()
	x.compactWhenDue()
}

func (x *impactIndex) removeLocked(id string) {
	slot, ok := x.pos[id]
	if !ok {
		return
	}
	delete(x.pos, id)
	x.alive[slot] = false
	x.live--
	x.dead++
	x.totT -= int64(x.lenT[slot])
	x.totX -= int64(x.lenX[slot])
	t := x.tenant[slot]
	x.tLive[t]--
	x.tTotT[t] -= int64(x.lenT[slot])
	x.tTotX[t] -= int64(x.lenX[slot])
	for _, tid := range x.terms[slot] {
		x.post[tid].df--
	}
	x.terms[slot], x.meta[slot], x.ver[slot] = nil, nil, nil
}

// compactWhenDue compacts the index once dead slots make up a quarter of
// them (and at least 1024). The compacted copy is built under the read
// lock, so searches go on meanwhile; only the swap takes the write lock.
// The caller is the index's one writer (writes are serialised by the
// store's writer lock) and holds no lock of the index.
func (x *impactIndex) compactWhenDue() {
	if x.dead < 1024 || x.dead <= len(x.ids)/4 {
		return
	}
	x.mu.RLock()
	c := x.compacted()
	if x.compactHook != nil {
		x.compactHook()
	}
	x.mu.RUnlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	x.ids, x.tenant, x.meta, x.ver = c.ids, c.tenant, c.meta, c.ver
	x.lenT, x.lenX, x.terms, x.alive = c.lenT, c.lenX, c.terms, c.alive
	x.post = c.post
	for n, id := range x.ids {
		x.pos[id] = int32(n)
	}
	x.dead = 0
	x.pool = sync.Pool{} // arrays sized for the old slot count
}

// compacted returns the live slots renumbered and every postings list
// without the dead ones, in new arrays. The caller holds mu for reading.
func (x *impactIndex) compacted() *impactIndex {
	n := x.live
	c := &impactIndex{
		ids: make([]string, 0, n), tenant: make([]uint32, 0, n), meta: make([]map[string]string, 0, n),
		ver: make([][]byte, 0, n), lenT: make([]uint32, 0, n), lenX: make([]uint32, 0, n),
		terms: make([][]uint32, 0, n), alive: make([]bool, 0, n), post: make([]postings, len(x.post)),
	}
	remap := make([]int32, len(x.ids))
	for s := range x.ids {
		if !x.alive[s] {
			remap[s] = -1
			continue
		}
		remap[s] = int32(len(c.ids))
		c.ids, c.tenant, c.meta = append(c.ids, x.ids[s]), append(c.tenant, x.tenant[s]), append(c.meta, x.meta[s])
		c.ver, c.lenT, c.lenX = append(c.ver, x.ver[s]), append(c.lenT, x.lenT[s]), append(c.lenX, x.lenX[s])
		c.terms, c.alive = append(c.terms, x.terms[s]), append(c.alive, true)
	}
	for tid := range x.post {
		p := &x.post[tid]
		q := postings{df: p.df, docs: make([]int32, 0, p.df), tfT: make([]uint16, 0, p.df), tfX: make([]uint16, 0, p.df)}
		for i, d := range p.docs {
			if nd := remap[d]; nd >= 0 {
				q.docs, q.tfT, q.tfX = append(q.docs, nd), append(q.tfT, p.tfT[i]), append(q.tfX, p.tfX[i])
			}
		}
		c.post[tid] = q
	}
	return c
}

// versionOf returns live document id's version field (nil when it was
// written outside the change log) and whether the document is live.
func (x *impactIndex) versionOf(id string) ([]byte, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	slot, ok := x.pos[id]
	if !ok {
		return nil, false
	}
	return x.ver[slot], true
}

// bm25Params are the scoring settings of a search.
type bm25Params struct {
	k1, b, titleWeight float64
}

// search returns the k best live documents for the analysed query tokens
// (a token repeated counts repeatedly), restricted to tenant (when set)
// and filter, by the BM25 above: score descending, then id ascending.
func (x *impactIndex) search(ctx context.Context, tokens []string, k int, tenant string, filter spi.Filter, p bm25Params) ([]spi.Ref, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.live == 0 || len(tokens) == 0 {
		return []spi.Ref{}, nil
	}
	// N, the average lengths and (below) df are the tenant's own when the
	// query names one: its scores never depend on other tenants' documents.
	// A tenant holding every live document (a single-tenant deployment)
	// has the collection's statistics: the collection's path is taken,
	// which computes the same numbers without counting df per tenant.
	want := uint32(0)
	live, totT, totX := x.live, x.totT, x.totX
	scoped := false
	if tenant != "" {
		t, ok := x.tenants[tenant]
		if !ok || x.tLive[t] == 0 {
			return []spi.Ref{}, nil
		}
		want = t
		scoped = x.tLive[t] < x.live
		live, totT, totX = x.tLive[t], x.tTotT[t], x.tTotX[t]
	}
	n := float64(live)
	avgT, avgX := float64(totT)/n, float64(totX)/n
	// f + k1·(1 − b + b·len/avg) = f + a + c·len, per field.
	aT, cT := p.k1*(1-p.b), 0.0
	aX, cX := aT, 0.0
	if avgT > 0 {
		cT = p.k1 * p.b / avgT
	}
	if avgX > 0 {
		cX = p.k1 * p.b / avgX
	}
	wT := p.titleWeight
	if avgT <= 0 {
		wT = 0 // an empty field scores nothing
	}
	wX := 1.0
	if avgX <= 0 {
		wX = 0
	}
	lenT, lenX := x.lenT, x.lenX

	scores := x.scores()
	defer x.pool.Put(scores)
	acc := *scores
	var touched []int32
	var mine []scoredSlot // a tenant's postings of one term, scored
	qtf := map[uint32]float64{}
	var order []uint32
	for _, t := range tokens {
		tid, ok := x.termIdx[t]
		if !ok {
			continue
		}
		if _, seen := qtf[tid]; !seen {
			order = append(order, tid)
		}
		qtf[tid]++
	}
	for i, tid := range order {
		if i%8 == 7 {
			if err := ctx.Err(); err != nil {
				clearTouched(acc, touched)
				return nil, err
			}
		}
		pl := &x.post[tid]
		if pl.df <= 0 {
			continue
		}
		if !scoped {
			df := float64(pl.df)
			w := qtf[tid] * math.Log(1+(n-df+0.5)/(df+0.5))
			for j, d := range pl.docs {
				if !x.alive[d] {
					continue
				}
				if s := saturate(pl.tfT[j], wT, aT, cT, lenT[d]) + saturate(pl.tfX[j], wX, aX, cX, lenX[d]); s != 0 {
					if acc[d] == 0 {
						touched = append(touched, d)
					}
					acc[d] += w * s
				}
			}
			continue
		}
		// The tenant's df is counted while its documents are scored; the
		// idf is applied once the postings are walked.
		mine = mine[:0]
		df := 0
		for j, d := range pl.docs {
			if x.alive[d] && x.tenant[d] == want {
				df++
				if s := saturate(pl.tfT[j], wT, aT, cT, lenT[d]) + saturate(pl.tfX[j], wX, aX, cX, lenX[d]); s != 0 {
					mine = append(mine, scoredSlot{d, s})
				}
			}
		}
		if df == 0 {
			continue
		}
		w := qtf[tid] * math.Log(1+(n-float64(df)+0.5)/(float64(df)+0.5))
		for _, e := range mine {
			if acc[e.slot] == 0 {
				touched = append(touched, e.slot)
			}
			acc[e.slot] += w * e.s
		}
	}
	h := topk.New(k)
	for _, d := range touched {
		s := acc[d]
		acc[d] = 0
		if tenant != "" && x.tenant[d] != want {
			continue
		}
		if len(filter) > 0 && !filter.Match(x.meta[d]) {
			continue
		}
		h.Offer(spi.Ref{ID: x.ids[d], Score: s, Source: spi.SourceKeyword})
	}
	return h.Sorted(), nil
}

// saturate is one field's part of a term's score in a document, before
// idf and qtf: w · f / (f + a + c · len), 0 for a field without the term
// or of weight 0.
func saturate(tf uint16, w, a, c float64, l uint32) float64 {
	if f := float64(tf); f > 0 && w > 0 {
		return w * f / (f + a + c*float64(l))
	}
	return 0
}

// scoredSlot is a document slot with a term's score in it, before idf.
type scoredSlot struct {
	slot int32
	s    float64
}

// scores returns a zeroed array of one score per slot.
func (x *impactIndex) scores() *[]float64 {
	if p, ok := x.pool.Get().(*[]float64); ok && len(*p) >= len(x.ids) {
		return p
	}
	s := make([]float64, len(x.ids)+len(x.ids)/8+64)
	return &s
}

func clearTouched(acc []float64, touched []int32) {
	for _, d := range touched {
		acc[d] = 0
	}
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
	slots := map[uint64]int32{}
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
		if len(slots)%1024 == 1023 {
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
		var meta map[string]string
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
		slot := int32(len(x.ids))
		slots[internalKey(iid)] = slot
		x.putLocked(ext, tenant, meta, lens, ver, fieldFreqs{})
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
	return x, nil
}

type slotFreq struct {
	slot int32
	tf   uint16
}

// walkPostings calls fn with each term of field and its postings.
func walkPostings(ctx context.Context, r index.IndexReader, field string, slots map[uint64]int32, fn func(string, []slotFreq)) error {
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
			if s, ok := slots[internalKey(td.ID)]; ok {
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
// into a new postings list. Used while loading only.
func (x *impactIndex) addPostings(term string, title, text []slotFreq) {
	tid := uint32(len(x.post))
	x.termIdx[term] = tid
	n := len(title) + len(text)
	p := postings{docs: make([]int32, 0, n), tfT: make([]uint16, 0, n), tfX: make([]uint16, 0, n)}
	i, j := 0, 0
	for i < len(title) || j < len(text) {
		switch {
		case j == len(text) || (i < len(title) && title[i].slot < text[j].slot):
			p.docs, p.tfT, p.tfX = append(p.docs, title[i].slot), append(p.tfT, title[i].tf), append(p.tfX, 0)
			i++
		case i == len(title) || text[j].slot < title[i].slot:
			p.docs, p.tfT, p.tfX = append(p.docs, text[j].slot), append(p.tfT, 0), append(p.tfX, text[j].tf)
			j++
		default:
			p.docs, p.tfT, p.tfX = append(p.docs, title[i].slot), append(p.tfT, title[i].tf), append(p.tfX, text[j].tf)
			i, j = i+1, j+1
		}
	}
	p.df = int32(len(p.docs))
	for _, s := range p.docs {
		x.terms[s] = append(x.terms[s], tid)
	}
	x.post = append(x.post, p)
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
