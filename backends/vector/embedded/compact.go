package embedded

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ragd/ragd/internal/atomicfile"
)

// Compaction of the vectors file (vecfile.go). Replaced and deleted
// vectors stay in the file as garbage; a compaction writes the live
// entries to a new file (internal/atomicfile: a temporary file beside it,
// synced, renamed over the old one, the directory synced) and makes it
// the current generation. It runs at Open (nothing else runs then) and in
// the background once garbage outnumbers the live entries
// (compactMinEntries at least), in three steps:
//
//  1. under the writers' mutex, a read transaction of the file (state S0)
//     and n0, the number of entries: no commit is in flight, so the
//     entries below n0 are those of the commits up to S0 (and leftovers
//     of crashes no record names), and every entry from n0 on belongs to
//     a later commit;
//  2. holding no lock: the vids the records of S0 name (the live set),
//     and the copy of the entries below n0 that are live (an entry never
//     changes, so it is read while writes append after it);
//     (synced before the next step, so writers do not wait for most of
//     the file's fsync);
//  3. under the writers' mutex: the copy of every entry from n0 on, the
//     fsync and rename, and the new file installed as the current generation; the
//     old one is retired and closed when its last reader releases it.
//
// A vid named at a later state than S0 is live at S0 or was appended after
// it, so the new file holds every vid a record names from S0 on; searches
// that began before the install hold the old generation. A crash before
// the rename leaves the old file, after it the new one, which holds every
// vid of the durable state (the writers' mutex is held: no commit is in
// flight). A compaction that Close stops removes its temporary file.

// compactMinEntries is the smallest file a background compaction rewrites.
const compactMinEntries = 1024

// compactor is the state of the background compaction; mu guards it.
type compactor struct {
	mu          sync.Mutex
	stopped     bool
	off         bool          // tests: no background compaction
	done        chan struct{} // closed when the running one ends; nil when none runs
	ctx         context.Context
	cancel      context.CancelFunc
	compactions int // background compactions that installed a file
	err         error
}

// maybeCompact starts a background compaction when garbage outnumbers
// the live entries. The caller holds writeMu.
func (s *Store) maybeCompact() {
	v := s.vecs
	v.mu.RLock()
	n := len(v.cur.vids)
	v.mu.RUnlock()
	if n < compactMinEntries || n <= 2*s.idx.len() || v.broken != nil {
		return
	}
	c := &s.compact
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped || c.off || c.done != nil {
		return
	}
	done := make(chan struct{})
	c.done = done
	go func() {
		err := s.compactOnline(c.ctx)
		c.mu.Lock()
		c.done, c.err = nil, err
		if err == nil {
			c.compactions++
		}
		c.mu.Unlock()
		close(done)
	}()
}

// compactOnline is the background compaction (the steps above).
func (s *Store) compactOnline(ctx context.Context) (err error) {
	start := time.Now()
	v := s.vecs
	s.writeMu.Lock()
	tx, err := s.db.Begin(false)
	g := v.cur // current until this compaction installs another
	v.mu.RLock()
	n0 := len(g.vids)
	v.mu.RUnlock()
	s.writeMu.Unlock()
	if err != nil {
		return err
	}
	live, err := s.liveVids(ctx, tx)
	_ = tx.Rollback()
	if err != nil {
		return err
	}
	locked := false
	defer func() {
		if locked {
			s.writeMu.Unlock()
		}
		if err != nil && ctx.Err() == nil {
			s.cfg.Logger.LogAttrs(context.Background(), slog.LevelWarn, "vector/embedded: compaction of the vectors file failed",
				slog.String("path", v.path), slog.String("error", err.Error()))
		}
	}()
	kept, err := v.rewrite(ctx, g, n0, live, func() error {
		if h := s.hooks.compactCopied; h != nil {
			h()
		}
		s.writeMu.Lock()
		locked = true
		return ctx.Err()
	})
	if err != nil {
		return err
	}
	if err := v.install(kept); err != nil {
		return err
	}
	s.writeMu.Unlock()
	locked = false
	s.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "vector/embedded: vectors file compacted",
		slog.Int("entries", n0), slog.Int("kept", len(kept)), slog.Duration("took", time.Since(start)))
	if h := s.hooks.compactInstalled; h != nil {
		h()
	}
	return nil
}

// liveVids returns the vids the records of tx name.
func (s *Store) liveVids(ctx context.Context, tx *bolt.Tx) (map[uint64]struct{}, error) {
	live := map[uint64]struct{}{}
	c := tx.Bucket(bucketDocs).Cursor()
	var buf []float32
	i := 0
	for k, rec := c.First(); k != nil; k, rec = c.Next() {
		if i%ctxCheckEvery == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		i++
		h, b, err := decodeHeader(rec, s.cfg.Dimension, buf[:0])
		if err != nil {
			return nil, fmt.Errorf("%w: %s: record %q: %v", ErrCorrupt, s.path, k, err)
		}
		buf = b
		if h.vid != 0 {
			live[h.vid] = struct{}{}
		}
	}
	return live, nil
}

