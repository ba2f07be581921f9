package embedded

import (
	"container/heap"
	"context"
	"iter"
	"math"
	"math/bits"

	"github.com/ragd/ragd/internal/idtable"
	"github.com/ragd/ragd/spi"
)

// ivf is an inverted-file index over the rows: nlist centroids, trained by
// k-means on a sample of the rows (kmeans.go), and for each centroid the
// list of rows nearest to it. A search ranks the centroids against the
// query and scans, with the int8 bounds of quant.go, only the rows of the
// best lists (probe); the rows it keeps are rescored in float32 as in the
// exact scan. Rows written after training are assigned to their nearest
// centroid as they are written; the Store trains anew when the index has
// grown to 1.5 times or shrunk to two thirds of its size then
// (annbuild.go: annParams.retrain).
//
// Centroids are held as int8 codes with a scale, like rows, so ranking
// them costs one int16×int8 inner product each (dotCodes); the ranking
// need not be exact, only good.
//
// Invariant, for an index of nrows rows (checkIVF in the model test
// checks it after every operation):
//   - len(of) == len(at) == nrows;
//   - row r is assigned (of[r] >= 0) exactly when lists[of[r]][at[r]] == r,
//     and every entry of every list is an assigned row < nrows, so the
//     lists' lengths sum to the number of assigned rows;
//   - in the live index (index.ivf) every row is assigned; in one being
//     built (index.next) every row below cursor is, and every row written
//     or moved since the build began.
type ivf struct {
	dim   int
	l2    bool      // rank and assign by euclidean distance (l2 and inner product stores)
	cent  []int8    // nlist × dim centroid codes
	cs    []float32 // each centroid's code scale
	cn2   []float32 // each centroid's squared norm (l2)
	lists [][]int32 // rows nearest to each centroid
	of    []int32   // row -> its list, -1 while unassigned (a build)
	at    []int32   // row -> its position in lists[of[row]]

	trained int     // rows the index held when the sample was drawn
	grouped int     // rows the last regroup laid out by list
	cursor  int     // a build: rows below are assigned
	wide    []int16 // nearest's: the row's codes widened
	dots    []int32 // nearest's: the row's products with each centroid
}

// newIVF returns an index of the nlist centroids cent (float32, nlist ×
// dim) with nrows rows, none assigned.
func newIVF(cent []float32, dim int, l2 bool, nrows, trained int) *ivf {
	nlist := len(cent) / dim
	v := &ivf{dim: dim, l2: l2, cent: make([]int8, len(cent)), cs: make([]float32, nlist), cn2: make([]float32, nlist),
		lists: make([][]int32, nlist), of: make([]int32, nrows), at: make([]int32, nrows), trained: trained,
		wide: make([]int16, dim), dots: make([]int32, nlist)}
	for c := range nlist {
		row := cent[c*dim : (c+1)*dim]
		q := quantize(row, v.cent[c*dim:(c+1)*dim])
		v.cs[c] = q.scale
		v.cn2[c] = dot(row, row)
	}
	for r := range v.of {
		v.of[r] = -1
	}
	return v
}

func (v *ivf) nlist() int { return len(v.lists) }

// nearest returns the list of the row with codes and scale: the centroid
// of largest inner product (cosine: centroids and rows are normalised)
// or, with l2, of smallest euclidean distance.
func (v *ivf) nearest(codes []int8, scale float32) int32 {
	for i, c := range codes {
		v.wide[i] = int16(c)
	}
	dotCodesMany(v.wide, v.cent, v.dots)
	best, bestScore := int32(0), math.Inf(-1)
	for c, p := range v.dots {
		d := float64(v.cs[c]) * float64(p)
		if v.l2 {
			// argmin ‖r−c‖² = argmax 2·r·c − ‖c‖²
			d = 2*float64(scale)*d - float64(v.cn2[c])
		}
		if d > bestScore {
			best, bestScore = int32(c), d
		}
	}
	return best
}

// grow extends of and at to nrows rows, the new ones unassigned.
func (v *ivf) grow(nrows int) {
	for len(v.of) < nrows {
		v.of = append(v.of, -1)
		v.at = append(v.at, -1)
	}
}

// add puts row r, unassigned, into list c.
func (v *ivf) add(r int, c int32) {
	v.of[r], v.at[r] = c, int32(len(v.lists[c]))
	v.lists[c] = append(v.lists[c], int32(r))
}

// drop takes row r out of its list, if it is in one.
func (v *ivf) drop(r int) {
	c := v.of[r]
	if c < 0 {
		return
	}
	l := v.lists[c]
	j, last := v.at[r], len(l)-1
	if int(j) != last {
		l[j] = l[last]
		v.at[l[j]] = j
	}
	v.lists[c] = l[:last]
	v.of[r], v.at[r] = -1, -1
}

