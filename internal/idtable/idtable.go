// Package idtable maps document ids to dense entry numbers 0, 1, 2, …
// with the id bytes in one arena: ragd's one id table, used by the
// keyword postings (a slot per document version) and the embedded vector
// index (a row per document).
//
// A Table holds per entry 8 bytes of span (where its id lies in the
// arena) and the id's bytes, and per linked entry (one Lookup finds) a
// uint32 cell of an open-addressing hash table kept at most half full
// (linear probing, backward-shift deletion): at 1,000,000 entries 8 + 8.4
// bytes and the id, in three pointer-free arrays the collector never
// scans (BenchmarkBuild: 25 bytes an 8-byte id at 1,000,000). A Go
// map[string]int32 holds, per id, a string header and a separate
// allocation for the bytes (traced by the collector) and a slot of the
// map with its spare room: 64 bytes an 8-byte id (BenchmarkMapReference).
//
// No library fits those goals: the Go runtime's own map is already a
// swiss table, and the swiss-table packages (dolthub/swiss,
// cockroachdb/swiss) are maps of a key type, so a string key keeps the
// header and allocation per id; a map keyed by the id's hash would need
// 8-byte keys, slots of 16 bytes at a load of 7/8, and a collision list
// of its own. What ragd needs is a table whose keys live in an arena it
// owns, which is what this package is.
//
// Entries are appended at the end. Unlink removes an entry from the hash
// table but keeps it (its number and id stay readable): the keyword
// postings keep dead slots until a rebuild. SwapRemove deletes an entry
// by moving the last one into its place: the vector index deletes rows
// that way. The id bytes of a swap-removed entry stay in the arena as
// garbage until garbage makes up half the arena (and at least 64 KiB),
// when the arena is rewritten in entry order.
//
// A Table is not safe for concurrent use, with two exceptions that its
// users rely on: methods that only read (Len, Linked, Bytes, String,
// Lookup) may run at once on any number of goroutines while nothing
// writes; and a Frozen view may be read on any goroutine while the table
// itself only appends and unlinks (see Frozen).
package idtable

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"slices"
	"unsafe"
)

const (
	// MaxLen is the longest id a Table holds: 16 MiB less a byte.
	MaxLen = 1<<lenBits - 1
	// MaxEntries is the most entries a Table holds (a cell holds an
	// entry's number plus one in a uint32).
	MaxEntries = 1<<32 - 1

	lenBits    = 24
	maxArena   = 1<<(64-lenBits) - 1 // 1 TiB: the most arena bytes a span can address
	minCells   = 16
	compactMin = 1 << 16 // the least garbage (bytes) worth a compaction
)

// Table maps ids to entries. The zero value is an empty table ready to
// use.
//
// Invariant (Check verifies it): span has one entry per entry, each
// naming bytes inside arena, and dead is len(arena) less the bytes the
// spans name; cells is empty or a power of two long, at least minCells,
// and holds e+1 of each linked entry e exactly once (0 is an empty cell),
// each reachable from its id's home cell without crossing an empty cell;
// n is the number of non-empty cells, at most half of len(cells); no two
// linked entries hold the same id.
type Table struct {
	arena []byte
	span  []uint64 // entry -> start<<lenBits | length: its id is arena[start:start+length]
	cells []uint32
	n     int
	dead  int
	seed  maphash.Seed
}

// Len is the number of entries, linked or not.
func (t *Table) Len() int { return len(t.span) }

// Linked is the number of entries Lookup finds.
func (t *Table) Linked() int { return t.n }

// IDBytes is the bytes the entries' ids hold together.
func (t *Table) IDBytes() int { return len(t.arena) - t.dead }

// Bytes returns entry e's id without copying. It is valid until the
// table next changes; callers read it under the lock that orders the
// table's writes (its capacity ends with the id, so an append to it
// copies).
func (t *Table) Bytes(e int) []byte {
	b := t.key(e)
	return b[:len(b):len(b)]
}

// key is entry e's id, Bytes without the capacity cut.
func (t *Table) key(e int) []byte {
	s := t.span[e]
	return t.arena[s>>lenBits : s>>lenBits+s&MaxLen]
}

// String returns entry e's id as a new string.
func (t *Table) String(e int) string { return string(t.key(e)) }

