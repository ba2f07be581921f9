package embedded

import (
	"math/bits"
	"slices"
	"sort"

	"github.com/ragd/ragd/spi"
)

// pair is one metadata key with one value.
type pair struct{ key, val string }

// posting is the set of rows holding one pair: an unordered list of rows
// while the set is small, a bitset over rows once it holds more than
// 1/32 of the index (where the bitset, n/8 bytes, becomes the smaller of
// the two) and at least minDense rows. A bitset turns back into a list
// when the set falls below 1/64 of the index or minDense/2 rows, so a pair
// at the boundary does not convert on every change. Every pair held by
// some row has a posting; a posting holding no row is dropped. See
// docs/vector.md ("Filtered searches") for the memory this costs.
//
// Invariant, for an index of nrows rows (checked after every operation by
// checkPostings in TestPostingsFollowRows):
//   - n ≥ 1 is the number of rows held; every row held is < nrows; a list
//     holds no row twice; exactly one of rows and bits is non-nil.
//   - bits is trimmed: its last word is non-zero, so len(bits) is
//     ⌈(largest row + 1)/64⌉ ≤ ⌈nrows/64⌉, the length of the filter bitset
//     orInto writes into. The bitset's length follows its largest row, not
//     the index: a delete elsewhere shrinks the index without touching this
//     posting, and a bitset sized for the larger index would then run past
//     the filter's (issue 29).
type posting struct {
	val  spi.Value // the scalar of an equality pair (zero for presence)
	n    int       // rows in the set
	rows []int32   // the rows while bits is nil
	bits []uint64  // bit r is row r; nil while the set is a list
}

// minDense is the fewest rows a bitset posting holds.
const minDense = 64

func (p *posting) add(r int, nrows int) {
	p.n++
	if p.bits != nil {
		w := r >> 6
		if w >= len(p.bits) {
			p.bits = append(p.bits, make([]uint64, w+1-len(p.bits))...)
		}
		p.bits[w] |= 1 << (r & 63)
		return
	}
	p.rows = append(p.rows, int32(r))
	if p.n > minDense && p.n*32 > nrows {
		top := slices.Max(p.rows)
		p.bits = make([]uint64, top>>6+1) // trimmed: the invariant above
		for _, x := range p.rows {
			p.bits[x>>6] |= 1 << (x & 63)
		}
		p.rows = nil
	}
}

// del removes row r, which the set holds.
func (p *posting) del(r int, nrows int) {
	p.n--
	if p.bits == nil {
		for j, x := range p.rows {
			if int(x) == r {
				last := len(p.rows) - 1
				p.rows[j] = p.rows[last]
				p.rows = p.rows[:last]
				break
			}
		}
		return
	}
	p.bits[r>>6] &^= 1 << (r & 63)
	if p.n < minDense/2 || p.n*64 < nrows {
		p.rows = make([]int32, 0, p.n)
		for w, b := range p.bits {
			for ; b != 0; b &= b - 1 {
				p.rows = append(p.rows, int32(w<<6+bits.TrailingZeros64(b)))
			}
		}
		p.bits = nil
		return
	}
	p.trim()
}

// trim drops the zero words at the end of bits (the invariant above).
func (p *posting) trim() {
	end := len(p.bits)
	for end > 0 && p.bits[end-1] == 0 {
		end--
	}
	p.bits = p.bits[:end]
}

// move renames row from as row to, which the set does not hold.
func (p *posting) move(from, to int) {
	if p.bits == nil {
		for j, x := range p.rows {
			if int(x) == from {
				p.rows[j] = int32(to)
				return
			}
		}
		return
	}
	// to < from: a delete moves the last row into a hole.
	p.bits[from>>6] &^= 1 << (from & 63)
	p.bits[to>>6] |= 1 << (to & 63)
	p.trim()
}

// orInto sets the posting's rows in dst, which covers every row of the
// index (len(dst) = ⌈nrows/64⌉ ≥ len(p.bits), by the invariant above).
func (p *posting) orInto(dst []uint64) {
	if p.bits == nil {
		for _, x := range p.rows {
			dst[x>>6] |= 1 << (x & 63)
		}
		return
	}
	for w, b := range p.bits {
		dst[w] |= b
	}
}

// postings indexes rows by metadata: m maps each pair held by some row
// to its rows, ranged each key to the postings of its numbers and of its
// times in ascending order (for ranges).
//
// The pairs a row holds are rowPairs(its metadata): for each key, the
// presence pair {key, ""} and one pair {key, v.EqualityKey()} per distinct
// scalar (a list's items, each once), so that equal values (3 and 3.0)
// share a posting. Invariant, besides each posting's: m holds exactly the
// pairs some row holds; ranged[k].nums holds exactly the postings of m
// with key k whose value is a number, ranged[k].times those whose value
// is a time, each strictly ascending by value (spi.Compare; two postings
// of one key never hold equal values, which share an equality key), and
// ranged has no key without one.
type postings struct {
	m      map[pair]*posting
	ranged map[string]*sortedVals
}