// move renames row from as row to, which is in no list, and forgets row
// from (the last row, which a delete moves into a hole).
func (v *ivf) move(from, to int) {
	c := v.of[from]
	v.of[to], v.at[to] = c, v.at[from]
	if c >= 0 {
		v.lists[c][v.at[from]] = int32(to)
	}
	v.of[from], v.at[from] = -1, -1
}

// truncate forgets the rows from nrows on, which are in no list.
func (v *ivf) truncate(nrows int) {
	v.of, v.at = v.of[:nrows], v.at[:nrows]
}

// listOrder yields the lists by descending score against the query
// (inner product, or under l2 −‖q−c‖² up to a constant), ties by list
// number, each with its position in that order. Each list is ordered as
// one integer, its score's order-keeping bits inverted above its number,
// so that ordering compares integers instead of calling a comparison
// function (which took 5% of a search's CPU at 1,000,000 rows and 2,000
// lists); and the integers come off a heap (ascending), so a probe that
// stops after m of the lists pays for those m, not for sorting them all
// (a full sort took 2.5% of a search's CPU at 1,320,000 rows and 2,298
// lists, of which a probe visits a few dozen).
func (v *ivf) listOrder(qq *quantQuery) iter.Seq2[int, int32] {
	nlist := v.nlist()
	keys := make([]uint64, nlist)
	for c := range nlist {
		d := float32(float64(v.cs[c]) * qq.scale * float64(dotCodes(qq.codes, v.cent[c*v.dim:(c+1)*v.dim])))
		if v.l2 {
			d = 2*d - v.cn2[c]
		}
		keys[c] = listKey(d, c)
	}
	return func(yield func(int, int32) bool) {
		i := 0
		for k := range ascending(keys) {
			if !yield(i, int32(uint32(k))) {
				return
			}
			i++
		}
	}
}

// ascending yields keys from the least up, reordering keys in place.
func ascending(keys []uint64) iter.Seq[uint64] {
	return func(yield func(uint64) bool) {
		h := keyHeap(keys)
		heap.Init(&h)
		for len(h) > 0 {
			if !yield(h[0]) {
				return
			}
			last := len(h) - 1
			h[0], h = h[last], h[:last]
			if last > 0 {
				heap.Fix(&h, 0)
			}
		}
	}
}

// keyHeap is a min-heap of keys (container/heap); ascending never grows
// or pops it through the interface.
type keyHeap []uint64

