package embedded

// rowCodes holds the rows' int8 codes, row i at b[i*dim:(i+1)*dim], in
// memory the Go collector does not manage where the platform allows it
// (an anonymous mapping: codes_unix.go): at 1,000,000 rows of 384
// dimensions they are 366 MiB, two fifths of the store's heap, and
// counting them in the heap let the collector's headroom (GOGC) grow the
// heap by as much again. The codes hold no pointers, so the collector
// never needed to see them. Pages of the mapping beyond len(b) are not
// touched, so the capacity kept for growth costs address space, not
// memory.
//
// Invariant: b is nil or starts at the start of its mapping and cap(b)
// is the mapping's length, so free can unmap it; nothing outside the
// index keeps a slice of b past the lock it read it under (searches read
// it under the Store's read lock, writes and the build's regroup under
// the writers' mutex), since free and the growth that replaces the
// mapping unmap the old one, and a slice into unmapped memory faults the
// process instead of panicking.
type rowCodes struct {
	b []int8
}

// minCodeMapping is the smallest mapping allocated, so that a small
// index does not map a page per row.
const minCodeMapping = 64 << 10

// reserve makes room for n more bytes without moving b again before
// they are used.
func (c *rowCodes) reserve(n int) {
	if need := len(c.b) + n; need > cap(c.b) {
		freeCodes(c.adopt(c.copyTo(need)))
	}
}

// extend appends n zero bytes and returns them.
func (c *rowCodes) extend(n int) []int8 {
	if nb := c.grown(n); nb != nil {
		freeCodes(c.adopt(nb))
	}
	l := len(c.b)
	c.b = c.b[:l+n]
	clear(c.b[l:])
	return c.b[l:]
}

// grown returns, when n more bytes do not fit b, a copy of b in a new
// mapping with room for them and more (twice the capacity), for adopt;
// nil when they fit. It only reads b, so searches may read b meanwhile:
// a writer copies before it takes the Store's memory lock, and adopts
// under it, since copying into fresh pages is slow (540 MB, about
// 1,400,000 rows of 384 dimensions, took 0.5–1.7 s) and every search
// would wait for it. Nothing may change b between grown and adopt (the
// caller holds the writers' mutex throughout).
func (c *rowCodes) grown(n int) []int8 {
	l := len(c.b)
	if l+n <= cap(c.b) {
		return nil
	}
	return c.copyTo(max(l+n, 2*cap(c.b), minCodeMapping))
}

// copyTo returns a copy of b in a new mapping of capacity size.
func (c *rowCodes) copyTo(size int) []int8 {
	nb := allocCodes(size)
	copy(nb, c.b)
	return nb[:len(c.b)]
}

// adopt makes nb, a copy of b from grown or copyTo, the codes (nil: no
// change) and returns the old mapping, for freeCodes once no search can
// be reading it.
func (c *rowCodes) adopt(nb []int8) (old []int8) {
	if nb == nil {
		return nil
	}
	old, c.b = c.b, nb
	return old
}

// truncate keeps the first n bytes.
func (c *rowCodes) truncate(n int) { c.b = c.b[:n] }

// free releases the codes; b is nil after it.
func (c *rowCodes) free() {
	old := c.b
	c.b = nil
	freeCodes(old)
}
