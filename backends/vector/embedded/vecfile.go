package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// VectorFileName is the file beside FileName holding the float32
// vectors of the records.
const VectorFileName = "vectors.vec"

// The vectors file holds the records' float32 vectors out of the bbolt
// file, so that a record (tenant, metadata, text) is small enough for
// several to share a page. It is append-only: an entry is
//
//	vid (8 bytes little-endian) | dim × float32 little-endian | CRC-32C of the rest (4 bytes)
//
// and a record names its entry by vid (codec.go). Vids increase along the
// file. A commit appends its vectors and makes them durable before the
// bbolt transaction that names them, so a crash leaves at worst entries
// no record names, never a record without its vector; an entry is never
// written twice, so a reader holding an older bbolt transaction reads
// the vector its records name whatever commits meanwhile.
//
// Replaced and deleted vectors stay as garbage until a compaction
// (compact.go) copies the live entries to a new file and renames it over
// the old one: at Open, and in the background once garbage outnumbers the
// live entries. Each file is a generation (vecGen); a reader takes the
// current one with its bbolt transaction (Store.readTx) and reads from it
// until it ends, so a compaction that retires the file a reader's records
// point into closes it only after the last such reader is done.
//
// Reads on Linux copy entries from a read-only shared mapping of the
// file (mapFile), sized ahead of the file (mapAhead) and made larger when
// appends outgrow it; elsewhere, and when mapping fails, they use ReadAt.
// (A read through ReadAt is a system call: 13% of a vector search's CPU
// at 1,000,000 documents, rescoring about 280 entries.) A generation's
// mapping is replaced and unmapped only under mu held for writing, and a
// read copies out of it under mu held for reading; it is unmapped when
// the file closes, after the generation's last reader.
//
// Invariant (checked by TestVectorFile): each generation's vids are
// strictly increasing and hold the vid of every whole entry of its file,
// in file order; next is above all of them; the current file is
// len(vids) whole entries long. A reader whose transaction began while
// generation g was current finds in g every vid its records name.
type vectorFile struct {
	path   string
	dim    int
	entry  int64 // bytes per entry
	noSync bool
	mapMin int64 // mapMin, smaller in tests

	mu  sync.RWMutex // guards cur, and cur's vids and end against appends
	cur *vecGen
	// next is the vid of the next entry; broken, when set, fails every
	// append (a compaction renamed its file over the current one but
	// could not open it). Both under the Store's writers' mutex.
	next   uint64
	broken error
}

// vecGen is one vectors file: the current one, which appends go to, or
// one a compaction replaced, open until its last reader releases it.
type vecGen struct {
	f       *os.File
	vids    []uint64 // the current generation's grows under vectorFile.mu
	m       []byte   // the file mapped, under vectorFile.mu; nil: not mapped (yet)
	noMap   bool     // mapping failed: ReadAt only
	refs    atomic.Int64
	retired atomic.Bool
	once    sync.Once
	err     error // of the close
}

// close closes g's file and unmaps it, once. The caller makes sure no
// reader holds g (retired with no references, or the store's end).
func (g *vecGen) close() error {
	g.once.Do(func() {
		g.err = g.f.Close()
		if g.m != nil {
			_ = unmapFile(g.m)
			g.m = nil
		}
	})
	return g.err
}

// mapMin is the smallest mapping, and mapAhead how many times the bytes
// a read needs a new mapping covers: a file growing by appends is mapped
// again a few times in its life.
const (
	mapMin   = 64 << 20
	mapAhead = 4
)

// mapped returns g's mapping when it covers the first end bytes, mapping
// the file again when it does not. The caller holds v.mu for reading;
// mapped may release it and take it again, and returns with it held for
// reading. nil when the file cannot be mapped.
func (v *vectorFile) mapped(g *vecGen, end int64) []byte {
	if int64(len(g.m)) >= end {
		return g.m
	}
	if g.noMap {
		return nil
	}
	v.mu.RUnlock()
	v.mu.Lock()
	if int64(len(g.m)) < end && !g.noMap {
		m, err := mapFile(g.f, max(v.mapMin, mapAhead*end))
		if err != nil {
			g.noMap = true
		} else {
			if g.m != nil {
				_ = unmapFile(g.m) // no reader is in it: they hold mu for reading
			}
			g.m = m
		}
	}
	v.mu.Unlock()
	v.mu.RLock()
	if int64(len(g.m)) >= end {
		return g.m
	}
	return nil
}

