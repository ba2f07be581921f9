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

	"github.com/ragd/ragd/internal/atomicfile"
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
// the vector its records name whatever commits meanwhile. Replaced and
// deleted vectors stay as garbage until Open compacts the file (copies
// the live entries to a new file, syncs it and renames it over the old
// one) once garbage outnumbers live entries.
//
// Invariant (checked by TestVectorFile): vids is strictly increasing and
// holds the vid of every whole entry of the file, in file order; next is
// above all of them; the file is len(vids) whole entries long.
type vectorFile struct {
	path   string
	dim    int
	entry  int64 // bytes per entry
	noSync bool

	mu   sync.RWMutex // guards vids and the file's end against appends
	f    *os.File
	vids []uint64
	next uint64
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
	v := &vectorFile{path: path, dim: dim, entry: int64(8 + 4*dim + 4), noSync: noSync, f: f, next: 1}
	if err := v.readVids(); err != nil {
		f.Close()
		return nil, err
	}
	return v, nil
}

func (v *vectorFile) readVids() error {
	st, err := v.f.Stat()
	if err != nil {
		return fmt.Errorf("vector/embedded: open %s: %w", v.path, err)
	}
	n := st.Size() / v.entry
	if st.Size()%v.entry != 0 {
		if err := v.f.Truncate(n * v.entry); err != nil {
			return fmt.Errorf("vector/embedded: open %s: cut a torn entry: %w", v.path, err)
		}
	}
	v.vids = make([]uint64, 0, n)
	// Whole entries, a few MiB at a time.
	per := max(1, (4<<20)/v.entry)
	buf := make([]byte, per*v.entry)
	for p := int64(0); p < n; p += per {
		m := min(per, n-p)
		if _, err := v.f.ReadAt(buf[:m*v.entry], p*v.entry); err != nil {
			return fmt.Errorf("vector/embedded: open %s: %w", v.path, err)
		}
		for j := range m {
			vid := binary.LittleEndian.Uint64(buf[j*v.entry:])
			if len(v.vids) > 0 && vid <= v.vids[len(v.vids)-1] {
				return fmt.Errorf("%w: %s: entry %d has vid %d after %d", ErrCorrupt, v.path, p+j, vid, v.vids[len(v.vids)-1])
			}
			v.vids = append(v.vids, vid)
		}
	}
	if len(v.vids) > 0 {
		v.next = v.vids[len(v.vids)-1] + 1
	}
	return nil
}

// appendVectors writes vecs as new entries, syncs the file and returns
// their vids. The caller holds the Store's writers' mutex.
func (v *vectorFile) appendVectors(vecs [][]float32) ([]uint64, error) {
	if len(vecs) == 0 {
		return nil, nil
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
	v.mu.RLock()
	end := int64(len(v.vids)) * v.entry
	v.mu.RUnlock()
	if _, err := v.f.WriteAt(buf, end); err != nil {
		_ = v.f.Truncate(end) // what was written is named by no record
		return nil, err
	}
	if !v.noSync {
		if err := v.f.Sync(); err != nil {
			return nil, err
		}
	}
	v.mu.Lock()
	v.vids = append(v.vids, vids...)
	v.mu.Unlock()
	v.next += uint64(len(vecs))
	return vids, nil
}

// errNoVector means a record names a vector the file does not hold.
var errNoVector = errors.New("the vectors file holds no entry for the record")

// read appends the vector of entry vid to dst.
func (v *vectorFile) read(vid uint64, dst []float32) ([]float32, error) {
	v.mu.RLock()
	p, ok := slices.BinarySearch(v.vids, vid)
	v.mu.RUnlock()
	if !ok {
		return dst, fmt.Errorf("%w (vid %d)", errNoVector, vid)
	}
	buf := make([]byte, v.entry)
	if _, err := v.f.ReadAt(buf, int64(p)*v.entry); err != nil && !errors.Is(err, io.EOF) {
		return dst, err
	}
	body, sum := buf[:len(buf)-4], binary.LittleEndian.Uint32(buf[len(buf)-4:])
	if crc32.Checksum(body, crcTable) != sum || binary.LittleEndian.Uint64(body) != vid {
		return dst, fmt.Errorf("vectors file entry %d (vid %d) fails its checksum", p, vid)
	}
	for i := range v.dim {
		dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(body[8+4*i:])))
	}
	return dst, nil
}

// compact rewrites the file with only the entries whose vid live holds,
// when the others outnumber them (atomicfile.Write: a new file, synced,
// renamed over the old one). No reader may use the file meanwhile.
func (v *vectorFile) compact(live map[uint64]struct{}) (bool, error) {
	if len(v.vids) <= 2*len(live) || len(v.vids) < 1024 {
		return false, nil
	}
	var kept []uint64
	err := atomicfile.Write(v.path, func(w io.Writer) error {
		buf := make([]byte, v.entry)
		for p, vid := range v.vids {
			if _, ok := live[vid]; !ok {
				continue
			}
			if _, err := v.f.ReadAt(buf, int64(p)*v.entry); err != nil {
				return err
			}
			if _, err := w.Write(buf); err != nil {
				return err
			}
			kept = append(kept, vid)
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	f, err := os.OpenFile(v.path, os.O_RDWR, 0o600)
	if err != nil {
		return false, err
	}
	v.f.Close()
	v.f, v.vids = f, kept // next stays: a vid is never given twice in one run
	return true, nil
}

func (v *vectorFile) close() error { return v.f.Close() }