func (t *Table) home(id []byte) uint64 {
	return maphash.Bytes(t.seed, id) & uint64(len(t.cells)-1)
}

// Lookup returns the linked entry holding id.
func (t *Table) Lookup(id string) (int, bool) {
	if len(t.cells) == 0 {
		return 0, false
	}
	mask := uint64(len(t.cells) - 1)
	for i := t.home(unsafe.Slice(unsafe.StringData(id), len(id))); ; i = (i + 1) & mask {
		c := t.cells[i]
		if c == 0 {
			return 0, false
		}
		if string(t.key(int(c-1))) == id {
			return int(c - 1), true
		}
	}
}

// Append adds an entry holding id, linked, and returns its number (the
// previous Len). No linked entry may hold id already; an id longer than
// MaxLen, or a table past MaxEntries or 1 TiB of ids, panics (callers
// bound ids long before).
func (t *Table) Append(id string) int {
	return t.AppendBytes(unsafe.Slice(unsafe.StringData(id), len(id)))
}

// AppendBytes is Append of an id given as bytes, which it copies.
func (t *Table) AppendBytes(id []byte) int {
	if len(id) > MaxLen || uint64(len(t.arena))+uint64(len(id)) > maxArena || uint64(len(t.span)) >= MaxEntries {
		panic(fmt.Sprintf("idtable: append of a %d-byte id to %d entries, %d bytes", len(id), len(t.span), len(t.arena)))
	}
	if 2*(t.n+1) > len(t.cells) {
		t.rehash(max(minCells, 2*len(t.cells)))
	}
	e := len(t.span)
	t.span = append(t.span, uint64(len(t.arena))<<lenBits|uint64(len(id)))
	t.arena = append(t.arena, id...)
	t.link(e)
	return e
}

// Reserve makes room for entries more entries holding bytes more id
// bytes, all linked, so that appending them allocates nothing.
func (t *Table) Reserve(entries, bytes int) {
	t.span = slices.Grow(t.span, entries)
	t.arena = slices.Grow(t.arena, bytes)
	size := max(minCells, len(t.cells))
	for 2*(t.n+entries) > size {
		size *= 2
	}
	if size != len(t.cells) {
		t.rehash(size)
	}
}

// link puts entry e in the first empty cell from its home.
func (t *Table) link(e int) {
	mask := uint64(len(t.cells) - 1)
	i := t.home(t.key(e))
	for t.cells[i] != 0 {
		i = (i + 1) & mask
	}
	t.cells[i] = uint32(e) + 1
	t.n++
}

// rehash rebuilds the cells, size of them (a power of two), from the
// linked entries: in entry order when every entry is linked (reading
// the spans and the arena in sequence), else in the old cells' order.
func (t *Table) rehash(size int) {
	if len(t.cells) == 0 {
		t.seed = maphash.MakeSeed()
	}
	old, all := t.cells, t.n == len(t.span)
	t.cells, t.n = make([]uint32, size), 0
	if all {
		for e := range t.span {
			t.link(e)
		}
		return
	}
	for _, c := range old {
		if c != 0 {
			t.link(int(c - 1))
		}
	}
}

// cell returns the cell holding entry e, if e is linked.
func (t *Table) cell(e int) (uint64, bool) {
	if len(t.cells) == 0 {
		return 0, false
	}
	mask := uint64(len(t.cells) - 1)
	for i := t.home(t.key(e)); ; i = (i + 1) & mask {
		switch t.cells[i] {
		case uint32(e) + 1:
			return i, true
		case 0:
			return 0, false
		}
	}
}

// Unlink removes linked entry e from the hash table: Lookup no longer
// finds it, and its number and id stay. Unlinking an entry that is not
// linked panics: the caller's own bookkeeping is broken.
func (t *Table) Unlink(e int) {
	i, ok := t.cell(e)
	if !ok {
		panic(fmt.Sprintf("idtable: unlink of entry %d, which is not linked", e))
	}
	t.empty(i)
}

// empty empties cell i, shifting later cells of its run back into the
// hole when their home cell is not in (hole, cell], so that every linked
// entry stays reachable from its home without crossing an empty cell.
func (t *Table) empty(i uint64) {
	mask := uint64(len(t.cells) - 1)
	for j := i; ; {
		t.cells[i] = 0
		for {
			j = (j + 1) & mask
			c := t.cells[j]
			if c == 0 {
				t.n--
				return
			}
			home := t.home(t.key(int(c - 1)))
			if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
				t.cells[i] = c
				i = j
				break
			}
		}
	}
}

