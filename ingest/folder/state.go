package folder

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// State remembers, for one folder ingest (a server, a tenant and a
// source), what its earlier runs sent: per file the content's SHA-256, the
// chunker's Fingerprint and each chunk's id and Hash, as the server
// acknowledged them. It is a bbolt file on disk, so memory does not grow
// with the folder; a second run on the same state waits a second for the
// first's lock, then fails.
//
// What holds: a file's entry lists exactly the chunk ids that the server
// held for that file after the run that wrote it (every chunk answered
// ok, then every id of the file's earlier entry that is not among them
// deleted). An entry is written only after both; a run that stops before
// leaves the earlier entry, whose ids a later run deletes if they are
// gone from the file.
type State struct {
	db *bolt.DB
}

// StateKey is what a State belongs to. Server is compared as
// NormalServer has it, so one server typed two ways shares a State.
type StateKey struct {
	Server string `json:"server"`
	Tenant string `json:"tenant"`
	Source string `json:"source"`
}

// normal returns k with its Server in the form NormalServer gives.
func (k StateKey) normal() StateKey {
	k.Server = NormalServer(k.Server)
	return k
}

// NormalServer is the form of a server's base URL that a State is keyed
// by: the scheme (http when none is typed) and host in lower case, the
// scheme's default port left out, no trailing slash, no user info, query
// or fragment. "LOCALHOST:8080/", "http://localhost:8080" and
// "HTTP://localhost:8080//" are one server; a name and its address
// (localhost, 127.0.0.1) stay two, as the URLs differ. A value that does
// not parse as a URL is kept as it is.
func NormalServer(raw string) string {
	s := strings.TrimSpace(raw)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return raw
	}
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == map[string]string{"http": "80", "https": "443"}[scheme] {
		port = ""
	}
	if strings.Contains(host, ":") { // an IPv6 address
		host = "[" + host + "]"
	}
	if port != "" {
		host = net.JoinHostPort(strings.Trim(host, "[]"), port)
	}
	return (&url.URL{Scheme: scheme, Host: host, Path: strings.TrimRight(u.Path, "/")}).String()
}

// FileEntry is what the State holds for one file.
type FileEntry struct {
	SHA256      string       `json:"sha256"`
	Fingerprint string       `json:"fingerprint"`
	Chunks      []ChunkEntry `json:"chunks"`
}

// ChunkEntry is one chunk a run sent.
type ChunkEntry struct {
	ID   string `json:"id"`
	Hash string `json:"hash"`
}

var (
	bucketMeta  = []byte("meta")
	bucketFiles = []byte("files")
	keyKey      = []byte("key")
	keyRoot     = []byte("root")
)

// ErrStateInUse means another run holds the state's lock.
var ErrStateInUse = errors.New("folder: the state is in use by another run")

// DefaultStatePath is where the State of key lives unless the caller says:
// ragd/ingest/<16 hex digits of the SHA-256 of the key, its server
// normalised>.db under the user's cache directory.
func DefaultStatePath(key StateKey) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("folder: no cache directory for the state (pass its path): %w", err)
	}
	b, _ := json.Marshal(key.normal())
	sum := sha256.Sum256(b)
	return filepath.Join(base, "ragd", "ingest", hex.EncodeToString(sum[:8])+".db"), nil
}

// OpenState opens (or creates) the State at path for key. A State written
// for another key is refused.
func OpenState(path string, key StateKey) (*State, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("folder: state: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s", ErrStateInUse, path)
	}
	if err != nil {
		return nil, fmt.Errorf("folder: state %s: %w", path, err)
	}
	want, _ := json.Marshal(key.normal())
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(bucketFiles); err != nil {
			return err
		}
		if got := meta.Get(keyKey); got != nil && !sameKey(got, want) {
			return fmt.Errorf("folder: state %s belongs to %s, not %s", path, got, want)
		}
		return meta.Put(keyKey, want)
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &State{db: db}, nil
}

// sameKey reports whether the stored key got (which an older ragd may
// have written with its server as typed) is the key want.
func sameKey(got, want []byte) bool {
	var k StateKey
	if err := json.Unmarshal(got, &k); err != nil {
		return false
	}
	norm, _ := json.Marshal(k.normal())
	return string(norm) == string(want)
}

// Close closes the state file.
func (s *State) Close() error { return s.db.Close() }

// Root returns the folder the last run read ("" before the first).
func (s *State) Root() (string, error) {
	var root string
	err := s.db.View(func(tx *bolt.Tx) error {
		root = string(tx.Bucket(bucketMeta).Get(keyRoot))
		return nil
	})
	return root, err
}

// SetRoot records the folder a run reads.
func (s *State) SetRoot(root string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyRoot, []byte(root))
	})
}

// File returns the entry of rel.
func (s *State) File(rel string) (FileEntry, bool, error) {
	var e FileEntry
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketFiles).Get([]byte(rel))
		if v == nil {
			return nil
		}
		ok = true
		return json.Unmarshal(v, &e)
	})
	if err != nil {
		return FileEntry{}, false, fmt.Errorf("folder: state: %s: %w", rel, err)
	}
	return e, ok, nil
}

// Update writes the entries of put and removes those of del, in one
// transaction.
func (s *State) Update(put map[string]FileEntry, del []string) error {
	if len(put) == 0 && len(del) == 0 {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketFiles)
		for rel, e := range put {
			v, err := json.Marshal(e)
			if err != nil {
				return err
			}
			if err := b.Put([]byte(rel), v); err != nil {
				return err
			}
		}
		for _, rel := range del {
			if err := b.Delete([]byte(rel)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("folder: state: %w", err)
	}
	return nil
}

// Files calls fn for every file of the state, in order of path, until fn
// returns false. fn must not call the State.
func (s *State) Files(fn func(rel string, e FileEntry) bool) error {
	return s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketFiles).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var e FileEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("folder: state: %s: %w", k, err)
			}
			if !fn(string(k), e) {
				return nil
			}
		}
		return nil
	})
}
