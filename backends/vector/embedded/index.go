package embedded

import (
	"cmp"
	"context"
	"math"
	"math/bits"
	"slices"
	"sync"

	"github.com/ragd/ragd/internal/idtable"
	"github.com/ragd/ragd/internal/topk"
	"github.com/ragd/ragd/spi"
)

// index is the in-memory index: row i holds the id ids.String(i) (one
// entry of an idtable.Table per row, all linked),
// its tenant and metadata, and the int8 codes of its vector
// codes.b[i*dim:(i+1)*dim] (outside the Go heap: codes.go) with quant[i]
// (quant.go); the float32 vectors stay on disk (the vectors file,
// vecfile.go, vids[i] naming row i's entry, 0 when its record holds the
// vector itself), which the search reads for the few rows it scores
// exactly (rescore.go). Deleting a row moves the last row into its place. post indexes the rows by
// metadata pair and by tenant (postings.go), for filtered searches; ivf,
// once the Store has built it (annbuild.go), by nearest centroid, for
// searches that visit a part of the rows (ivf.go); next is the ivf a build
// is filling, which writes keep up to date as they keep ivf. It is not
// safe for concurrent use; Store guards it (next only by its writers'
// mutex: searches never read it).
type index struct {
	dim         int
	normalize   bool
	ids         idtable.Table
	tenants     []uint32
	meta        []spi.Metadata // interned in metas
	metas       metaSet
	codes       rowCodes
	quant       []rowQuant
	vids        []uint64
	post        postings
	tenantIDs   map[string]uint32 // interned tenants; 0 is ""
	tenantNames []string          // tenantNames[tenantIDs[t]] == t
	ivf         *ivf
	next        *ivf
	ann         annParams
	scratch     []float32 // put's normalised copy
}

func newIndex(dim int, normalize bool) *index {
	return &index{dim: dim, normalize: normalize, post: newPostings(), metas: metaSet{},
		tenantIDs: map[string]uint32{"": 0}, tenantNames: []string{""}, ann: defaultANN}
}

// tenantKey is the key of the tenant postings: tenantPair(t) holds the
// rows of tenant t. Metadata keys cannot hold a NUL byte.
const tenantKey = "\x00tenant"

// tenantPair is the pair of tenant t's postings: t as a string value of
// key tenantKey, so that tenantExpr(t) selects its rows.
func tenantPair(t string) pair { return pair{tenantKey, spi.String(t).EqualityKey()} }

// tenantExpr is the expression of tenant t's rows on the postings.
func tenantExpr(t string) *spi.Expr {
	return &spi.Expr{Kind: spi.ExprIn, Key: tenantKey, Values: []spi.Value{spi.String(t)}}
}

func (ix *index) len() int { return ix.ids.Len() }

// reserve makes room for n rows.
func (ix *index) reserve(n int) {
	ix.ids.Reserve(n, 0)
	ix.tenants = slices.Grow(ix.tenants, n)
	ix.meta = slices.Grow(ix.meta, n)
	ix.codes.reserve(n * ix.dim)
	ix.quant = slices.Grow(ix.quant, n)
	ix.vids = slices.Grow(ix.vids, n)
}

func (ix *index) tenantID(t string) uint32 {
	id, ok := ix.tenantIDs[t]
	if !ok {
		id = uint32(len(ix.tenantIDs))
		ix.tenantIDs[t] = id
		ix.tenantNames = append(ix.tenantNames, t)
	}
	return id
}

// put inserts or replaces a row: vec's codes are computed (from vec
// normalised, for cosine) and vec itself is not kept; vid names its entry
// in the vectors file (0: the record holds it).
func (ix *index) put(id, tenant string, md spi.Metadata, vec []float32, vid uint64) {
	i, ok := ix.ids.Lookup(id)
	nrows := ix.len()
	if !ok {
		i = ix.ids.Append(id)
		nrows++
		ix.tenants = append(ix.tenants, 0)
		ix.meta = append(ix.meta, nil)
		ix.codes.extend(ix.dim)
		ix.quant = append(ix.quant, rowQuant{})
		ix.vids = append(ix.vids, 0)
		ix.post.add(i, tenantPair(tenant), spi.Value{}, nrows)
		ix.tenants[i] = ix.tenantID(tenant)
	} else if t := ix.tenantID(tenant); t != ix.tenants[i] {
		ix.post.del(i, tenantPair(ix.tenantNames[ix.tenants[i]]), nrows)
		ix.post.add(i, tenantPair(tenant), spi.Value{}, nrows)
		ix.tenants[i] = t
	}
	oldMeta := ix.meta[i]
	old, now := rowPairs(oldMeta), rowPairs(md)
	for pk := range old {
		if _, ok := now[pk]; !ok {
			ix.post.del(i, pk, nrows)
		}
	}
	for pk, v := range now {
		if _, ok := old[pk]; !ok {
			ix.post.add(i, pk, v, nrows)
		}
	}
	ix.meta[i] = ix.metas.intern(md)
	ix.metas.release(oldMeta)
	if ix.normalize {
		ix.scratch = append(ix.scratch[:0], vec...)
		normalizeInPlace(ix.scratch)
		vec = ix.scratch
	}
	ix.quant[i] = quantize(vec, ix.codes.b[i*ix.dim:(i+1)*ix.dim])
	ix.vids[i] = vid
	for _, v := range []*ivf{ix.ivf, ix.next} {
		if v != nil {
			v.grow(nrows)
			v.drop(i)
			v.add(i, v.nearest(ix.codes.b[i*ix.dim:(i+1)*ix.dim], ix.quant[i].scale))
		}
	}
}

