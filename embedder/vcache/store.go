package vcache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// ErrLocked means another process holds the cache file (bbolt allows one
// writer process). Callers run without the cache rather than fail.
var ErrLocked = errors.New("vcache: the cache file is in use by another process")

// Defaults for zero Config fields.
const (
	DefaultMaxBytes    = 256 << 20
	DefaultLockTimeout = time.Second
	// FileName is the cache file's name inside Config.Dir.
	FileName = "vectors.cache"
)

// entryOverhead is what one entry costs besides its value: the 32-byte key
// in the vectors bucket and the 40-byte row of the recency index.
const entryOverhead = 32 + 40

// formatVersion is stored in the meta bucket; a file of another format is
// emptied at open (it is a cache).
const formatVersion = "1"

var (
	bucketVectors = []byte("vectors") // key → stamp (8 bytes, big endian) + float32s (little endian)
	bucketRecency = []byte("recency") // stamp + key → nothing, in stamp order: the eviction order
	bucketMeta    = []byte("meta")
	keyFormat     = []byte("format")
	keyBytes      = []byte("bytes")
	keyEntries    = []byte("entries")
)

// Config configures Open.
type Config struct {
	// Dir holds the cache file (FileName); it is created if missing.
	Dir string
	// MaxBytes bounds the cache: the vectors' bytes plus 80 bytes of keys
	// and bookkeeping per entry. When an insert goes over it, the least
	// recently used entries are evicted down to 90 % of it. The file itself
	// is larger by bbolt's page overhead and does not shrink (freed pages
	// are reused). Default DefaultMaxBytes (256 MiB: about 170,000
	// 384-dimensional vectors).
	MaxBytes int64
	// LockTimeout bounds waiting for another process's lock on the file;
	// default DefaultLockTimeout. Open then returns ErrLocked.
	LockTimeout time.Duration
	// NoSync skips fsync after each write (tests; a cache loses nothing
	// that matters in a crash, but a torn file is thrown away at open).
	NoSync bool
	// Logger receives cache failures (never texts); nil discards.
	Logger *slog.Logger
}

// Store is the persistent vector cache. It is safe for concurrent use.
type Store struct {
	cfg  Config
	path string
	db   *bolt.DB

	bytes, entries, evictions atomic.Int64
	// writeMu orders writers, so the counters stored after each commit
	// are the last commit's (bbolt serialises the transactions, not what
	// their callers do after).
	writeMu sync.Mutex

	mu    sync.Mutex
	roles map[string]*counts
}

type counts struct{ hits, misses atomic.Uint64 }

// Open opens (or creates) the cache in cfg.Dir. A file that bbolt cannot
// read is moved aside (FileName + ".corrupt") and a new one created.
func Open(cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("vcache: no directory configured")
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.LockTimeout <= 0 {
		cfg.LockTimeout = DefaultLockTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("vcache: %w", err)
	}
	s := &Store{cfg: cfg, path: filepath.Join(cfg.Dir, FileName), roles: map[string]*counts{}}
	db, err := s.openBolt()
	if errors.Is(err, errCorrupt) {
		aside := s.path + ".corrupt"
		cfg.Logger.Warn("vcache: the cache file is unreadable; starting an empty one", "path", s.path, "moved_to", aside, "err", err)
		if rerr := os.Rename(s.path, aside); rerr != nil {
			return nil, fmt.Errorf("%w (and moving it aside failed: %v)", err, rerr)
		}
		db, err = s.openBolt()
	}
	if err != nil {
		return nil, err
	}
	s.db = db
	if err := s.init(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

var errCorrupt = errors.New("vcache: corrupt cache file")

func (s *Store) openBolt() (*bolt.DB, error) {
	db, err := bolt.Open(s.path, 0o600, &bolt.Options{Timeout: s.cfg.LockTimeout, NoSync: s.cfg.NoSync, FreelistType: bolt.FreelistMapType})
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("%w: %s", ErrLocked, s.path)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch),
		errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrInvalidMapping):
		return nil, fmt.Errorf("%w: %s: %v", errCorrupt, s.path, err)
	}
	return nil, fmt.Errorf("vcache: open %s: %w", s.path, err)
}

// init creates the buckets, empties a file of another format and loads the
// size counters.
func (s *Store) init() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if m := tx.Bucket(bucketMeta); m != nil && !bytes.Equal(m.Get(keyFormat), []byte(formatVersion)) {
			for _, b := range [][]byte{bucketVectors, bucketRecency, bucketMeta} {
				if err := tx.DeleteBucket(b); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
					return err
				}
			}
		}
		for _, b := range [][]byte{bucketVectors, bucketRecency, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("vcache: init: %w", err)
			}
		}
		m := tx.Bucket(bucketMeta)
		if err := m.Put(keyFormat, []byte(formatVersion)); err != nil {
			return err
		}
		s.bytes.Store(getInt(m, keyBytes))
		s.entries.Store(getInt(m, keyEntries))
		return nil
	})
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// Path is the cache file.
func (s *Store) Path() string { return s.path }

// Stats are a Store's figures.
type Stats struct {
	Entries, Bytes, MaxBytes, Evictions int64
	// Hits and Misses count texts by role since Open.
	Hits, Misses map[string]uint64
}