// acquire returns the current generation, held until release.
func (v *vectorFile) acquire() *vecGen {
	v.mu.RLock()
	g := v.cur
	g.refs.Add(1)
	v.mu.RUnlock()
	return g
}

// release lets go of g; a retired generation's last reader closes it.
func (v *vectorFile) release(g *vecGen) {
	if g.refs.Add(-1) == 0 && g.retired.Load() {
		_ = g.close()
	}
}

// current reports whether g is the current generation.
func (v *vectorFile) current(g *vecGen) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.cur == g
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// openVectorFile opens or creates the vectors file, reading every entry's
// vid; a torn last entry (a crash during an append no record can name)
// is cut off.
func openVectorFile(path string, dim int, noSync bool) (*vectorFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("vector/embedded: open %s: %w", path, err)
	}
	v := &vectorFile{path: path, dim: dim, entry: int64(8 + 4*dim + 4), noSync: noSync, mapMin: mapMin, cur: &vecGen{f: f}, next: 1}
	if err := v.readVids(); err != nil {
		f.Close()
		return nil, err
	}
	return v, nil
}

func (v *vectorFile) readVids() error {
	g := v.cur
	st, err := g.f.Stat()
	if err != nil {
		return fmt.Errorf("vector/embedded: open %s: %w", v.path, err)
	}
	n := st.Size() / v.entry
	if st.Size()%v.entry != 0 {
		if err := g.f.Truncate(n * v.entry); err != nil {
			return fmt.Errorf("vector/embedded: open %s: cut a torn entry: %w", v.path, err)
		}
	}
	g.vids = make([]uint64, 0, n)
	// Whole entries, a few MiB at a time.
	per := max(1, (4<<20)/v.entry)
	buf := make([]byte, per*v.entry)
	for p := int64(0); p < n; p += per {
		m := min(per, n-p)
		if _, err := g.f.ReadAt(buf[:m*v.entry], p*v.entry); err != nil {
			return fmt.Errorf("vector/embedded: open %s: %w", v.path, err)
		}
		for j := range m {
			vid := binary.LittleEndian.Uint64(buf[j*v.entry:])
			if len(g.vids) > 0 && vid <= g.vids[len(g.vids)-1] {
				return fmt.Errorf("%w: %s: entry %d has vid %d after %d", ErrCorrupt, v.path, p+j, vid, g.vids[len(g.vids)-1])
			}
			g.vids = append(g.vids, vid)
		}
	}
	if len(g.vids) > 0 {
		v.next = g.vids[len(g.vids)-1] + 1
	}
	return nil
}

// appendVectors writes vecs as new entries, syncs the file and returns
// their vids. The caller holds the Store's writers' mutex.
func (v *vectorFile) appendVectors(vecs [][]float32) ([]uint64, error) {
	if len(vecs) == 0 {
		return nil, nil
	}
	if v.broken != nil {
		return nil, v.broken
	}
	buf := make([]byte, 0, int64(len(vecs))*v.entry)
	vids := make([]uint64, len(vecs))
	for i, vec := range vecs {
		vids[i] = v.next + uint64(i)
		start := len(buf)
		buf = binary.LittleEndian.AppendUint64(buf, vids[i])
		for _, x := range vec {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		}
		buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf[start:], crcTable))
	}
	g := v.cur // only a compaction holding the writers' mutex changes it
	v.mu.RLock()
	end := int64(len(g.vids)) * v.entry
	v.mu.RUnlock()
	if _, err := g.f.WriteAt(buf, end); err != nil {
		_ = g.f.Truncate(end) // what was written is named by no record
		return nil, err
	}
	if !v.noSync {
		if err := g.f.Sync(); err != nil {
			return nil, err
		}
	}
	v.mu.Lock()
	g.vids = append(g.vids, vids...)
	v.mu.Unlock()
	v.next += uint64(len(vecs))
	return vids, nil
}

// errNoVector means a record names a vector the file does not hold.
var errNoVector = errors.New("the vectors file holds no entry for the record")

