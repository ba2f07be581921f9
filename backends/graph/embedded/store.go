// Package embedded is ragd's in-process graph store: documents, the entities
// they mention and the links between them, persisted in one bbolt file. It
// implements spi.GraphRetrievalBackend and spi.Indexer with the same Expand
// and MatchEntities semantics and ranking rule as the Neo4j adapter (package
// graph); both share package graphspec and the contract suite in
// spi/spitest. It is meant for one process and corpora up to some hundred
// thousand documents; the Neo4j adapter is the scale-out path.
//
// Differences from the Neo4j adapter: Query returns spi.ErrUnsupported (no
// Cypher), and MatchEntities with Syntax set returns spi.ErrUnsupported
// (there is no Lucene query language to pass through).
package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/ragd/ragd/backends/graph/graphspec"
	"github.com/ragd/ragd/spi"
)

// FileName is the bbolt file the store keeps under Config.Dir.
const FileName = "graph.db"

// formatVersion is written to the meta bucket; a different value is refused.
const formatVersion = "1"

var (
	// ErrCorrupt means the store file exists but is not a readable ragd graph
	// store (damaged, truncated, another program's file or another format
	// version). The graph is a derived index: move the file away and re-ingest.
	ErrCorrupt = errors.New("graph/embedded: store file is corrupt or not a ragd graph store")
	// ErrLocked means another process holds the store file open.
	ErrLocked = errors.New("graph/embedded: store file is locked by another process")
)

// Bucket names. Composite keys join two parts with a NUL byte, which
// graphspec.Prepare forbids in ids and Normalize removes from entity names.
var (
	bMeta    = []byte("meta")     // "version" -> formatVersion
	bDocs    = []byte("docs")     // id -> JSON record
	bTenant  = []byte("tenant")   // id -> tenant (existence and tenant in one lookup)
	bDocEnt  = []byte("doc_ent")  // id \0 entity -> ""
	bEntDoc  = []byte("ent_doc")  // entity \0 id -> ""
	bLinkOut = []byte("link_out") // from \0 to -> ""
	bLinkIn  = []byte("link_in")  // to \0 from -> ""
	bTermEnt = []byte("term_ent") // term \0 entity -> ""
	buckets  = [][]byte{bMeta, bDocs, bTenant, bDocEnt, bEntDoc, bLinkOut, bLinkIn, bTermEnt}
)

// Config configures the embedded graph store.
type Config struct {
	// Dir is the directory holding FileName; it is created if missing.
	Dir string
	// MaxDegree is the hub threshold (graphspec.DefaultMaxDegree when 0).
	MaxDegree int
	// MaxMatchEntities bounds the entities MatchEntities follows
	// (graphspec.DefaultMaxMatchEntities when 0).
	MaxMatchEntities int
	// LockTimeout is how long Open waits for the file lock (1s when 0).
	LockTimeout time.Duration
	// NoSync skips fsync on commit: faster ingestion, data may be lost on a
	// machine crash. For tests and bulk loads that are re-run on failure.
	NoSync bool
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Now is the clock for Health latency; nil means time.Now.
	Now func() time.Time
}

// Validate reports a config Open would refuse.
func (c Config) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("graph/embedded: config: dir must be set")
	case c.MaxDegree < 0:
		return fmt.Errorf("graph/embedded: config: max_degree must not be negative, got %d", c.MaxDegree)
	case c.MaxMatchEntities < 0:
		return fmt.Errorf("graph/embedded: config: max_match_entities must not be negative, got %d", c.MaxMatchEntities)
	case c.LockTimeout < 0:
		return fmt.Errorf("graph/embedded: config: lock_timeout must not be negative, got %s", c.LockTimeout)
	}
	return nil
}

// Store is the embedded graph store. Its methods are safe for concurrent use.
type Store struct {
	db          *bolt.DB
	mem         *memGraph  // the read model, see memGraph
	wmu         sync.Mutex // orders bbolt commits and their read-model updates
	maxDegree   int
	maxEntities int
	log         *slog.Logger
	now         func() time.Time
	closed      atomic.Bool
}

var (
	_ spi.GraphRetrievalBackend = (*Store)(nil)
	_ spi.Indexer               = (*Store)(nil)
	_ spi.Closer                = (*Store)(nil)
)

// Open opens (or creates) the store under cfg.Dir. A damaged file wraps
// ErrCorrupt; a file held by another process wraps ErrLocked.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("graph/embedded: open: %w", err)
	}
	if cfg.MaxDegree == 0 {
		cfg.MaxDegree = graphspec.DefaultMaxDegree
	}
	if cfg.MaxMatchEntities == 0 {
		cfg.MaxMatchEntities = graphspec.DefaultMaxMatchEntities
	}
	if cfg.LockTimeout == 0 {
		cfg.LockTimeout = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("graph/embedded: open: %w", err)
	}
	path := filepath.Join(cfg.Dir, FileName)
	db, err := openBolt(path, cfg)
	if err != nil {
		return nil, err
	}
	if err := initBuckets(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("graph/embedded: open %s: %w", path, err)
	}
	mem, err := loadMemGraph(db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("graph/embedded: open %s: load: %w", path, err)
	}
	cfg.Logger.Info("graph store opened", "path", path, "documents", len(mem.docIdx))
	return &Store{db: db, mem: mem, maxDegree: cfg.MaxDegree, maxEntities: cfg.MaxMatchEntities, log: cfg.Logger, now: cfg.Now}, nil
}