// sortedVals is one key's numeric and time postings in value order.
type sortedVals struct {
	nums, times []*posting
}

func newPostings() postings {
	return postings{m: map[pair]*posting{}, ranged: map[string]*sortedVals{}}
}

// slot returns the sorted slice v belongs in (nil for a string or a
// boolean).
func (sv *sortedVals) slot(v spi.Value) *[]*posting {
	switch {
	case v.IsNumber():
		return &sv.nums
	case v.Kind() == spi.KindTime:
		return &sv.times
	}
	return nil
}

// search returns the index of the first posting of ps whose value is not
// below v.
func search(ps []*posting, v spi.Value) int {
	return sort.Search(len(ps), func(i int) bool {
		c, _ := spi.Compare(ps[i].val, v)
		return c >= 0
	})
}

// rowPairs returns the pairs metadata md holds, with the scalar each
// equality pair stands for (a zero Value for the presence pair).
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

// add records that row r holds pair pk, standing for scalar v; nrows
// counts r.
func (ps postings) add(r int, pk pair, v spi.Value, nrows int) {
	p := ps.m[pk]
	if p == nil {
		p = &posting{val: v}
		ps.m[pk] = p
		if pk.val != "" && (v.IsNumber() || v.Kind() == spi.KindTime) {
			sv := ps.ranged[pk.key]
			if sv == nil {
				sv = &sortedVals{}
				ps.ranged[pk.key] = sv
			}
			sl := sv.slot(v)
			*sl = slices.Insert(*sl, search(*sl, v), p)
		}
	}
	p.add(r, nrows)
}

// del forgets that row r holds pair pk; nrows counts r.
func (ps postings) del(r int, pk pair, nrows int) {
	p := ps.m[pk]
	p.del(r, nrows)
	if p.n == 0 {
		delete(ps.m, pk)
		if sv := ps.ranged[pk.key]; sv != nil && pk.val != "" {
			if sl := sv.slot(p.val); sl != nil {
				i := search(*sl, p.val)
				*sl = slices.Delete(*sl, i, i+1)
			}
			if len(sv.nums) == 0 && len(sv.times) == 0 {
				delete(ps.ranged, pk.key)
			}
		}
	}
}

// move renames row from, holding md's pairs, as row to.
func (ps postings) move(from, to int, md spi.Metadata) {
	for pk := range rowPairs(md) {
		ps.m[pk].move(from, to)
	}
}

// rows returns the bitset of the nrows rows matching e, evaluated on the
// postings: $in is the union of its values' postings, a range the union
// of the postings of the key's values in range (a binary search in the
// key's sorted numbers or times, then the run on one side of it), $exists the presence posting,
// $not the complement within the nrows rows.
func (ps postings) rows(e *spi.Expr, nrows int) []uint64 {
	words := (nrows + 63) >> 6
	out := make([]uint64, words)
	switch e.Kind {
	case spi.ExprAnd:
		fill(out, nrows)
		for _, a := range e.Args {
			sub := ps.rows(a, nrows)
			for w := range out {
				out[w] &= sub[w]
			}
		}
	case spi.ExprOr:
		for _, a := range e.Args {
			sub := ps.rows(a, nrows)
			for w := range out {
				out[w] |= sub[w]
			}
		}
	case spi.ExprNot:
		sub := ps.rows(e.Args[0], nrows)
		fill(out, nrows)
		for w := range out {
			out[w] &^= sub[w]
		}
	case spi.ExprExists:
		if p := ps.m[pair{e.Key, ""}]; p != nil {
			p.orInto(out)
		}
	case spi.ExprIn:
		for _, v := range e.Values {
			if p := ps.m[pair{e.Key, v.EqualityKey()}]; p != nil {
				p.orInto(out)
			}
		}
	case spi.ExprCmp:
		sv := ps.ranged[e.Key]
		if sv == nil {
			break
		}
		v := e.Values[0]
		sl := *sv.slot(v)
		ge := search(sl, v) // sl[ge:] are ≥ v
		gt := ge            // sl[gt:] are > v
		if gt < len(sl) {
			if c, _ := spi.Compare(sl[gt].val, v); c == 0 {
				gt++
			}
		}
		run := map[spi.CmpOp][]*posting{spi.OpGt: sl[gt:], spi.OpGte: sl[ge:], spi.OpLt: sl[:ge], spi.OpLte: sl[:gt]}[e.Op]
		for _, p := range run {
			p.orInto(out)
		}
	}
	return out
}

// fill sets the bits of rows 0 to nrows-1.
func fill(b []uint64, nrows int) {
	for w := range b {
		b[w] = ^uint64(0)
	}
	if r := nrows & 63; r != 0 {
		b[len(b)-1] = 1<<r - 1
	}
}