// remove deletes a row if present.
func (ix *index) remove(id string) {
	i, ok := ix.ids.Lookup(id)
	if !ok {
		return
	}
	last := ix.len() - 1
	for pk := range rowPairs(ix.meta[i]) {
		ix.post.del(i, pk, last+1)
	}
	ix.metas.release(ix.meta[i])
	ix.post.del(i, tenantPair(ix.tenantNames[ix.tenants[i]]), last+1)
	ivfs := []*ivf{ix.ivf, ix.next}
	for _, v := range ivfs {
		if v != nil {
			v.drop(i)
		}
	}
	if i != last {
		ix.post.move(last, i, ix.meta[last])
		ix.post.m[tenantPair(ix.tenantNames[ix.tenants[last]])].move(last, i)
		ix.tenants[i] = ix.tenants[last]
		ix.meta[i] = ix.meta[last]
		copy(ix.codes.b[i*ix.dim:(i+1)*ix.dim], ix.codes.b[last*ix.dim:])
		ix.quant[i] = ix.quant[last]
		ix.vids[i] = ix.vids[last]
		for _, v := range ivfs {
			if v == nil {
				continue
			}
			v.move(last, i)
			if v.of[i] < 0 { // a build had not reached it: assign it now
				v.add(i, v.nearest(ix.codes.b[i*ix.dim:(i+1)*ix.dim], ix.quant[i].scale))
			}
		}
	}
	for _, v := range ivfs {
		if v != nil {
			v.truncate(last)
		}
	}
	ix.ids.SwapRemove(i)
	ix.tenants = ix.tenants[:last]
	ix.meta[last] = nil
	ix.meta = ix.meta[:last]
	ix.codes.truncate(last * ix.dim)
	ix.quant = ix.quant[:last]
	ix.vids = ix.vids[:last]
}

func normalizeInPlace(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
}

// dot is the inner product, unrolled with four accumulators.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// sqDist is the squared euclidean distance.
func sqDist(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		d0, d1, d2, d3 := a[i]-b[i], a[i+1]-b[i+1], a[i+2]-b[i+2], a[i+3]-b[i+3]
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(a); i++ {
		d := a[i] - b[i]
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}

// hit is a scored document; key is higher-is-better (dot, or -squared
// distance for l2).
type hit struct {
	key float32
	id  string
}

// newHits returns a heap keeping the k best hits.
func newHits(k int) *topk.Heap[hit] { return topk.NewHeap(k, worse) }

// worse reports whether a ranks below b: lower key, or equal key and
// larger id.
func worse(a, b hit) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	return a.id > b.id
}

// query is one prepared search.
type query struct {
	vec        []float32 // normalised for cosine
	k          int
	tenant     uint32
	tenantName string
	anyTen     bool
	filter     spi.Filter
	rows       []uint64 // the rows filter matches (candidates sets it)
	l2         bool
	exact      bool // scan every eligible row even with an ivf (tests)
}

// eligibleExpr is the expression of the rows q may return on the
// postings: its filter's, and its tenant's unless it searches them all;
// nil when every row is eligible.
func (q *query) eligibleExpr() *spi.Expr {
	e := q.filter.Root()
	if q.anyTen {
		return e
	}
	t := tenantExpr(q.tenantName)
	if e == nil {
		return t
	}
	return &spi.Expr{Kind: spi.ExprAnd, Args: []*spi.Expr{t, e}}
}

// minParallelWork is the number of multiply-adds below which a search runs
// on one goroutine.
const minParallelWork = 1 << 18

// ctxCheckEvery is how many rows a scan visits between ctx checks.
const ctxCheckEvery = 4096