// Stats returns the cache's figures.
func (s *Store) Stats() Stats {
	st := Stats{Entries: s.entries.Load(), Bytes: s.bytes.Load(), MaxBytes: s.cfg.MaxBytes, Evictions: s.evictions.Load(),
		Hits: map[string]uint64{}, Misses: map[string]uint64{}}
	s.mu.Lock()
	defer s.mu.Unlock()
	for role, c := range s.roles {
		st.Hits[role], st.Misses[role] = c.hits.Load(), c.misses.Load()
	}
	return st
}

func (s *Store) counts(role string) *counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.roles[role]
	if c == nil {
		c = &counts{}
		s.roles[role] = c
	}
	return c
}

// hit is a found entry: its vector, and its stamp when the entry is old
// enough to be moved to the young end.
type hit struct {
	vec   []float32
	stale uint64 // 0: young enough
}

// lookup reads keys' vectors of dimension dim (other lengths are misses).
func (s *Store) lookup(keys []Key, dim int) ([]hit, error) {
	out := make([]hit, len(keys))
	err := s.db.View(func(tx *bolt.Tx) error {
		vb := tx.Bucket(bucketVectors)
		rb := tx.Bucket(bucketRecency)
		// Entries stamped before this are in the older half (roughly:
		// stamps of evicted and moved entries leave gaps).
		oldBelow := uint64(0)
		if seq, n := rb.Sequence(), uint64(getInt(tx.Bucket(bucketMeta), keyEntries)); seq > n/2 {
			oldBelow = seq - n/2
		}
		for i, k := range keys {
			v := vb.Get(k[:])
			if len(v) != 8+4*dim {
				continue
			}
			out[i].vec = decode(v[8:])
			if st := binary.BigEndian.Uint64(v[:8]); st < oldBelow {
				out[i].stale = st
			}
		}
		return nil
	})
	return out, err
}

// entry is a vector to store.
type entry struct {
	key Key
	vec []float32
}

// moved is a hit to move to the young end: its key and stamp at lookup.
type moved struct {
	key   Key
	stamp uint64
}

// store inserts entries, moves the stale hits to the young end and evicts
// the oldest entries when the cache is over its bound, in one transaction.
func (s *Store) store(put []entry, move []moved) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var bytesNow, entriesNow, evicted int64
	err := s.db.Update(func(tx *bolt.Tx) error {
		vb, rb, mb := tx.Bucket(bucketVectors), tx.Bucket(bucketRecency), tx.Bucket(bucketMeta)
		size, entries := getInt(mb, keyBytes), getInt(mb, keyEntries)
		for _, m := range move {
			v := vb.Get(m.key[:])
			if len(v) < 8 || binary.BigEndian.Uint64(v[:8]) != m.stamp {
				continue // evicted or moved meanwhile
			}
			st, err := rb.NextSequence()
			if err != nil {
				return err
			}
			nv := bytes.Clone(v)
			binary.BigEndian.PutUint64(nv[:8], st)
			if err := rb.Delete(recencyKey(m.stamp, m.key)); err != nil {
				return err
			}
			if err := vb.Put(m.key[:], nv); err != nil {
				return err
			}
			if err := rb.Put(recencyKey(st, m.key), nil); err != nil {
				return err
			}
		}
		for _, e := range put {
			if vb.Get(e.key[:]) != nil {
				continue // stored by a concurrent call
			}
			st, err := rb.NextSequence()
			if err != nil {
				return err
			}
			v := encode(st, e.vec)
			if err := vb.Put(e.key[:], v); err != nil {
				return err
			}
			if err := rb.Put(recencyKey(st, e.key), nil); err != nil {
				return err
			}
			size += int64(len(v)) + entryOverhead
			entries++
		}
		if size > s.cfg.MaxBytes {
			// Collect first: deleting under a bbolt cursor skips rows.
			var drop [][]byte
			target := s.cfg.MaxBytes / 10 * 9
			c := rb.Cursor()
			for k, _ := c.First(); k != nil && size > target; k, _ = c.Next() {
				drop = append(drop, bytes.Clone(k))
				size -= int64(len(vb.Get(k[8:]))) + entryOverhead
				entries--
			}
			for _, k := range drop {
				if err := vb.Delete(k[8:]); err != nil {
					return err
				}
				if err := rb.Delete(k); err != nil {
					return err
				}
			}
			evicted = int64(len(drop))
		}
		bytesNow, entriesNow = size, entries
		if err := putInt(mb, keyBytes, size); err != nil {
			return err
		}
		return putInt(mb, keyEntries, entries)
	})
	if err != nil {
		return fmt.Errorf("vcache: store: %w", err)
	}
	s.bytes.Store(bytesNow)
	s.entries.Store(entriesNow)
	s.evictions.Add(evicted)
	return nil
}

func recencyKey(stamp uint64, k Key) []byte {
	b := make([]byte, 8+len(k))
	binary.BigEndian.PutUint64(b, stamp)
	copy(b[8:], k[:])
	return b
}

func encode(stamp uint64, v []float32) []byte {
	b := make([]byte, 8+4*len(v))
	binary.BigEndian.PutUint64(b, stamp)
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[8+4*i:], math.Float32bits(x))
	}
	return b
}

func decode(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func getInt(b *bolt.Bucket, k []byte) int64 {
	v := b.Get(k)
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

func putInt(b *bolt.Bucket, k []byte, n int64) error {
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(n))
	return b.Put(k, v[:])
}
