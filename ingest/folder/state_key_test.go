package folder

import (
	"encoding/json"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestNormalServer(t *testing.T) {
	same := [][]string{
		{"http://localhost:8080", "localhost:8080", "LOCALHOST:8080/", "HTTP://localhost:8080//", " http://localhost:8080 "},
		{"http://127.0.0.1", "127.0.0.1:80", "http://127.0.0.1:80/", "http://user@127.0.0.1"},
		{"https://ragd.example", "https://RAGD.example:443/", "HTTPS://ragd.example"},
		{"http://[::1]:8080", "[::1]:8080", "http://[::1]:8080/"},
		{"http://h:8080/ragd", "h:8080/ragd/", "http://H:8080/ragd"},
	}
	seen := map[string]bool{}
	for _, group := range same {
		want := NormalServer(group[0])
		if want != group[0] {
			t.Errorf("NormalServer(%q) = %q, want it unchanged", group[0], want)
		}
		for _, raw := range group[1:] {
			if got := NormalServer(raw); got != want {
				t.Errorf("NormalServer(%q) = %q, want %q", raw, got, want)
			}
		}
		if seen[want] {
			t.Errorf("two groups normalise to %q", want)
		}
		seen[want] = true
	}
	// Different servers stay different.
	for _, pair := range [][2]string{
		{"http://localhost:8080", "http://127.0.0.1:8080"},
		{"http://h:8080", "https://h:8080"},
		{"http://h:8080", "http://h:8081"},
		{"http://h/a", "http://h/b"},
		{"http://h/Path", "http://h/path"},
	} {
		if NormalServer(pair[0]) == NormalServer(pair[1]) {
			t.Errorf("%q and %q normalise alike", pair[0], pair[1])
		}
	}
}

// TestStateSharedAcrossTypings: the same server typed two ways finds the
// same default state path and opens the same state, also one that an
// older ragd wrote with the server as typed; another server is refused.
func TestStateSharedAcrossTypings(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	a := StateKey{Server: "localhost:8080/", Tenant: "t", Source: "docs"}
	b := StateKey{Server: "http://LOCALHOST:8080", Tenant: "t", Source: "docs"}
	pa, err := DefaultStatePath(a)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := DefaultStatePath(b)
	if err != nil || pa != pb {
		t.Fatalf("default state paths %q and %q (%v), want one", pa, pb, err)
	}
	other, _ := DefaultStatePath(StateKey{Server: "http://localhost:8081", Tenant: "t", Source: "docs"})
	if other == pa {
		t.Fatal("another port has the same default state path")
	}

	path := filepath.Join(t.TempDir(), "state.db")
	// A state as an older ragd left it: the server as typed.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(StateKey{Server: "http://localhost:8080/", Tenant: "t", Source: "docs"})
	if err := db.Update(func(tx *bolt.Tx) error {
		m, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		return m.Put(keyKey, raw)
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, k := range []StateKey{a, b} {
		s, err := OpenState(path, k)
		if err != nil {
			t.Fatalf("OpenState(%q): %v", k.Server, err)
		}
		s.Close()
	}
	if _, err := OpenState(path, StateKey{Server: "http://127.0.0.1:8080", Tenant: "t", Source: "docs"}); err == nil {
		t.Fatal("a state opened for another server")
	}
}
