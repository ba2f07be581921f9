package keyword

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/blevesearch/bleve/v2"

	"github.com/ragd/ragd/spi"
)

var (
	_ spi.KeywordRetrievalBackend = (*Backend)(nil)
	_ spi.Indexer                 = (*Backend)(nil)
	_ spi.Closer                  = (*Backend)(nil)
)

// Backend is the bleve keyword index. It is safe for concurrent use.
type Backend struct {
	cfg Config

	rebuildMu sync.Mutex // one Rebuild at a time
	writeMu   sync.Mutex // serialises writes so a rebuild replays them in order

	mu      sync.RWMutex // guards the fields below; held shared by every call using st
	st      *store       // nil once closed
	gen     string       // live generation directory name
	pending *[]writeOp   // non-nil while Rebuild runs: writes to replay on the new index
}

// Open opens the index under cfg.Dir, creating an empty one when none
// exists. An index that exists but cannot be used returns an error wrapping
// ErrCorrupt (or ErrIncompatible for another analyzer or schema version);
// one held by another process wraps ErrLocked. A service whose keyword
// index is derived from a system of record should call OpenOrRebuild.
func Open(cfg Config) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b, err := open(cfg, true)
	if err != nil {
		return nil, fmt.Errorf("keyword: open %s: %w", cfg.Dir, err)
	}
	return b, nil
}

// errMissing reports that Dir holds no committed index (no CURRENT).
var errMissing = errors.New("keyword: no index")

// open opens the committed generation, or creates one when create is set
// and none exists (otherwise it returns errMissing).
func open(cfg Config, create bool) (*Backend, error) {
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	name, ok, err := readCurrent(cfg.Dir)
	if err != nil {
		return nil, err
	}
	if !ok {
		if !create {
			return nil, errMissing
		}
		if err := removeStale(cfg.Dir, ""); err != nil {
			return nil, err
		}
		n, err := nextGen(cfg.Dir)
		if err != nil {
			return nil, err
		}
		name = genName(n)
		idx, err := createIndex(filepath.Join(cfg.Dir, name), cfg)
		if err != nil {
			return nil, err
		}
		if err := writeCurrent(cfg.Dir, name); err != nil {
			_ = idx.Close()
			return nil, err
		}
		cfg.Logger.Info("keyword: created index", "dir", cfg.Dir, "generation", name)
		return newBackend(cfg, idx, name)
	}
	idx, err := openIndex(filepath.Join(cfg.Dir, name), cfg)
	if err != nil {
		return nil, err
	}
	if err := removeStale(cfg.Dir, name); err != nil {
		cfg.Logger.Warn("keyword: removing stale generations failed", "dir", cfg.Dir, "err", err)
	}
	return newBackend(cfg, idx, name)
}

func newBackend(cfg Config, idx bleve.Index, gen string) (*Backend, error) {
	st, err := newStore(idx, cfg)
	if err != nil {
		_ = idx.Close()
		return nil, err
	}
	return &Backend{cfg: cfg, st: st, gen: gen}, nil
}

