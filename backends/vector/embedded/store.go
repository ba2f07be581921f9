package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/ragd/ragd/spi"
)

// Errors returned by Open.
var (
	// ErrCorrupt means the store file or one of its records does not
	// decode. Restore the file from a backup or remove it and re-ingest.
	ErrCorrupt = errors.New("vector/embedded: store file is corrupt")
	// ErrLocked means another process holds the store file open.
	ErrLocked = errors.New("vector/embedded: store file is locked by another process")
)

// DimensionMismatchError is returned by Open when the file was created with
// another dimension than configured.
type DimensionMismatchError struct {
	Path       string
	Existing   int
	Configured int
}

func (e *DimensionMismatchError) Error() string {
	return fmt.Sprintf("vector/embedded: open: %s stores %d-dimensional vectors but the configured dimension is %d; "+
		"use the embedder the store was built with, or another directory", e.Path, e.Existing, e.Configured)
}

// EmbedderChangedError is returned by Open when the store's vectors were
// made by another embedder than the configured one (Config.Embedder).
// Vectors of two embedders are not comparable: rebuild them with the
// configured one (ragd reembed) or configure the previous embedder.
type EmbedderChangedError struct {
	Path       string
	Recorded   string
	Configured string
}

func (e *EmbedderChangedError) Error() string {
	return fmt.Sprintf("vector/embedded: open: %s holds vectors made by embedder [%s] but the configured embedder is [%s]; "+
		"vectors of different embedders cannot be compared: run `ragd reembed` to rebuild them with the configured embedder, "+
		"or configure the previous one", e.Path, e.Recorded, e.Configured)
}

var (
	bucketMeta = []byte("meta")
	bucketDocs = []byte("docs")
	keyDim     = []byte("dimension")
	keyFormat  = []byte("format")
	keyEmbed   = []byte("embedder")
)

const fileFormat = 1

// Store is the embedded vector store. It is safe for concurrent use.
type Store struct {
	cfg    Config
	path   string
	db     *bolt.DB
	vecs   *vectorFile // the records' vectors (vecfile.go)
	closed atomic.Bool

	writeMu sync.Mutex   // serialises writes so memory follows disk order
	mu      sync.RWMutex // guards idx and seq
	idx     *index
	// seq is the log sequence idx reflects: the file's log bucket sequence
	// after the last commit memory has followed. A commit makes the file
	// durable first and memory follows, so the file is at seq or ahead.
	seq uint64

	waits   atomic.Uint64 // searches that waited for a commit (ops.go)
	build   builder       // the background build of the IVF index (annbuild.go)
	compact compactor     // the background compaction of the vectors file (compact.go)
	hooks   testHooks
}

// testHooks let tests stop a search or a commit at an exact point; nil
// hooks do nothing. Set only by tests, before the store is shared.
type testHooks struct {
	afterCandidates func() // a search has its candidates, not yet rescored (mu read-locked)
	beforeRescore   func() // a search has released mu, not yet rescored
	moved           func() // a search must wait for a commit to reach memory
	afterDiskCommit func() // a commit is durable, memory not yet updated
	buildTrained    func() // a build has its centroids, not yet installed
	buildChunk      func() // a build has assigned a chunk of rows, no lock held
	// compactCopied: a compaction has copied the live entries of its
	// state, no lock held; compactInstalled: it has installed the new
	// file and released the writers' mutex.
	compactCopied, compactInstalled func()
	readAcquired                    func() // a reader has its vectors file, not yet its transaction
	regrouped                       func() // a regroup has built the renumbered arrays (writers' mutex held), not yet installed them
	codesGrown                      func() // a commit has copied the codes into a larger mapping (writers' mutex held), not yet adopted it
}

// Interface guards.
var (
	_ spi.VectorRetrievalBackend = (*Store)(nil)
	_ spi.Indexer                = (*Store)(nil)
	_ spi.Scanner                = (*Store)(nil)
	_ spi.Dimensioner            = (*Store)(nil)
	_ spi.Closer                 = (*Store)(nil)
)