func openBolt(path string, cfg Config) (db *bolt.DB, err error) {
	// bbolt validates the meta pages on open; some damage only shows as a
	// panic while reading them, which we turn into ErrCorrupt as well.
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, r)
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: cfg.LockTimeout, NoSync: cfg.NoSync})
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("%w: %s", ErrLocked, path)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping):
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	default:
		return nil, fmt.Errorf("graph/embedded: open %s: %w", path, err)
	}
}

func initBuckets(db *bolt.DB) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrCorrupt, r)
		}
	}()
	return db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bMeta)
		if meta == nil {
			// A fresh file has no buckets at all; anything else is foreign.
			if err := tx.ForEach(func([]byte, *bolt.Bucket) error { return ErrCorrupt }); err != nil {
				return fmt.Errorf("%w: no meta bucket", ErrCorrupt)
			}
			for _, b := range buckets {
				if _, err := tx.CreateBucket(b); err != nil {
					return err
				}
			}
			return tx.Bucket(bMeta).Put([]byte("version"), []byte(formatVersion))
		}
		if v := string(meta.Get([]byte("version"))); v != formatVersion {
			return fmt.Errorf("%w: format version %q, want %q", ErrCorrupt, v, formatVersion)
		}
		for _, b := range buckets {
			if tx.Bucket(b) == nil {
				return fmt.Errorf("%w: bucket %s missing", ErrCorrupt, b)
			}
		}
		return nil
	})
}

// Close releases the file. Calls after Close fail with spi.ErrUnavailable.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("graph/embedded: close: %w", err)
	}
	return nil
}

// Health reports StatusUp with the latency of a read transaction, or
// StatusDown once the store is closed.
func (s *Store) Health(ctx context.Context) spi.Health {
	if s.closed.Load() {
		return spi.Health{Status: spi.StatusDown, Detail: "closed"}
	}
	if ctx.Err() != nil {
		return spi.Health{Status: spi.StatusDown, Detail: "health check cancelled"}
	}
	start := s.now()
	if err := s.db.View(func(tx *bolt.Tx) error { tx.Bucket(bMeta).Get([]byte("version")); return nil }); err != nil {
		return spi.Health{Status: spi.StatusDown, Detail: "read: " + err.Error()}
	}
	return spi.Health{Status: spi.StatusUp, Latency: s.now().Sub(start)}
}

// Query is not offered by the embedded store: it returns an error wrapping
// spi.ErrUnsupported.
func (s *Store) Query(context.Context, string, map[string]any) ([]map[string]any, error) {
	return nil, fmt.Errorf("graph/embedded: query: %w: no Cypher in the embedded graph store", spi.ErrUnsupported)
}

// view runs fn in a read transaction, mapping a closed store to
// spi.ErrUnavailable and honouring ctx before it starts.
func (s *Store) view(ctx context.Context, op string, fn func(*bolt.Tx) error) error {
	return s.run(ctx, op, false, fn)
}

func (s *Store) update(ctx context.Context, op string, fn func(*bolt.Tx) error) error {
	return s.run(ctx, op, true, fn)
}

func (s *Store) run(ctx context.Context, op string, write bool, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("graph/embedded: %s: %w", op, err)
	}
	if s.closed.Load() {
		return fmt.Errorf("graph/embedded: %s: %w: store closed", op, spi.ErrUnavailable)
	}
	var err error
	if write {
		err = s.db.Update(fn)
	} else {
		err = s.db.View(fn)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		return fmt.Errorf("graph/embedded: %s: %w: store closed", op, spi.ErrUnavailable)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, spi.ErrInvalidQuery), errors.Is(err, spi.ErrUnsupported):
		return fmt.Errorf("graph/embedded: %s: %w", op, err)
	default:
		return fmt.Errorf("graph/embedded: %s: %w: %v", op, spi.ErrUnavailable, err)
	}
}

// record is the stored form of a document; entities and links live in
// their own buckets.
type record struct {
	Tenant    string       `json:"tenant,omitempty"`
	Title     string       `json:"title,omitempty"`
	Text      string       `json:"text,omitempty"`
	Metadata  spi.Metadata `json:"metadata,omitempty"`
	UpdatedAt time.Time    `json:"updated_at,omitzero"`
}

func key(a, b string) []byte {
	k := make([]byte, 0, len(a)+1+len(b))
	k = append(k, a...)
	k = append(k, 0)
	return append(k, b...)
}

func prefix(a string) []byte { return key(a, "") }

// scanPrefix calls fn with the second key part of every key under a's
// prefix, in order, until fn returns false.
func scanPrefix(b *bolt.Bucket, a string, fn func(second string) bool) {
	p := prefix(a)
	c := b.Cursor()
	for k, _ := c.Seek(p); k != nil && len(k) >= len(p) && string(k[:len(p)]) == string(p); k, _ = c.Next() {
		if !fn(string(k[len(p):])) {
			return
		}
	}
}

func seconds(b *bolt.Bucket, a string) []string {
	var out []string
	scanPrefix(b, a, func(s string) bool { out = append(out, s); return true })
	return out
}

// decodeMetadata reads only a record's metadata, for filter checks.
func decodeMetadata(v []byte) (spi.Metadata, error) {
	var r struct {
		Metadata spi.Metadata `json:"metadata"`
	}
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("%w: document record: %v", ErrCorrupt, err)
	}
	return r.Metadata, nil
}

func decodeRecord(v []byte) (record, error) {
	var r record
	if err := json.Unmarshal(v, &r); err != nil {
		return r, fmt.Errorf("%w: document record: %v", ErrCorrupt, err)
	}
	return r, nil
}
