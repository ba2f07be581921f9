package events

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/ragd/ragd/internal/atomicfile"
)

// maxLine bounds one stored event; longer lines are skipped when read.
const maxLine = 64 << 10

// Open returns a ring that keeps its events in the file at path as well as
// in memory, so the timeline survives a restart: the last capacity events
// of the file are read back and sequence numbers continue after the newest
// one. The file holds one JSON event per line; it is rewritten with the
// held events whenever it reaches twice the capacity, so it stays bounded.
// A torn or unreadable line (a crash mid-write) is skipped. now stamps
// events published without a time; nil means time.Now. Close the ring to
// release the file.
func Open(path string, capacity int, now func() time.Time) (*Ring, error) {
	r := NewRing(capacity, now)
	loaded, err := readEvents(path)
	if err != nil {
		return nil, err
	}
	size := uint64(len(r.buf))
	for _, e := range loaded {
		if e.Seq <= r.last {
			continue // out of order: keep the sequence increasing
		}
		// A gap (a skipped line) leaves empty slots, which Since skips.
		lo := r.last + 1
		if e.Seq > size {
			lo = max(lo, e.Seq-size)
		}
		for seq := lo; seq < e.Seq; seq++ {
			r.buf[(seq-1)%size] = Event{}
		}
		r.last = e.Seq
		r.buf[(e.Seq-1)%size] = e
	}
	f := &file{path: path, limit: 2 * len(r.buf)}
	// Start from a clean file holding what the ring holds.
	if err := f.rewrite(r.held()); err != nil {
		return nil, err
	}
	r.file = f
	return r, nil
}

// readEvents reads the events of path in file order; a missing file is empty.
func readEvents(path string) ([]Event, error) {
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("events: open %s: %w", path, err)
	}
	defer fh.Close()
	var out []Event
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Seq == 0 {
			continue
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("events: read %s: %w", path, err)
	}
	return out, nil
}

// file is a ring's copy on disk. Its methods run under the ring's lock.
type file struct {
	path  string
	f     *os.File
	lines int // events in the file
	limit int // rewrite when the file would exceed it
	err   error
}

// append adds e to the file, or rewrites the file with held (which
// includes e) when it is full.
func (f *file) append(e Event, held func() []Event) {
	if f.f == nil || f.lines+1 > f.limit {
		f.err = f.rewrite(held())
		return
	}
	b, err := json.Marshal(e)
	if err == nil {
		_, err = f.f.Write(append(b, '\n'))
	}
	if err != nil {
		f.err = fmt.Errorf("events: append to %s: %w", f.path, err)
		return
	}
	f.lines++
	f.err = nil
}

// rewrite replaces the file with evs (atomically: a crash leaves the old
// or the new file) and reopens it for appending.
func (f *file) rewrite(evs []Event) error {
	if f.f != nil {
		f.f.Close()
		f.f = nil
	}
	err := atomicfile.Write(f.path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		for _, e := range evs {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("events: rewrite %s: %w", f.path, err)
	}
	fh, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("events: reopen %s: %w", f.path, err)
	}
	f.f, f.lines = fh, len(evs)
	return nil
}

// Err returns the last error writing the ring's file, nil after a write
// succeeded (or for a ring without a file). Events are kept in memory
// whatever it says.
func (r *Ring) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file == nil {
		return nil
	}
	return r.file.err
}

// Close releases the ring's file; later events are kept in memory only.
func (r *Ring) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file == nil || r.file.f == nil {
		r.file = nil
		return nil
	}
	err := r.file.f.Close()
	r.file = nil
	return err
}