// Open opens or creates the store under cfg.Dir and loads every vector into
// memory. It fails with ErrLocked when another process has the file open,
// ErrCorrupt when the file does not decode, and *DimensionMismatchError when
// the file holds vectors of another dimension.
func Open(ctx context.Context, cfg Config) (s *Store, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("vector/embedded: open: %w", err)
	}
	path := filepath.Join(cfg.Dir, FileName)
	db, err := openBolt(path, cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			db.Close()
		}
	}()
	// bbolt may panic on pages it cannot interpret.
	defer func() {
		if r := recover(); r != nil {
			db.Close()
			s, err = nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, r)
		}
	}()
	if err := initMeta(db, path, cfg.Dimension, cfg.Embedder); err != nil {
		return nil, err
	}
	if err := initLog(db); err != nil {
		return nil, err
	}
	vecs, err := openVectorFile(filepath.Join(cfg.Dir, VectorFileName), cfg.Dimension, cfg.NoSync)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			vecs.close()
		}
	}()
	ix := newIndex(cfg.Dimension, cfg.Distance == Cosine)
	opened := false
	defer func() {
		if !opened {
			ix.codes.free() // outside the Go heap: codes.go
		}
	}()
	s = &Store{cfg: cfg, path: path, db: db, vecs: vecs, idx: ix}
	s.idx.ann = cfg.ANN.params()
	live, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := vecs.compactAtOpen(ctx, live); err != nil {
		return nil, fmt.Errorf("vector/embedded: open: %w", err)
	}
	cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "vector/embedded: opened",
		slog.String("path", path), slog.Int("documents", s.idx.len()), slog.Int("dimension", cfg.Dimension))
	// The last step: from here a build may change the index in the
	// background (annbuild.go), and a compaction the vectors file
	// (compact.go).
	s.build.ctx, s.build.cancel = context.WithCancel(context.Background())
	s.compact.ctx, s.compact.cancel = context.WithCancel(context.Background())
	s.maybeBuild(false)
	opened = true
	return s, nil
}

func openBolt(path string, cfg Config) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: cfg.LockTimeout, NoSync: cfg.NoSync, FreelistType: bolt.FreelistMapType})
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("%w: %s", ErrLocked, path)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch),
		errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrInvalidMapping):
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	default:
		return nil, fmt.Errorf("vector/embedded: open %s: %w", path, err)
	}
}

// initMeta records the dimension in a new file and checks it in an old one;
// with an embedder identity, it records it in a file that has none or holds
// no document, and checks it otherwise.
func initMeta(db *bolt.DB, path string, dim int, embedder string) error {
	return db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			if tx.Bucket(bucketDocs) != nil {
				return fmt.Errorf("%w: %s: documents without a meta bucket", ErrCorrupt, path)
			}
			var err error
			if meta, err = tx.CreateBucket(bucketMeta); err != nil {
				return fmt.Errorf("vector/embedded: open: %w", err)
			}
			if _, err := tx.CreateBucket(bucketDocs); err != nil {
				return fmt.Errorf("vector/embedded: open: %w", err)
			}
			if err := meta.Put(keyFormat, binary.AppendUvarint(nil, fileFormat)); err != nil {
				return fmt.Errorf("vector/embedded: open: %w", err)
			}
			if err := meta.Put(keyDim, binary.AppendUvarint(nil, uint64(dim))); err != nil {
				return fmt.Errorf("vector/embedded: open: %w", err)
			}
			return putEmbedder(meta, embedder)
		}
		format, n := binary.Uvarint(meta.Get(keyFormat))
		if n <= 0 || format != fileFormat {
			return fmt.Errorf("%w: %s: unknown file format", ErrCorrupt, path)
		}
		stored, n := binary.Uvarint(meta.Get(keyDim))
		if n <= 0 || tx.Bucket(bucketDocs) == nil {
			return fmt.Errorf("%w: %s: missing dimension or documents bucket", ErrCorrupt, path)
		}
		if int(stored) != dim {
			return &DimensionMismatchError{Path: path, Existing: int(stored), Configured: dim}
		}
		rec := string(meta.Get(keyEmbed))
		if embedder == "" || rec == embedder {
			return nil
		}
		if k, _ := tx.Bucket(bucketDocs).Cursor().First(); rec != "" && k != nil {
			return &EmbedderChangedError{Path: path, Recorded: rec, Configured: embedder}
		}
		return putEmbedder(meta, embedder)
	})
}

func putEmbedder(meta *bolt.Bucket, embedder string) error {
	if embedder == "" {
		return nil
	}
	if err := meta.Put(keyEmbed, []byte(embedder)); err != nil {
		return fmt.Errorf("vector/embedded: open: %w", err)
	}
	return nil
}