func (h keyHeap) Len() int           { return len(h) }
func (h keyHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h keyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *keyHeap) Push(x any)        { *h = append(*h, x.(uint64)) }
func (h *keyHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// listKey is list c's sort key for a score d that is not NaN: ascending
// keys are descending scores, ties by ascending c (−0 equal to +0).
func listKey(d float32, c int) uint64 {
	return uint64(^orderedBits(d))<<32 | uint64(c)
}

// orderedBits maps a float32 that is not NaN to a uint32 of the same
// order (−0 and +0 to one value, as they compare equal).
func orderedBits(f float32) uint32 {
	if f == 0 {
		return 1 << 31
	}
	b := math.Float32bits(f)
	if b&(1<<31) != 0 {
		return ^b
	}
	return b | 1<<31
}

// probe is the IVF search: it visits the lists in order of their
// centroid's score and, in each, the eligible rows (the tenant's, and with
// q.rows those set in it), bounding their keys as scanRange does. It
// stops once it has visited at least minLists lists and need eligible
// rows, or every list. It returns the rows whose upper bound reaches
// floor's k-th best and the number of eligible rows visited.
func (ix *index) probe(ctx context.Context, q query, qq *quantQuery, floor lowerBounds, minLists, need int, dense bool) ([]candidate, int, error) {
	v, dim, rows := ix.ivf, ix.dim, q.rows
	cands := make([]candidate, 0, 1024)
	limit := cap(cands)
	seen, visited := 0, 0
	for li, c := range v.listOrder(qq) {
		if li >= minLists && seen >= need {
			break
		}
		if visited >= ctxCheckEvery {
			visited = 0
			if ctx.Err() != nil {
				return nil, 0, context.Cause(ctx)
			}
		}
		l := v.lists[c]
		visited += len(l)
		for j, r32 := range l {
			i := int(r32)
			var d int32
			if dense {
				// Every row's codes, read in sequence: cheaper than skipping
				// when most rows are eligible.
				d = dotCodesAhead(qq.codes, ix.codes.b[i*dim:(i+1)*dim], ix.codesAhead(l, j))
			}
			if rows != nil && rows[i>>6]&(1<<(i&63)) == 0 {
				continue
			}
			if !q.anyTen && ix.tenants[i] != q.tenant {
				continue
			}
			seen++
			if !dense {
				d = dotCodesAhead(qq.codes, ix.codes.b[i*dim:(i+1)*dim], ix.codesAhead(l, j))
			}
			kLo, kHi := qq.interval(ix.quant[i], d, q.l2)
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
	}
	return prune(cands, floor.min()), seen, nil
}

// prefetchRows is how many rows ahead of the one it scores a sweep over
// codes prefetches. BenchmarkCodesSweep (56 lists of 500 rows from a 366
// MiB mapping; Intel Xeon, 2 vCPUs, three runs): 2 ahead took 9–12 % less
// time than none, 4 ahead from 1 % more to 16 % less, 8 ahead from 4 %
// more to 12 % less; 2 is the steadiest. Through the API: docs/vector.md.
const prefetchRows = 2

// codesAhead is the address of the codes of the row prefetchRows after
// l[j], or nil at the end of l.
func (ix *index) codesAhead(l []int32, j int) *int8 {
	if j += prefetchRows; j < len(l) {
		return &ix.codes.b[int(l[j])*ix.dim]
	}
	return nil
}

// popcount is the number of bits set in b.
func popcount(b []uint64) int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// regrouped is the index's rows renumbered so that the rows of each list
// are consecutive, in list order: a probe then reads each list's codes
// in one sweep of memory instead of a row here and there (a row read at
// random costs about ten times a row read in sequence). Rows written
// later go to the end and into their list; a build regroups again, and
// so does the Store, without training, once a sixteenth more rows than
// the last regroup laid out have been written (annbuild.go).
type regrouped struct {
	ids     idtable.Table
	tenants []uint32
	meta    []spi.Metadata
	codes   rowCodes
	quant   []rowQuant
	vids    []uint64
	post    postings
	ivf     *ivf
}

// regroup renumbers ix's rows by the lists of v, which assigns every row,
// into new arrays (the ids' table too). It reads ix without changing it,
// so searches may run meanwhile; writes must not (the caller holds the
// writers' mutex until install).
func (ix *index) regroup(v *ivf) *regrouped {
	n, dim := ix.len(), ix.dim
	g := &regrouped{
		tenants: make([]uint32, 0, n),
		meta:    make([]spi.Metadata, 0, n),
		quant:   make([]rowQuant, 0, n),
		vids:    make([]uint64, 0, n),
		post:    newPostings(),
		ivf: &ivf{dim: v.dim, l2: v.l2, cent: v.cent, cs: v.cs, cn2: v.cn2, lists: make([][]int32, len(v.lists)),
			of: make([]int32, n), at: make([]int32, n), trained: v.trained, grouped: n, cursor: n, wide: v.wide, dots: v.dots},
	}
	g.codes.reserve(n * dim)
	g.ids.Reserve(n, ix.ids.IDBytes())
	for c, l := range v.lists {
		rows := make([]int32, len(l))
		for j, old := range l {
			r := g.ids.AppendBytes(ix.ids.Bytes(int(old)))
			rows[j] = int32(r)
			g.ivf.of[r], g.ivf.at[r] = int32(c), int32(j)
			g.tenants = append(g.tenants, ix.tenants[old])
			g.meta = append(g.meta, ix.meta[old])
			copy(g.codes.extend(dim), ix.codes.b[int(old)*dim:(int(old)+1)*dim])
			g.quant = append(g.quant, ix.quant[old])
			g.vids = append(g.vids, ix.vids[old])
			g.post.add(r, tenantPair(ix.tenantNames[ix.tenants[old]]), spi.Value{}, n)
			for pk, val := range rowPairs(ix.meta[old]) {
				g.post.add(r, pk, val, n)
			}
		}
		g.ivf.lists[c] = rows
	}
	return g
}

// install makes g the index's rows and g.ivf its ivf; the caller holds
// both of the Store's locks (no search or regroup is reading them). It
// returns the old rows' codes, for freeCodes once the caller has released
// the memory lock (no search started since reads them).
func (ix *index) install(g *regrouped) (oldCodes []int8) {
	oldCodes = ix.codes.b
	ix.ids, ix.tenants, ix.meta, ix.codes, ix.quant, ix.vids, ix.post = g.ids, g.tenants, g.meta, g.codes, g.quant, g.vids, g.post
	ix.ivf, ix.next = g.ivf, nil
	return oldCodes
}