// candidates returns the ids of the rows that may be among the best q.k:
// those whose key's upper bound reaches the k-th best lower bound
// (quant.go) among the rows it visits, by descending upper bound, with
// their vids and those bounds; rescore.go scores them, best bound first. The
// eligible rows (the tenant's, matching the filter) come from the
// postings; with an IVF (ivf.go) and more eligible rows than an exact
// scan of them would cost (annParams.exact), it visits those of the best
// lists, otherwise every eligible row.
func (ix *index) candidates(ctx context.Context, q query, parallelism int) (ids []string, vids []uint64, his []float64, err error) {
	n := ix.len()
	qq := newQuantQuery(q.vec)
	q.rows = nil
	eligible := n
	if e := q.eligibleExpr(); e != nil {
		q.rows = ix.post.rows(e, n)
		eligible = popcount(q.rows)
	}
	if eligible == 0 {
		return nil, nil, nil, nil
	}
	var found [][]candidate
	var floor lowerBounds
	if v := ix.ivf; v != nil && !q.exact && !ix.ann.exact(n, v.nlist(), eligible, q.k) {
		minLists, need := ix.ann.probe(n, v.nlist(), eligible, q.k)
		floor = newLowerBounds(q.k)
		dense := float64(eligible) >= ix.ann.denseProbe*float64(n)
		cands, _, err := ix.probe(ctx, q, &qq, floor, minLists, need, dense)
		if err != nil {
			return nil, nil, nil, err
		}
		found = [][]candidate{cands}
	} else {
		if found, floor, err = ix.scan(ctx, q, &qq, parallelism); err != nil {
			return nil, nil, nil, err
		}
	}
	var kept []candidate
	for _, cs := range found {
		kept = append(kept, prune(cs, floor.min())...)
	}
	slices.SortFunc(kept, func(a, b candidate) int { return cmp.Compare(b.hi, a.hi) })
	ids, vids, his = make([]string, len(kept)), make([]uint64, len(kept)), make([]float64, len(kept))
	for i, c := range kept {
		ids[i], vids[i], his[i] = ix.ids.String(c.row), ix.vids[c.row], c.hi
	}
	return ids, vids, his, nil
}

// scan bounds the key of every eligible row, split across parallelism
// goroutines when the index is large enough to pay for them; it returns
// each part's candidates and the merged floor.
func (ix *index) scan(ctx context.Context, q query, qq *quantQuery, parallelism int) ([][]candidate, lowerBounds, error) {
	n := ix.len()
	parts := 1
	if parallelism > 1 && n*ix.dim >= minParallelWork {
		parts = parallelism
	}
	found := make([][]candidate, parts)
	floors := make([]lowerBounds, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	chunk := (n + parts - 1) / parts
	for p := range parts {
		lo, hi := p*chunk, min((p+1)*chunk, n)
		floors[p] = newLowerBounds(q.k)
		run := func() { found[p], errs[p] = ix.scanRange(ctx, q, qq, lo, hi, floors[p]) }
		if p == parts-1 {
			run()
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); run() }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, lowerBounds{}, err
		}
	}
	floor := floors[0]
	for _, f := range floors[1:] {
		for _, x := range f.Kept() {
			floor.Offer(x)
		}
	}
	return found, floor, nil
}

// candidate is a row that may be among the best k, with the upper end of
// its key's interval.
type candidate struct {
	row int
	hi  float64
}

// scanRange bounds the key of every eligible row of [lo, hi) from its
// int8 codes, keeps the k best lower bounds in floor, and returns the rows
// whose upper bound reaches floor's k-th best. With a filter it visits only
// the rows set in q.rows, skipping a word of 64 rows at a time; it checks
// ctx at the first row visited at least ctxCheckEvery rows after the last
// check.
func (ix *index) scanRange(ctx context.Context, q query, qq *quantQuery, lo, hi int, floor lowerBounds) ([]candidate, error) {
	dim := ix.dim
	rows := q.rows
	cands := make([]candidate, 0, 1024)
	limit := cap(cands)
	check := lo + ctxCheckEvery - 1
	for i := lo; i < hi; i++ {
		if rows != nil {
			b := rows[i>>6] >> (i & 63)
			if b == 0 {
				i |= 63 // the loop's i++ starts the next word
				continue
			}
			if i += bits.TrailingZeros64(b); i >= hi {
				break
			}
		}
		if i >= check {
			check = i + ctxCheckEvery
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
		}
		if !q.anyTen && ix.tenants[i] != q.tenant {
			continue
		}
		var ahead *int8
		if i+prefetchRows < hi {
			ahead = &ix.codes.b[(i+prefetchRows)*dim]
		}
		kLo, kHi := qq.interval(ix.quant[i], dotCodesAhead(qq.codes, ix.codes.b[i*dim:(i+1)*dim], ahead), q.l2)
		if kHi < floor.min() {
			continue
		}
		floor.Offer(kLo)
		cands = append(cands, candidate{row: i, hi: kHi})
		if len(cands) >= limit {
			cands = prune(cands, floor.min())
			limit = max(limit, 2*len(cands))
		}
	}
	return prune(cands, floor.min()), nil
}

// prune drops the candidates whose upper bound is below floor, in place.
func prune(cands []candidate, floor float64) []candidate {
	return slices.DeleteFunc(cands, func(c candidate) bool { return c.hi < floor })
}

// lowerBounds keeps the k largest lower bounds seen; min is the k-th
// largest, the floor no key of the final top k can be below.
type lowerBounds struct{ *topk.Heap[float64] }

func newLowerBounds(k int) lowerBounds {
	return lowerBounds{topk.NewHeap(k, func(a, b float64) bool { return a < b })}
}

func (b lowerBounds) min() float64 {
	if !b.Full() {
		return math.Inf(-1)
	}
	w, _ := b.Worst()
	return w
}
