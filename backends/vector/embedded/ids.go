package embedded

import (
	"hash/maphash"
	"unsafe"
)

// rowIDs holds the rows' document ids in one byte arena and maps each id
// to its row with an open-addressing hash table (linear probing,
// backward-shift deletion): about 30 bytes a row where a []string and a
// map[string]int held a string header, a separate allocation for the
// bytes and the map's slot (key, value and the map's spare room), about
// 80 bytes a row.
//
// Rows follow the index's swap-remove: moving the last row into a hole
// copies its span (the bytes stay where they are), so a delete leaves its
// id's bytes behind as garbage; once the garbage outweighs the live ids
// the arena is rewritten in row order (compact).
//
// Invariant (checkRowIDs in the model test checks it after every
// operation): span has one entry per row, each naming bytes inside
// arena; tab holds row+1 of exactly the rows (0 is an empty cell), each
// reachable from its id's home cell without crossing an empty cell; n,
// the rows in tab, is at most half of len(tab); dead is len(arena) less
// the bytes the spans name.
type rowIDs struct {
	arena []byte
	span  []uint64 // row -> start<<16 | length (ids are at most bolt.MaxKeySize, 32 KiB)
	tab   []uint32
	dead  int
	seed  maphash.Seed
}

func newRowIDs() rowIDs { return rowIDs{tab: make([]uint32, 16), seed: maphash.MakeSeed()} }

func (t *rowIDs) len() int { return len(t.span) }

// bytesOf returns row r's id without copying: valid while the caller
// holds the lock it read the index under.
func (t *rowIDs) bytesOf(r int) []byte {
	s := t.span[r]
	start := s >> 16
	return t.arena[start : start+s&0xffff]
}

// id returns row r's id as a new string.
func (t *rowIDs) id(r int) string { return string(t.bytesOf(r)) }

func (t *rowIDs) home(b []byte) uint64 { return maphash.Bytes(t.seed, b) & uint64(len(t.tab)-1) }

// find returns the row of id.
func (t *rowIDs) find(id string) (int, bool) {
	b := unsafe.Slice(unsafe.StringData(id), len(id))
	mask := uint64(len(t.tab) - 1)
	for i := t.home(b); ; i = (i + 1) & mask {
		c := t.tab[i]
		if c == 0 {
			return 0, false
		}
		if string(t.bytesOf(int(c-1))) == id {
			return int(c - 1), true
		}
	}
}

// reserve makes room for n more rows.
func (t *rowIDs) reserve(n int) {
	if cap(t.span)-len(t.span) < n {
		s := make([]uint64, len(t.span), len(t.span)+n)
		copy(s, t.span)
		t.span = s
	}
	size := len(t.tab)
	for 2*(len(t.span)+n) > size {
		size *= 2
	}
	if size != len(t.tab) {
		t.rehash(size)
	}
}

// push appends a row holding id, which no row holds, and returns it.
func (t *rowIDs) push(id string) int {
	return t.pushBytes(unsafe.Slice(unsafe.StringData(id), len(id)))
}

// pushBytes is push of an id given as bytes, which it copies.
func (t *rowIDs) pushBytes(id []byte) int {
	r := len(t.span)
	t.span = append(t.span, uint64(len(t.arena))<<16|uint64(len(id)))
	t.arena = append(t.arena, id...)
	if 2*len(t.span) > len(t.tab) {
		t.rehash(2 * len(t.tab))
	} else {
		t.insert(r)
	}
	return r
}

func (t *rowIDs) insert(r int) {
	mask := uint64(len(t.tab) - 1)
	i := t.home(t.bytesOf(r))
	for t.tab[i] != 0 {
		i = (i + 1) & mask
	}
	t.tab[i] = uint32(r) + 1
}

// rehash rebuilds tab with size cells (a power of two) from the spans.
func (t *rowIDs) rehash(size int) {
	t.tab = make([]uint32, size)
	for r := range t.span {
		t.insert(r)
	}
}

// cell returns the cell of tab holding row r.
func (t *rowIDs) cell(r int) uint64 {
	mask := uint64(len(t.tab) - 1)
	i := t.home(t.bytesOf(r))
	for t.tab[i] != uint32(r)+1 {
		i = (i + 1) & mask
	}
	return i
}

// remove deletes row r, moving the last row into its place as the
// index's remove does.
func (t *rowIDs) remove(r int) {
	last := len(t.span) - 1
	t.dead += int(t.span[r] & 0xffff)
	t.unlink(t.cell(r))
	if r != last {
		t.tab[t.cell(last)] = uint32(r) + 1
		t.span[r] = t.span[last]
	}
	t.span = t.span[:last]
	if t.dead > 1<<16 && 2*t.dead > len(t.arena) {
		t.compact()
	}
}

// unlink empties cell i, shifting later cells of its run back into the
// hole when their home cell is not in (hole, cell].
func (t *rowIDs) unlink(i uint64) {
	mask := uint64(len(t.tab) - 1)
	for j := i; ; {
		t.tab[i] = 0
		for {
			j = (j + 1) & mask
			c := t.tab[j]
			if c == 0 {
				return
			}
			home := t.home(t.bytesOf(int(c - 1)))
			if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
				t.tab[i] = c
				i = j
				break
			}
		}
	}
}

// compact rewrites the arena with the live ids only, in row order.
func (t *rowIDs) compact() {
	arena := make([]byte, 0, len(t.arena)-t.dead)
	for r := range t.span {
		b := t.bytesOf(r)
		t.span[r] = uint64(len(arena))<<16 | uint64(len(b))
		arena = append(arena, b...)
	}
	t.arena, t.dead = arena, 0
}