// compactAtOpen rewrites the file with only the entries live holds when
// they are outnumbered. Nothing else uses the store yet.
func (v *vectorFile) compactAtOpen(ctx context.Context, live map[uint64]struct{}) (bool, error) {
	g := v.cur
	if len(g.vids) <= 2*len(live) || len(g.vids) < compactMinEntries {
		return false, nil
	}
	kept, err := v.rewrite(ctx, g, len(g.vids), live, nil)
	if err == nil {
		err = v.install(kept)
	}
	return err == nil, err
}

// rewrite replaces the file (atomicfile.Create and Commit) with the
// entries of generation g below n0 whose vid live holds, synced, then,
// once tail (when not nil) has returned nil, every entry of g from n0 on.
// It returns the vids it wrote, in order. The caller holds the writers'
// mutex from tail on (or nothing else uses the store), so no append runs
// during the rename.
func (v *vectorFile) rewrite(ctx context.Context, g *vecGen, n0 int, live map[uint64]struct{}, tail func() error) ([]uint64, error) {
	p, err := atomicfile.Create(v.path)
	if err != nil {
		return nil, fmt.Errorf("vector/embedded: compact %s: %w", v.path, err)
	}
	var kept []uint64
	err = func() error {
		w := bufio.NewWriterSize(p, 1<<20)
		v.mu.RLock()
		vids := g.vids[:n0]
		v.mu.RUnlock()
		if err := v.copyEntries(ctx, w, g, 0, vids, live, &kept); err != nil {
			return err
		}
		if tail == nil {
			return w.Flush()
		}
		// Most of the file made durable before the writers wait.
		if err := w.Flush(); err != nil {
			return err
		}
		if err := p.Sync(); err != nil {
			return err
		}
		if err := tail(); err != nil {
			return err
		}
		v.mu.RLock()
		vids = slices.Clone(g.vids[n0:])
		v.mu.RUnlock()
		if err := v.copyEntries(ctx, w, g, n0, vids, nil, &kept); err != nil {
			return err
		}
		return w.Flush()
	}()
	if err != nil {
		p.Abort()
		return nil, fmt.Errorf("vector/embedded: compact %s: %w", v.path, err)
	}
	if err := p.Commit(); err != nil {
		return nil, fmt.Errorf("vector/embedded: compact %s: %w", v.path, err)
	}
	return kept, nil
}

// copyEntries writes the entries of g from position from on, whose vids
// are vids, to w, only those live holds unless live is nil, a few MiB at
// a time, and appends their vids to kept.
func (v *vectorFile) copyEntries(ctx context.Context, w io.Writer, g *vecGen, from int, vids []uint64, live map[uint64]struct{}, kept *[]uint64) error {
	per := max(1, int((4<<20)/v.entry))
	buf := make([]byte, int64(per)*v.entry)
	for p := 0; p < len(vids); p += per {
		if err := ctx.Err(); err != nil {
			return err
		}
		m := min(per, len(vids)-p)
		chunk := buf[:int64(m)*v.entry]
		if _, err := g.f.ReadAt(chunk, int64(from+p)*v.entry); err != nil {
			return err
		}
		for j := range m {
			e := chunk[int64(j)*v.entry : int64(j+1)*v.entry]
			vid := vids[p+j]
			if got := binary.LittleEndian.Uint64(e); got != vid {
				return fmt.Errorf("%w: %s: entry %d has vid %d, want %d", ErrCorrupt, v.path, from+p+j, got, vid)
			}
			if live != nil {
				if _, ok := live[vid]; !ok {
					continue
				}
			}
			if _, err := w.Write(e); err != nil {
				return err
			}
			*kept = append(*kept, vid)
		}
	}
	return nil
}

// install makes the file rewrite renamed into place the current
// generation, with vids kept, and retires the old one. The caller holds
// the writers' mutex (or nothing else uses the store). When the new file
// cannot be opened, appends fail from then on: the old file is no longer
// the one a restart reads.
func (v *vectorFile) install(kept []uint64) error {
	f, err := os.OpenFile(v.path, os.O_RDWR, 0o600)
	if err != nil {
		v.broken = fmt.Errorf("vector/embedded: reopen %s after its compaction: %w", v.path, err)
		return v.broken
	}
	ng := &vecGen{f: f, vids: kept} // next stays: a vid is never given twice in one run
	v.mu.Lock()
	old := v.cur
	v.cur = ng
	v.mu.Unlock()
	_ = old.retire()
	return nil
}

// stopCompaction stops a running compaction and keeps new ones from
// starting; it returns once the running one has ended.
func (s *Store) stopCompaction() {
	c := &s.compact
	c.mu.Lock()
	c.stopped = true
	c.cancel()
	done := c.done
	c.mu.Unlock()
	if done != nil {
		<-done
	}
}
