package embedded_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/ragd/ragd/backends/graph/embedded"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t testing.TB, dir string, maxDegree int) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(context.Background(), embedded.Config{Dir: dir, MaxDegree: maxDegree, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	dirs := map[spitest.GraphStore]string{}
	spitest.RunGraph(t, spitest.GraphHarness{
		MaxDegree: 4,
		Open: func(t *testing.T) spitest.GraphStore {
			dir := t.TempDir()
			s := open(t, dir, 4)
			dirs[s] = dir
			return s
		},
		Reopen: func(t *testing.T, old spitest.GraphStore) spitest.GraphStore {
			if err := old.(*embedded.Store).Close(); err != nil {
				t.Fatal(err)
			}
			s := open(t, dirs[old], 4)
			dirs[s] = dirs[old]
			return s
		},
	})
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []embedded.Config{{}, {Dir: "x", MaxDegree: -1}, {Dir: "x", MaxMatchEntities: -1}, {Dir: "x", LockTimeout: -1}} {
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want error", c)
		}
		if _, err := embedded.Open(context.Background(), c); err == nil {
			t.Errorf("Open(%+v) = nil error", c)
		}
	}
	if err := (embedded.Config{Dir: "x"}).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestQueryUnsupported(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	if _, err := s.Query(context.Background(), "MATCH (n) RETURN n", nil); !errors.Is(err, spi.ErrUnsupported) {
		t.Fatalf("Query = %v, want ErrUnsupported", err)
	}
	if _, err := s.MatchEntities(context.Background(), spi.KeywordRequest{Text: "a*", K: 1, Syntax: true}); !errors.Is(err, spi.ErrUnsupported) {
		t.Fatalf("MatchEntities(Syntax) = %v, want ErrUnsupported", err)
	}
}

func TestClosedIsUnavailable(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	if err := s.Upsert(context.Background(), []spi.Document{{ID: "a", Entities: []string{"x"}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if h := s.Health(context.Background()); h.Status != spi.StatusDown {
		t.Fatalf("Health after Close = %+v", h)
	}
	if _, err := s.Expand(context.Background(), []string{"a"}, spi.ExpandOptions{Hops: 1, Limit: 1}); !errors.Is(err, spi.ErrUnavailable) {
		t.Fatalf("Expand after Close = %v", err)
	}
	if _, _, err := s.Hydrate(context.Background(), []string{"a"}); !errors.Is(err, spi.ErrUnavailable) {
		t.Fatalf("Hydrate after Close = %v", err)
	}
	if err := s.Upsert(context.Background(), []spi.Document{{ID: "b"}}); !errors.Is(err, spi.ErrUnavailable) {
		t.Fatalf("Upsert after Close = %v", err)
	}
}

func TestCorruptFile(t *testing.T) {
	cases := map[string][]byte{
		"garbage":   []byte("this is not a bbolt file, just some text that is long enough to look like a header......"),
		"zero page": make([]byte, 64<<10),
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, embedded.FileName), content, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := embedded.Open(context.Background(), embedded.Config{Dir: dir})
			if err == nil {
				s.Close()
				t.Fatal("Open on a corrupt file succeeded")
			}
			if !errors.Is(err, embedded.ErrCorrupt) {
				t.Fatalf("Open = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestForeignBoltFile(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Flip the format version byte in place: Open must refuse the file.
	path := filepath.Join(dir, embedded.FileName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := indexOf(b, []byte("version1"))
	if i < 0 {
		t.Skip("version key not found in the file layout")
	}
	b[i+len("version")] = '9'
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := embedded.Open(context.Background(), embedded.Config{Dir: dir}); !errors.Is(err, embedded.ErrCorrupt) {
		t.Fatalf("Open(other version) = %v, want ErrCorrupt", err)
	}
}

func indexOf(b, sub []byte) int {
	for i := 0; i+len(sub) <= len(b); i++ {
		if string(b[i:i+len(sub)]) == string(sub) {
			return i
		}
	}
	return -1
}

func TestLocked(t *testing.T) {
	dir := t.TempDir()
	open(t, dir, 0)
	_, err := embedded.Open(context.Background(), embedded.Config{Dir: dir, LockTimeout: 50e6})
	if !errors.Is(err, embedded.ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
}

func TestMaxMatchEntities(t *testing.T) {
	s, err := embedded.Open(context.Background(), embedded.Config{Dir: t.TempDir(), MaxMatchEntities: 2, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Weights for "alpha beta": e1=2, e2=1, e3=1; only e1 and e2 (name
	// order breaks the tie) are followed.
	err = s.Upsert(context.Background(), []spi.Document{
		{ID: "d1", Entities: []string{"alpha beta"}},
		{ID: "d2", Entities: []string{"alpha one"}},
		{ID: "d3", Entities: []string{"beta two"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	refs, err := s.MatchEntities(context.Background(), spi.KeywordRequest{Text: "alpha beta", K: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 2 || refs[0].ID != "d1" || refs[1].ID != "d2" {
		t.Fatalf("MatchEntities = %+v, want d1 then d2", refs)
	}
}