// Embedder returns the identity of the embedder recorded with the vectors,
// "" when none is.
func (s *Store) Embedder(ctx context.Context) (string, error) {
	if err := s.checkOpen(ctx, "embedder"); err != nil {
		return "", err
	}
	var id string
	err := s.db.View(func(tx *bolt.Tx) error {
		id = string(tx.Bucket(bucketMeta).Get(keyEmbed))
		return nil
	})
	if err != nil {
		return "", s.readErr("embedder", err)
	}
	return id, nil
}

// RecordEmbedder records id as the identity of the embedder that made the
// stored vectors, once they have all been rebuilt with it.
func (s *Store) RecordEmbedder(ctx context.Context, id string) error {
	if err := s.checkOpen(ctx, "record embedder"); err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyEmbed, []byte(id))
	})
	if err != nil {
		return s.writeErr("record embedder", err)
	}
	return nil
}

// load decodes every record's header into the index and returns the
// vector entries the records name.
func (s *Store) load(ctx context.Context) (map[uint64]struct{}, error) {
	live := map[uint64]struct{}{}
	return live, s.db.View(func(tx *bolt.Tx) error {
		s.seq = tx.Bucket(bucketLog).Sequence()
		docs := tx.Bucket(bucketDocs)
		s.idx.reserve(docs.Stats().KeyN)
		c := docs.Cursor()
		i := 0
		var vec []float32
		entry := make([]byte, s.vecs.entry)
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if i%ctxCheckEvery == 0 && ctx.Err() != nil {
				return fmt.Errorf("vector/embedded: open: %w", context.Cause(ctx))
			}
			i++
			h, buf, err := decodeHeader(v, s.idx.dim, vec[:0])
			if err == nil {
				buf, err = s.vector(s.vecs.cur, h, buf, entry)
			}
			if err != nil {
				return fmt.Errorf("%w: %s: record %q: %v", ErrCorrupt, s.path, k, err)
			}
			if h.vid != 0 {
				live[h.vid] = struct{}{}
			}
			vec = buf
			s.idx.put(string(k), h.tenant, h.metadata, vec, h.vid)
		}
		return nil
	})
}

// Dimension reports the configured vector dimension.
func (s *Store) Dimension() int { return s.cfg.Dimension }

// Distance reports the configured distance.
func (s *Store) Distance() Distance { return s.cfg.Distance }

// Len reports the number of stored documents.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.idx.len()
}

// Path is the store file.
func (s *Store) Path() string { return s.path }

// Close flushes and closes the file. Calls after Close fail with an error
// wrapping spi.ErrUnavailable. Close is idempotent.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.stopBuilds()
	s.stopCompaction()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	err := s.db.Close()
	if verr := s.vecs.close(); err == nil {
		err = verr
	}
	// The codes are outside the Go heap (codes.go): unmap them. Searches
	// read them under mu, and none can start now that the file is closed
	// (readTx fails).
	s.mu.Lock()
	s.idx.codes.free()
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("vector/embedded: close: %w", err)
	}
	return nil
}

// Health reports up while the store is open.
func (s *Store) Health(ctx context.Context) spi.Health {
	start := s.cfg.Now()
	if s.closed.Load() {
		return spi.Health{Status: spi.StatusDown, Detail: "store closed"}
	}
	if err := ctx.Err(); err != nil {
		return spi.Health{Status: spi.StatusDown, Detail: "health: " + err.Error()}
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketDocs) == nil {
			return errors.New("documents bucket missing")
		}
		return nil
	})
	lat := s.cfg.Now().Sub(start)
	if err != nil {
		return spi.Health{Status: spi.StatusDown, Detail: "read: " + err.Error(), Latency: lat}
	}
	return spi.Health{Status: spi.StatusUp, Latency: lat}
}

// checkOpen fails an operation whose ctx is done or whose store is closed
// (spi.ErrUnavailable).
func (s *Store) checkOpen(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("vector/embedded: %s: %w", op, context.Cause(ctx))
	}
	if s.closed.Load() {
		return fmt.Errorf("vector/embedded: %s: %w: store closed", op, spi.ErrUnavailable)
	}
	return nil
}

func (s *Store) parallelism() int {
	if s.cfg.Parallelism > 0 {
		return s.cfg.Parallelism
	}
	return runtime.GOMAXPROCS(0)
}