// read appends the vector of entry vid of generation g to dst: from the
// mapping, else read into buf when it is an entry long (a caller reading
// many passes the same one), else into a new buffer.
func (v *vectorFile) read(g *vecGen, vid uint64, dst []float32, buf []byte) ([]float32, error) {
	v.mu.RLock()
	p, ok := findVid(g.vids, vid)
	if !ok {
		v.mu.RUnlock()
		return dst, fmt.Errorf("%w (vid %d)", errNoVector, vid)
	}
	off := int64(p) * v.entry
	if useMap {
		if m := v.mapped(g, off+v.entry); m != nil {
			dst, err := v.decode(m[off:off+v.entry], p, vid, dst)
			v.mu.RUnlock()
			return dst, err
		}
	}
	v.mu.RUnlock()
	if int64(len(buf)) != v.entry {
		buf = make([]byte, v.entry)
	}
	if _, err := g.f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return dst, err
	}
	return v.decode(buf, p, vid, dst)
}

// prefetch asks the CPU for vid's entry, when g is mapped that far, so
// that reading it next waits less on memory: rescoring reads entries at
// random, and the first touch of each took about 5% of a vector search's
// CPU (1.32M rows).
func (v *vectorFile) prefetch(g *vecGen, vid uint64) {
	v.mu.RLock()
	if p, ok := findVid(g.vids, vid); ok {
		if off := int64(p) * v.entry; int64(len(g.m)) >= off+v.entry {
			prefetch(&g.m[off], int(v.entry))
		}
	}
	v.mu.RUnlock()
}

// decode checks entry p, which should hold vid, and appends its vector
// to dst.
func (v *vectorFile) decode(e []byte, p int, vid uint64, dst []float32) ([]float32, error) {
	body, sum := e[:len(e)-4], binary.LittleEndian.Uint32(e[len(e)-4:])
	if crc32.Checksum(body, crcTable) != sum || binary.LittleEndian.Uint64(body) != vid {
		return dst, fmt.Errorf("vectors file entry %d (vid %d) fails its checksum", p, vid)
	}
	return appendFloats(dst, body[8:8+4*v.dim]), nil
}

// nativeLittle reports whether this machine stores a float32 as the
// vectors file does.
var nativeLittle = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// appendFloats appends the little-endian float32s of b to dst: on a
// little-endian machine, and b 4-aligned (an entry's vector is, in the
// mapping and in a buffer from make), as one copy of b's bytes (the loop
// below took a tenth of a vector search's CPU in rescoring).
func appendFloats(dst []float32, b []byte) []float32 {
	n := len(b) / 4
	if nativeLittle && n > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(b)))%4 == 0 {
		return append(dst, unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), n)...)
	}
	for i := range n {
		dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return dst
}

// findVid returns the position of vid in vids, which strictly increase,
// and whether it is there. Two vids p positions apart differ by at least
// p, so vid can only sit between n−1−(vids[n−1]−vid) and vid−vids[0]: the
// search covers the gaps a compaction left and is not needed in a file
// without gaps (a binary search over every entry, its last steps cache
// misses, was 4% of a vector search's CPU at 1,000,000 documents).
func findVid(vids []uint64, vid uint64) (int, bool) {
	n := len(vids)
	if n == 0 || vid < vids[0] || vid > vids[n-1] {
		return 0, false
	}
	hi := min(uint64(n-1), vid-vids[0])
	lo := uint64(0)
	if d := vids[n-1] - vid; d < uint64(n-1) {
		lo = uint64(n-1) - d
	}
	if lo == hi {
		// The bounds meet only where vid must be there: a file without
		// gaps, or vid first or last. Not reading vids[lo] saves a cache
		// miss per read.
		return int(lo), true
	}
	p, ok := slices.BinarySearch(vids[lo:hi+1], vid)
	return int(lo) + p, ok
}

// retire marks g as no longer current: it closes now when no reader
// holds it, else when its last reader releases it (release), so that no
// read finds its file or mapping gone.
func (g *vecGen) retire() error {
	g.retired.Store(true)
	if g.refs.Load() == 0 {
		return g.close()
	}
	return nil
}

// close retires the current generation (the store's end).
func (v *vectorFile) close() error { return v.cur.retire() }
