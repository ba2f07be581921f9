package keyword

import (
	"hash/maphash"
	"unsafe"
)

// idTable holds every slot's document id in one byte arena and maps the
// live ids to their slots with an open-addressing hash table (linear
// probing, backward-shift deletion): a few bytes per document where a Go
// map from id strings would hold a string header, a separate allocation
// and the map's own slot per id.
//
// Invariants (checked by checkInvariants in the tests): off has one entry
// per slot plus one, ascending, slot s's id being arena[off[s]:off[s+1]];
// tab holds slot+1 of exactly the live slots (0 is an empty cell), each
// reachable from its id's home cell without crossing an empty cell; n is
// the number of non-empty cells and at most half of len(tab).
type idTable struct {
	arena []byte
	off   []uint64
	tab   []uint32
	n     int
	seed  maphash.Seed
}

func newIDTable() idTable {
	return idTable{off: []uint64{0}, tab: make([]uint32, 16), seed: maphash.MakeSeed()}
}

// slots is the number of slots, live or dead.
func (t *idTable) slots() int { return len(t.off) - 1 }

// bytesOf returns slot s's id without copying (valid until the arena
// grows: callers hold the index's lock).
func (t *idTable) bytesOf(s uint32) []byte { return t.arena[t.off[s]:t.off[s+1]] }

// id returns slot s's id as a new string.
func (t *idTable) id(s uint32) string { return string(t.bytesOf(s)) }

func (t *idTable) hash(b []byte) uint64 { return maphash.Bytes(t.seed, b) }

// find returns the live slot of id.
func (t *idTable) find(id string) (uint32, bool) {
	b := unsafe.Slice(unsafe.StringData(id), len(id))
	mask := uint64(len(t.tab) - 1)
	for i := t.hash(b) & mask; ; i = (i + 1) & mask {
		c := t.tab[i]
		if c == 0 {
			return 0, false
		}
		if string(t.bytesOf(c-1)) == id {
			return c - 1, true
		}
	}
}

// appendSlot adds a slot holding id, live; id must not be live already.
func (t *idTable) appendSlot(id string) uint32 {
	s := uint32(t.slots())
	t.arena = append(t.arena, id...)
	t.off = append(t.off, uint64(len(t.arena)))
	if 2*(t.n+1) > len(t.tab) {
		t.grow()
	}
	t.insert(s)
	return s
}

func (t *idTable) insert(s uint32) {
	mask := uint64(len(t.tab) - 1)
	i := t.hash(t.bytesOf(s)) & mask
	for t.tab[i] != 0 {
		i = (i + 1) & mask
	}
	t.tab[i] = s + 1
	t.n++
}

func (t *idTable) grow() {
	old := t.tab
	t.tab = make([]uint32, 2*len(old))
	t.n = 0
	for _, c := range old {
		if c != 0 {
			t.insert(c - 1)
		}
	}
}

// kill removes slot s (live) from the hash table; its id stays in the
// arena until a compaction.
func (t *idTable) kill(s uint32) {
	mask := uint64(len(t.tab) - 1)
	i := t.hash(t.bytesOf(s)) & mask
	for t.tab[i] != s+1 {
		i = (i + 1) & mask
	}
	// Backward shift: move later cells of the run into the hole when
	// their home cell is not in (hole, cell].
	for j := i; ; {
		t.tab[i] = 0
		for {
			j = (j + 1) & mask
			c := t.tab[j]
			if c == 0 {
				t.n--
				return
			}
			home := t.hash(t.bytesOf(c-1)) & mask
			if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
				t.tab[i] = c
				i = j
				break
			}
		}
	}
}
