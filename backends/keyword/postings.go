package keyword

import (
	"math/bits"
	"slices"
)

//go:generate go run ./internal/packgen -o unpack_gen.go

// Block postings: the documents holding one term, in blocks of blockSize
// postings, each block bit-packed and carrying the bound of block-max
// pruning (prune.go).
//
// A sealed block packs its blockSize postings as three arrays of
// fixed-width integers, each array blockSize·w bits = 2w words (w ≤ 32):
// the slot gaps (slot − previous slot − 1, the first block's previous
// slot taken as −1), the title frequencies and the text frequencies. The
// widths are the block's own (the bits of its largest value), so a block
// whose postings all have title frequency 0 spends nothing on it. The
// postings after the last full block stay unpacked in the tail until
// blockSize of them are there.
//
// The bound of a block is what its postings' scores cannot exceed, for
// any BM25 parameters and any tenant's statistics: a field's part of a
// term's score, f / (f + k1·(1 − b + b·len/avglen)), grows with the
// frequency f and falls with the length len, whatever k1 ≥ 0, 0 ≤ b ≤ 1
// and avglen > 0 are. So a block keeps frequencies and lengths, not
// scores, as Lucene's impacts do: for the title the greatest frequency
// and the least length (of the postings holding the term in the title),
// for the text up to textPoints (frequency, length) points such that every
// posting's (f, len) is dominated by one of them (a point with frequency
// ≥ f and length ≤ len): the Pareto frontier of the block's postings,
// thinned by merging neighbours into their (greatest f, least len) when
// it has more points. Lengths are kept as 16-bit floors. The score of the
// bound is computed at query time with the query's idf, averages and
// parameters (bound.score).
//
// Postings are only appended (slots grow) and sealed blocks never change;
// a deleted or replaced document's postings stay until a compaction
// rewrites the lists, so a block's bound may count a dead slot: it stays
// a true bound, only less tight.

const blockSize = 128

// textPoints is the number of (frequency, length) points a block keeps
// for the text field.
const textPoints = 3

// posting is one document of a term: its slot and the term's frequency in
// title and text (each capped at 65535).
type posting struct {
	slot     uint32
	tfT, tfX uint16
}

// point is a (frequency, length floor) pair of a bound; frequency 0 is an
// empty point.
type point struct{ tf, len uint16 }

// bound dominates every posting of a block: tfT ≤ tT and, when tfT > 0,
// lenT ≥ lT; and when tfX > 0, some x[i] has x[i].tf ≥ tfX and x[i].len ≤
// lenX.
type bound struct {
	tT, lT uint16
	x      [textPoints]point
}

// block is a sealed block: its last slot, where its packed words start in
// postings.data, the bit widths of its three arrays, and its bound.
type block struct {
	last       uint32
	off        uint32
	wd, wt, wx uint8
	b          bound
}

// postings of one term. Invariants (checked by checkInvariants in the
// tests): slots strictly ascend over the blocks and then the tail; every
// block holds blockSize postings and the tail fewer; block i's words are
// data[blocks[i].off : blocks[i].off+2·(wd+wt+wx)]; each bound dominates
// its postings (tailB the tail's); df is the number of live documents
// holding the term.
type postings struct {
	blocks []block
	data   []uint64
	tail   []posting
	tailB  bound
	df     int32
}

// add appends a posting of slot, above every slot the list holds; it
// seals the tail when it is full. lens holds every slot's lengths, e's
// included (for the bounds).
func (p *postings) add(e posting, lens []docLen) {
	if len(p.tail) == 0 {
		p.tailB = bound{lT: 0xffff}
	}
	p.tail = append(p.tail, e)
	p.tailB.widen(e, lens[e.slot])
	if len(p.tail) == blockSize {
		p.seal(lens)
	}
}

// widen makes b dominate one more posting as a single point per field.
func (b *bound) widen(e posting, l docLen) {
	if e.tfT > 0 {
		b.tT = max(b.tT, e.tfT)
		b.lT = min(b.lT, floor16(l.t))
	}
	if e.tfX > 0 {
		if b.x[0].tf == 0 {
			b.x[0] = point{e.tfX, floor16(l.x)}
		} else {
			b.x[0] = point{max(b.x[0].tf, e.tfX), min(b.x[0].len, floor16(l.x))}
		}
	}
}

func floor16(n uint32) uint16 { return uint16(min(n, 0xffff)) }

// seal packs the full tail into a block.
func (p *postings) seal(lens []docLen) {
	ps := p.tail
	prev := int64(-1)
	if n := len(p.blocks); n > 0 {
		prev = int64(p.blocks[n-1].last)
	}
	var gaps, tfT, tfX [blockSize]uint32
	var orGap, orT, orX uint32
	for i, e := range ps {
		gaps[i] = uint32(int64(e.slot) - prev - 1)
		prev = int64(e.slot)
		tfT[i], tfX[i] = uint32(e.tfT), uint32(e.tfX)
		orGap |= gaps[i]
		orT |= tfT[i]
		orX |= tfX[i]
	}
	blk := block{last: ps[len(ps)-1].slot, off: uint32(len(p.data)),
		wd: uint8(bits.Len32(orGap)), wt: uint8(bits.Len32(orT)), wx: uint8(bits.Len32(orX))}
	p.data = pack(p.data, &gaps, uint(blk.wd))
	p.data = pack(p.data, &tfT, uint(blk.wt))
	p.data = pack(p.data, &tfX, uint(blk.wx))
	blk.b = frontier(ps, p.tailB, lens)
	p.blocks = append(p.blocks, blk)
	p.tail = nil // most lists stop short of another block: no spare capacity kept
}