// OpenOrRebuild opens the index under cfg.Dir like Open, but treats the
// index as a derived copy of src: when it is missing, corrupt or
// incompatible, the broken generation is moved aside (to
// Dir/corrupt-index-N, replacing any earlier one; an incompatible one, of
// another layout or analyzer but not damaged, is removed instead) and a
// new index is populated from src before OpenOrRebuild returns. ErrLocked and other
// environmental errors (permissions) are returned, never "repaired".
// A rebuild interrupted by a crash leaves no committed index, so the next
// call rebuilds again. src must not be nil.
func OpenOrRebuild(ctx context.Context, cfg Config, src spi.Scanner) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, errors.New("keyword: open or rebuild: nil scanner")
	}
	cfg = cfg.withDefaults()
	b, err := open(cfg, false)
	if err == nil {
		return b, nil
	}
	broken := ""
	switch {
	case errors.Is(err, errMissing):
	case errors.Is(err, ErrCorrupt), errors.Is(err, ErrIncompatible):
		broken, _, _ = readCurrent(cfg.Dir)
	default:
		return nil, fmt.Errorf("keyword: open %s: %w", cfg.Dir, err)
	}
	reason := err.Error()
	incompatible := errors.Is(err, ErrIncompatible)
	aside, err := moveAside(cfg.Dir, broken)
	if err != nil {
		return nil, fmt.Errorf("keyword: move broken index aside: %w", err)
	}
	if incompatible && aside != "" {
		// Not damaged, only of another layout or analyzer (an index of an
		// earlier release, a lean one before the lean layout): nothing to
		// inspect, and kept it would hold its disk (2 KB a document for a
		// full index beside a lean one) until the next corruption.
		if err := os.RemoveAll(aside); err != nil {
			return nil, fmt.Errorf("keyword: remove the incompatible index: %w", err)
		}
		aside = ""
	}
	if err := removeStale(cfg.Dir, ""); err != nil {
		return nil, fmt.Errorf("keyword: rebuild: %w", err)
	}
	n, err := nextGen(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("keyword: rebuild: %w", err)
	}
	name := genName(n)
	path := filepath.Join(cfg.Dir, name)
	start := cfg.Now()
	st, docs, err := buildIndex(ctx, path, cfg, src)
	if err != nil {
		_ = os.RemoveAll(path)
		return nil, fmt.Errorf("keyword: rebuild: %w", err)
	}
	if err := writeCurrent(cfg.Dir, name); err != nil {
		_ = st.close()
		return nil, fmt.Errorf("keyword: rebuild: commit: %w", err)
	}
	// A fresh install (no index, empty system of record) is not news.
	level := slog.LevelWarn
	if broken == "" && docs == 0 {
		level = slog.LevelInfo
	}
	cfg.Logger.Log(ctx, level, "keyword: rebuilt index from the system of record",
		"dir", cfg.Dir, "reason", reason, "moved_aside", aside, "documents", docs,
		"elapsed", cfg.Now().Sub(start))
	return &Backend{cfg: cfg, st: st, gen: name}, nil
}

// Close releases the index. Later calls fail with ErrClosed (wrapping
// spi.ErrUnavailable); Close itself is idempotent.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.st == nil {
		return nil
	}
	err := b.st.close()
	b.st = nil
	if err != nil {
		return fmt.Errorf("keyword: close: %w", err)
	}
	return nil
}

// Health reports StatusUp with the document count while the index is open,
// StatusDown once closed or when the index cannot be read.
func (b *Backend) Health(ctx context.Context) spi.Health {
	start := b.cfg.Now()
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.st == nil {
		return spi.Health{Status: spi.StatusDown, Detail: "closed"}
	}
	if err := ctx.Err(); err != nil {
		return spi.Health{Status: spi.StatusDown, Detail: err.Error()}
	}
	n, err := b.st.idx.DocCount()
	lat := b.cfg.Now().Sub(start)
	if err != nil {
		return spi.Health{Status: spi.StatusDown, Detail: "doc count: " + err.Error(), Latency: lat}
	}
	return spi.Health{Status: spi.StatusUp, Detail: strconv.FormatUint(n, 10) + " documents", Latency: lat}
}

// DocCount returns the number of indexed documents (spi.DocCounter).
func (b *Backend) DocCount(ctx context.Context) (int, error) {
	st, unlock, err := b.acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("keyword: doc count: %w", err)
	}
	defer unlock()
	n, err := st.idx.DocCount()
	if err != nil {
		return 0, fmt.Errorf("keyword: doc count: %w: %v", spi.ErrUnavailable, err)
	}
	return int(n), nil
}

// acquire returns the live store with the shared lock held; unlock
// releases it. It fails when ctx is done or the backend is closed.
func (b *Backend) acquire(ctx context.Context) (*store, func(), error) {
	if err := ctxErr(ctx); err != nil {
		return nil, nil, err
	}
	b.mu.RLock()
	if b.st == nil {
		b.mu.RUnlock()
		return nil, nil, fmt.Errorf("%w: %w", spi.ErrUnavailable, ErrClosed)
	}
	return b.st, b.mu.RUnlock, nil
}

// ctxErr returns nil while ctx is live, else an error wrapping ctx.Err()
// and, when set, its cause.
func ctxErr(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("%w: %w", err, cause)
	}
	return err
}