// SwapRemove deletes entry e, linked or not, and moves the last entry
// into its place (number e), as a slice's swap-remove does. It rewrites
// entries in place: see Frozen.
func (t *Table) SwapRemove(e int) {
	last := len(t.span) - 1
	if i, ok := t.cell(e); ok {
		t.empty(i)
	}
	t.dead += int(t.span[e] & MaxLen)
	if e != last {
		if i, ok := t.cell(last); ok {
			t.cells[i] = uint32(e) + 1
		}
		t.span[e] = t.span[last]
	}
	t.span = t.span[:last]
	if t.dead >= compactMin && 2*t.dead > len(t.arena) {
		t.compact()
	}
}

// compact rewrites the arena with the entries' ids only, in entry order,
// into a new array (ids read before stay as they were).
func (t *Table) compact() {
	arena := make([]byte, 0, len(t.arena)-t.dead)
	for e := range t.span {
		b := t.key(e)
		t.span[e] = uint64(len(arena))<<lenBits | uint64(len(b))
		arena = append(arena, b...)
	}
	t.arena, t.dead = arena, 0
}

// Frozen returns a view of t's entries as they are now, for a reader
// holding no lock while t's writer goes on: the view answers Len, Bytes
// and String for them as t did, and links none (its Lookup finds
// nothing; it is not to be written). Safe while t only appends and
// unlinks, which never write the bytes below the lengths the view holds;
// SwapRemove rewrites entries in place, so a table that swap-removes must
// not be frozen.
func (t *Table) Frozen() Table {
	return Table{arena: t.arena[:len(t.arena):len(t.arena)], span: t.span[:len(t.span):len(t.span)], dead: t.dead}
}

// Footprint is the heap a Table holds, in bytes, by the capacity of its
// arrays.
type Footprint struct {
	Arena int // the id bytes, garbage included
	Spans int // 8 bytes per entry
	Cells int // 4 bytes per cell of the hash table
}

// Footprint returns the heap t holds.
func (t *Table) Footprint() Footprint {
	return Footprint{Arena: cap(t.arena), Spans: 8 * cap(t.span), Cells: 4 * cap(t.cells)}
}

// Check verifies t's invariant (the Table doc), for tests: it costs a
// pass over every entry and cell.
func (t *Table) Check() error {
	named := 0
	for e, s := range t.span {
		start, n := int(s>>lenBits), int(s&MaxLen)
		if start+n > len(t.arena) {
			return fmt.Errorf("entry %d: span [%d, %d) past the arena (%d bytes)", e, start, start+n, len(t.arena))
		}
		named += n
	}
	if t.dead != len(t.arena)-named {
		return fmt.Errorf("dead %d, want %d (arena %d, named %d)", t.dead, len(t.arena)-named, len(t.arena), named)
	}
	if len(t.cells) != 0 && (len(t.cells) < minCells || bits.OnesCount(uint(len(t.cells))) != 1) {
		return fmt.Errorf("%d cells: not a power of two from %d", len(t.cells), minCells)
	}
	if 2*t.n > len(t.cells) {
		return fmt.Errorf("%d linked in %d cells: more than half full", t.n, len(t.cells))
	}
	seen := make([]bool, len(t.span))
	linked := 0
	mask := uint64(len(t.cells) - 1)
	for i, c := range t.cells {
		if c == 0 {
			continue
		}
		e := int(c - 1)
		if e >= len(t.span) || seen[e] {
			return fmt.Errorf("cell %d: entry %d out of range or twice", i, e)
		}
		seen[e] = true
		linked++
		for j := t.home(t.Bytes(e)); j != uint64(i); j = (j + 1) & mask {
			if t.cells[j] == 0 {
				return fmt.Errorf("entry %d (cell %d) unreachable from its home cell", e, i)
			}
		}
	}
	if linked != t.n {
		return fmt.Errorf("n %d, %d cells hold an entry", t.n, linked)
	}
	for e, ok := range seen {
		if got, found := t.Lookup(string(t.Bytes(e))); ok && (!found || got != e) {
			return errors.New("two linked entries hold the same id")
		}
	}
	return nil
}