// frontier returns the bound of a block: the title part of tb (already
// exact: greatest frequency, least length) and the text postings' Pareto
// frontier thinned to textPoints points.
func frontier(ps []posting, tb bound, lens []docLen) bound {
	b := bound{tT: tb.tT, lT: tb.lT}
	// Length ascending, then frequency descending: a point is on the
	// frontier when its frequency beats every shorter one's. Each point is
	// a key that sorts so (length above, the frequency's complement below),
	// in arrays on the stack: a block is sealed for every 128 postings.
	var keyBuf [blockSize]uint32
	keys := keyBuf[:0]
	for _, e := range ps {
		if e.tfX > 0 {
			keys = append(keys, uint32(floor16(lens[e.slot].x))<<16|uint32(0xffff-e.tfX))
		}
	}
	slices.Sort(keys)
	var frBuf [blockSize]point
	fr := frBuf[:0]
	for _, k := range keys {
		q := point{tf: 0xffff - uint16(k), len: uint16(k >> 16)}
		if len(fr) == 0 || q.tf > fr[len(fr)-1].tf {
			fr = append(fr, q)
		}
	}
	ref := 1.0
	if len(keys) > 0 {
		ref = max(1, float64(keys[len(keys)/2]>>16))
	}
	copy(b.x[:], thin(fr, ref))
	return b
}

// thin merges the neighbours of the frontier fr (ascending in both length
// and frequency) whose merged point (the longer's frequency at the
// shorter's length) overstates least, measured at Lucene's defaults and
// the block's median length ref, until textPoints are left. Merging
// keeps every posting dominated.
func thin(fr []point, ref float64) []point {
	sat := func(q point) float64 {
		f := float64(q.tf)
		return f / (f + 1.2*(0.25+0.75*float64(q.len)/ref))
	}
	for len(fr) > textPoints {
		best, cost := 0, 0.0
		for i := 0; i+1 < len(fr); i++ {
			c := sat(point{fr[i+1].tf, fr[i].len}) - sat(fr[i+1])
			if i == 0 || c < cost {
				best, cost = i, c
			}
		}
		fr[best] = point{fr[best+1].tf, fr[best].len}
		fr = slices.Delete(fr, best+1, best+2)
	}
	return fr
}

// pack appends the blockSize values of v, each of w bits, as 2w words.
func pack(dst []uint64, v *[blockSize]uint32, w uint) []uint64 {
	if w == 0 {
		return dst
	}
	n := len(dst)
	dst = append(dst, make([]uint64, 2*w)...)
	out := dst[n:]
	for i, x := range v {
		bit := uint(i) * w
		out[bit>>6] |= uint64(x) << (bit & 63)
		if (bit&63)+w > 64 {
			out[bit>>6+1] |= uint64(x) >> (64 - bit&63)
		}
	}
	return dst
}

// unpack reads blockSize values of w bits from the 2w words of src into v
// and returns the words after them: two runs of 64 values, each filling w
// words, by the width's generated unpacker (unpack_gen.go).
func unpack(src []uint64, v *[blockSize]uint32, w uint) []uint64 {
	f := unpackers[w]
	f(src[:w], v[:64])
	f(src[w:2*w], v[64:])
	return src[2*w:]
}

// decode unpacks block i of p into slots and frequencies.
func (p *postings) decode(i int, slots, tfT, tfX *[blockSize]uint32) {
	p.decodeSlots(i, slots)
	p.decodeFreqs(i, tfT, tfX)
}

// decodeSlots unpacks block i's slots.
func (p *postings) decodeSlots(i int, slots *[blockSize]uint32) {
	b := &p.blocks[i]
	next := uint32(0) // the least slot the block can hold
	if i > 0 {
		next = p.blocks[i-1].last + 1
	}
	w := uint32(b.wd)
	f, src := gapUnpackers[w], p.data[b.off:]
	next = f(src[:w], slots[:64], next)
	f(src[w:2*w], slots[64:], next)
}

// decodeFreqs unpacks block i's title and text frequencies.
func (p *postings) decodeFreqs(i int, tfT, tfX *[blockSize]uint32) {
	b := &p.blocks[i]
	src := unpack(p.data[b.off+2*uint32(b.wd):], tfT, uint(b.wt))
	unpack(src, tfX, uint(b.wx))
}

// each calls fn with every posting of p in slot order.
func (p *postings) each(fn func(posting)) {
	var slots, tfT, tfX [blockSize]uint32
	for i := range p.blocks {
		p.decode(i, &slots, &tfT, &tfX)
		for j := range slots {
			fn(posting{slots[j], uint16(tfT[j]), uint16(tfX[j])})
		}
	}
	for _, e := range p.tail {
		fn(e)
	}
}

// count is the number of postings, live or dead.
func (p *postings) count() int { return len(p.blocks)*blockSize + len(p.tail) }

// trim gives back the spare capacity of a list built in one go.
func (p *postings) trim() {
	p.blocks, p.data, p.tail = slices.Clip(p.blocks), slices.Clip(p.data), slices.Clip(p.tail)
}
