package keyword

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ragd/ragd/spi"
)

// buildIndex creates a new index at path and fills it from src. On error
// the index is closed; the caller removes path.
func buildIndex(ctx context.Context, path string, cfg Config, src spi.Scanner) (*store, int, error) {
	idx, err := createIndex(path, cfg)
	if err != nil {
		return nil, 0, err
	}
	st, err := newStore(idx, cfg)
	if err != nil {
		_ = idx.Close()
		return nil, 0, err
	}
	buf := make([]spi.Document, 0, cfg.BatchSize)
	total := 0
	flush := func() error {
		n, err := writeDocs(ctx, st, buf, cfg.BatchSize)
		total += n
		buf = buf[:0]
		return err
	}
	err = src.Scan(ctx, func(d spi.Document) error {
		if err := validateDoc(d); err != nil {
			return err
		}
		buf = append(buf, d)
		if len(buf) == cap(buf) {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = ctxErr(ctx)
	}
	if err != nil {
		_ = st.close()
		return nil, total, err
	}
	return st, total, nil
}

// Rebuild replaces the index contents with the documents of src (the system
// of record) and returns how many it indexed. The new index is built in a
// fresh generation directory while the old one keeps serving queries and
// writes; writes made during the rebuild are replayed on the new index
// before it is switched in atomically. Documents that exist only in the
// old index disappear. On error (including ctx cancellation) the old
// index stays live and unchanged. Concurrent Rebuild calls run one at a
// time.
func (b *Backend) Rebuild(ctx context.Context, src spi.Scanner) (int, error) {
	if src == nil {
		return 0, errors.New("keyword: rebuild: nil scanner")
	}
	b.rebuildMu.Lock()
	defer b.rebuildMu.Unlock()

	b.writeMu.Lock()
	b.mu.Lock()
	closed := b.st == nil
	var pending []writeOp
	if !closed {
		b.pending = &pending
	}
	b.mu.Unlock()
	b.writeMu.Unlock()
	if closed {
		return 0, fmt.Errorf("keyword: rebuild: %w: %w", spi.ErrUnavailable, ErrClosed)
	}
	stopRecording := func() {
		b.writeMu.Lock()
		b.mu.Lock()
		b.pending = nil
		b.mu.Unlock()
		b.writeMu.Unlock()
	}

	n, err := nextGen(b.cfg.Dir)
	if err != nil {
		stopRecording()
		return 0, fmt.Errorf("keyword: rebuild: %w", err)
	}
	name := genName(n)
	path := filepath.Join(b.cfg.Dir, name)
	start := b.cfg.Now()
	st, docs, err := buildIndex(ctx, path, b.cfg, src)
	if err != nil {
		stopRecording()
		_ = os.RemoveAll(path)
		return 0, fmt.Errorf("keyword: rebuild: %w", err)
	}

	// Block writers, replay what they did meanwhile, switch generations.
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	if err := replay(ctx, st, pending, b.cfg.BatchSize); err != nil {
		b.mu.Lock()
		b.pending = nil
		b.mu.Unlock()
		_ = st.close()
		_ = os.RemoveAll(path)
		return 0, fmt.Errorf("keyword: rebuild: replay: %w", err)
	}
	b.mu.Lock()
	b.pending = nil
	old, oldGen := b.st, b.gen
	if old == nil {
		b.mu.Unlock()
		_ = st.close()
		_ = os.RemoveAll(path)
		return 0, fmt.Errorf("keyword: rebuild: %w: %w", spi.ErrUnavailable, ErrClosed)
	}
	if err := writeCurrent(b.cfg.Dir, name); err != nil {
		b.mu.Unlock()
		_ = st.close()
		_ = os.RemoveAll(path)
		return 0, fmt.Errorf("keyword: rebuild: commit: %w", err)
	}
	b.st, b.gen = st, name
	b.mu.Unlock()

	if err := old.close(); err != nil {
		b.cfg.Logger.Warn("keyword: closing replaced index failed", "err", err)
	}
	if err := os.RemoveAll(filepath.Join(b.cfg.Dir, oldGen)); err != nil {
		b.cfg.Logger.Warn("keyword: removing replaced index failed", "err", err)
	}
	b.cfg.Logger.Info("keyword: rebuilt index", "dir", b.cfg.Dir, "generation", name,
		"documents", docs, "replayed_writes", len(pending), "elapsed", b.cfg.Now().Sub(start))
	return docs, nil
}

func replay(ctx context.Context, st *store, ops []writeOp, size int) error {
	for _, op := range ops {
		if len(op.docs) > 0 {
			if _, err := writeDocs(ctx, st, op.docs, size); err != nil {
				return err
			}
		}
		if len(op.del) > 0 {
			if _, err := deleteIDs(ctx, st, op.del, size); err != nil {
				return err
			}
		}
	}
	return nil
}
