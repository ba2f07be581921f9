package embedded

import (
	"math/bits"
	"slices"
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
	n    int      // rows in the set
	rows []int32  // the rows while bits is nil
	bits []uint64 // bit r is row r; nil while the set is a list
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

// postings maps each pair held by some row to its rows.
type postings map[pair]*posting

// add records that row r holds the pair k=v; nrows counts r.
func (ps postings) add(r int, k, v string, nrows int) {
	p := ps[pair{k, v}]
	if p == nil {
		p = &posting{}
		ps[pair{k, v}] = p
	}
	p.add(r, nrows)
}

// del forgets that row r holds the pair k=v; nrows counts r.
func (ps postings) del(r int, k, v string, nrows int) {
	pk := pair{k, v}
	p := ps[pk]
	p.del(r, nrows)
	if p.n == 0 {
		delete(ps, pk)
	}
}

// move renames row from, holding md's pairs, as row to.
func (ps postings) move(from, to int, md map[string]string) {
	for k, v := range md {
		ps[pair{k, v}].move(from, to)
	}
}

// rows returns the bitset of the nrows rows matching terms (AND across
// terms, OR within a term's values).
func (ps postings) rows(terms []term, nrows int) []uint64 {
	words := (nrows + 63) >> 6
	out := make([]uint64, words)
	var tmp []uint64
	for i, t := range terms {
		dst := out
		if i > 0 {
			if tmp == nil {
				tmp = make([]uint64, words)
			} else {
				clear(tmp)
			}
			dst = tmp
		}
		for _, v := range t.vals {
			if p := ps[pair{t.key, v}]; p != nil {
				p.orInto(dst)
			}
		}
		if i > 0 {
			for w := range out {
				out[w] &= tmp[w]
			}
		}
	}
	return out
}
