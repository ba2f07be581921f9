package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ragd/ragd/backends/vector/embedded"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		for _, dir := range benchDirs {
			os.RemoveAll(dir)
		}
		os.Exit(code)
	}))
}

func mustOpen(tb testing.TB, cfg embedded.Config) *embedded.Store {
	tb.Helper()
	s, err := embedded.Open(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func TestContract(t *testing.T) {
	spitest.TestVectorBackend(t, spitest.VectorHarness{
		Open: func(t *testing.T, o spitest.VectorOptions) spitest.VectorStore {
			return mustOpen(t, embedded.Config{Dir: t.TempDir(), Dimension: o.Dimension, Distance: embedded.Distance(o.Distance)})
		},
		Reopen: func(t *testing.T, s spitest.VectorStore) spitest.VectorStore {
			es := s.(*embedded.Store)
			if err := es.Close(); err != nil {
				t.Fatal(err)
			}
			return mustOpen(t, embedded.Config{Dir: filepath.Dir(es.Path()), Dimension: es.Dimension(), Distance: es.Distance()})
		},
	})
}

// A collection large enough to be split across goroutines must give the
// same answers as a single-goroutine scan.
func TestParallelSearchAgrees(t *testing.T) {
	const n, dim = 20000, 16 // 320k multiply-adds: above the split threshold
	r := rand.New(rand.NewPCG(9, 9))
	docs := make([]spi.Document, n)
	for i := range docs {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		docs[i] = spi.Document{ID: fmt.Sprintf("d%05d", i), Tenant: fmt.Sprint("t", i%2),
			Metadata: spi.Strings(map[string]string{"m": fmt.Sprint(i % 5)}), Vector: v}
	}
	// Exact duplicates across the split, to check the tie rule when merging.
	docs[n-1].Vector = docs[0].Vector
	docs[n/2].Vector = docs[0].Vector
	dir := t.TempDir()
	serial := mustOpen(t, embedded.Config{Dir: dir, Dimension: dim, Parallelism: 1, NoSync: true})
	if err := serial.Upsert(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	if err := serial.Close(); err != nil {
		t.Fatal(err)
	}
	parallel := mustOpen(t, embedded.Config{Dir: dir, Dimension: dim, Parallelism: 3, NoSync: true})
	serial = nil
	reqs := []spi.VectorRequest{
		{Vector: docs[0].Vector, K: 5},
		{Vector: docs[7].Vector, K: 50, Tenant: "t1"},
		{Vector: docs[123].Vector, K: 20, Filter: spi.StringFilter(map[string][]string{"m": {"1", "3"}})},
	}
	want := make([][]spi.Ref, len(reqs))
	for i, req := range reqs {
		got, err := parallel.Retrieve(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = got
	}
	if ids := refIDs(want[0][:3]); ids != "d00000,d10000,d19999" {
		t.Errorf("duplicates of d00000 ranked %s, want d00000,d10000,d19999", ids)
	}
	if err := parallel.Close(); err != nil {
		t.Fatal(err)
	}
	serial = mustOpen(t, embedded.Config{Dir: dir, Dimension: dim, Parallelism: 1, NoSync: true})
	for i, req := range reqs {
		got, err := serial.Retrieve(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if refIDs(got) != refIDs(want[i]) {
			t.Errorf("request %d: serial scan %s, parallel scan %s", i, refIDs(got), refIDs(want[i]))
		}
	}
}

func refIDs(refs []spi.Ref) string {
	s := make([]string, len(refs))
	for i, r := range refs {
		s[i] = r.ID
	}
	return strings.Join(s, ",")
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  embedded.Config
		want string // substring of the error; "" means valid
	}{
		{"ok", embedded.Config{Dir: "x", Dimension: 3}, ""},
		{"ok l2", embedded.Config{Dir: "x", Dimension: 3, Distance: embedded.L2}, ""},
		{"no dir", embedded.Config{Dimension: 3}, "Dir"},
		{"no dimension", embedded.Config{Dir: "x"}, "Dimension"},
		{"huge dimension", embedded.Config{Dir: "x", Dimension: embedded.MaxDimension + 1}, "Dimension"},
		{"bad distance", embedded.Config{Dir: "x", Dimension: 3, Distance: "manhattan"}, "Distance"},
		{"negative lock timeout", embedded.Config{Dir: "x", Dimension: 3, LockTimeout: -1}, "LockTimeout"},
		{"negative parallelism", embedded.Config{Dir: "x", Dimension: 3, Parallelism: -1}, "Parallelism"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tt.want)
			}
			if _, oerr := embedded.Open(context.Background(), tt.cfg); oerr == nil {
				t.Fatal("Open accepted an invalid config")
			}
		})
	}
}

func TestDimensionMismatch(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, embedded.Config{Dir: dir, Dimension: 4})
	if err := s.Upsert(context.Background(), []spi.Document{{ID: "a", Vector: []float32{1, 2, 3, 4}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := embedded.Open(context.Background(), embedded.Config{Dir: dir, Dimension: 8})
	var dm *embedded.DimensionMismatchError
	if !errors.As(err, &dm) || dm.Existing != 4 || dm.Configured != 8 {
		t.Fatalf("Open with another dimension: %v, want *DimensionMismatchError{4, 8}", err)
	}
	if !strings.Contains(err.Error(), "4") || !strings.Contains(err.Error(), "8") {
		t.Errorf("error %q does not name both dimensions", err)
	}
	// The distance may change: vectors are stored raw.
	s2 := mustOpen(t, embedded.Config{Dir: dir, Dimension: 4, Distance: embedded.InnerProduct})
	refs, err := s2.Retrieve(context.Background(), spi.VectorRequest{Vector: []float32{1, 0, 0, 0}, K: 1})
	if err != nil || len(refs) != 1 || refs[0].Score != 1 {
		t.Fatalf("inner product after reopening a cosine store = %v, %v; want score 1 (raw vector kept)", refs, err)
	}
}

// The embedder identity is recorded with the vectors: a store built by one
// embedder refuses another, unless it holds no document; a store that
// records none takes the configured one; RecordEmbedder replaces it.
func TestEmbedderIdentity(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	reopen := func(id string) (*embedded.Store, error) {
		return embedded.Open(ctx, embedded.Config{Dir: dir, Dimension: 4, Embedder: id})
	}
	// Built without an identity (an older store), with one document.
	s := mustOpen(t, embedded.Config{Dir: dir, Dimension: 4})
	if err := s.Upsert(ctx, []spi.Document{{ID: "a", Vector: []float32{1, 2, 3, 4}}}); err != nil {
		t.Fatal(err)
	}
	if id, err := s.Embedder(ctx); err != nil || id != "" {
		t.Fatalf("Embedder = %q, %v; want none recorded", id, err)
	}
	s.Close()
	s, err := reopen("kind=hashing one")
	if err != nil {
		t.Fatalf("a store without an identity must take the configured one: %v", err)
	}
	if id, err := s.Embedder(ctx); err != nil || id != "kind=hashing one" {
		t.Fatalf("Embedder = %q, %v", id, err)
	}
	s.Close()
	_, err = reopen("kind=openai two")
	var ec *embedded.EmbedderChangedError
	if !errors.As(err, &ec) || ec.Recorded != "kind=hashing one" || ec.Configured != "kind=openai two" {
		t.Fatalf("Open with another embedder: %v, want *EmbedderChangedError", err)
	}
	if !strings.Contains(err.Error(), "ragd reembed") {
		t.Errorf("error %q does not say how to fix it", err)
	}
	// Without an identity configured, nothing is checked.
	s, err = reopen("")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordEmbedder(ctx, "kind=openai two"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = reopen("kind=openai two")
	if err != nil {
		t.Fatalf("after RecordEmbedder: %v", err)
	}
	// An empty store may change embedder: nothing can be mixed.
	if err := s.Delete(ctx, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = reopen("kind=three")
	if err != nil {
		t.Fatalf("empty store, new embedder: %v", err)
	}
	if id, _ := s.Embedder(ctx); id != "kind=three" {
		t.Fatalf("Embedder = %q after opening an empty store with a new one", id)
	}
	s.Close()
}

func TestCorruptFile(t *testing.T) {
	tests := map[string]func(t *testing.T, path string){
		"garbage": func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 1000)), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"zeroed header": func(t *testing.T, path string) {
			writeValidStore(t, path)
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(make([]byte, 8192), 0); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, corrupt := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, embedded.FileName)
			corrupt(t, path)
			s, err := embedded.Open(context.Background(), embedded.Config{Dir: dir, Dimension: 4})
			if err == nil {
				s.Close()
				t.Fatal("Open accepted a corrupt file")
			}
			if !errors.Is(err, embedded.ErrCorrupt) {
				t.Fatalf("Open: %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func writeValidStore(t *testing.T, path string) {
	t.Helper()
	s, err := embedded.Open(context.Background(), embedded.Config{Dir: filepath.Dir(path), Dimension: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Upsert(context.Background(), []spi.Document{{ID: "a", Vector: []float32{1, 2, 3, 4}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLocked(t *testing.T) {
	dir := t.TempDir()
	mustOpen(t, embedded.Config{Dir: dir, Dimension: 4})
	start := time.Now()
	_, err := embedded.Open(context.Background(), embedded.Config{Dir: dir, Dimension: 4, LockTimeout: 100 * time.Millisecond})
	if !errors.Is(err, embedded.ErrLocked) {
		t.Fatalf("second Open of one directory: %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Open waited %v despite a 100ms lock timeout", d)
	}
}

func TestClosed(t *testing.T) {
	s := mustOpen(t, embedded.Config{Dir: t.TempDir(), Dimension: 2})
	if err := s.Upsert(context.Background(), []spi.Document{{ID: "a", Vector: []float32{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if h := s.Health(context.Background()); h.Status != spi.StatusDown {
		t.Errorf("Health after Close = %+v, want down", h)
	}
	_, err := s.Retrieve(context.Background(), spi.VectorRequest{Vector: []float32{1, 2}, K: 1})
	if !errors.Is(err, spi.ErrUnavailable) {
		t.Errorf("Retrieve after Close: %v, want ErrUnavailable", err)
	}
	_, _, err = s.Hydrate(context.Background(), []string{"a"})
	if !errors.Is(err, spi.ErrUnavailable) {
		t.Errorf("Hydrate after Close: %v, want ErrUnavailable", err)
	}
	if err := s.Upsert(context.Background(), []spi.Document{{ID: "b", Vector: []float32{1, 2}}}); !errors.Is(err, spi.ErrUnavailable) {
		t.Errorf("Upsert after Close: %v, want ErrUnavailable", err)
	}
}

func TestChangeLog(t *testing.T) {
	spitest.TestChangeLog(t, 4, func(t *testing.T) spitest.RecordStore {
		return mustOpen(t, embedded.Config{Dir: t.TempDir(), Dimension: 4, NoSync: true})
	})
}

// Issue 29 item 1: a posting that became a bitset while the index was
// large kept its length when the index shrank under it (the deletes were
// of rows not holding its pair), and a filtered search wrote past the
// filter's bitset: index out of range. 10,000 documents with version=1,
// the first 400 rewritten as version=2 (the pair's set turns into a
// bitset sized for 10,000 rows), the last 5,000 deleted, then a search
// filtered on version=2 must answer those 400 documents' best.
func TestFilteredSearchAfterShrink(t *testing.T) {
	const n, dim = 10000, 8
	ctx := context.Background()
	s := mustOpen(t, embedded.Config{Dir: t.TempDir(), Dimension: dim, NoSync: true})
	r := rand.New(rand.NewPCG(29, 1))
	vec := func() []float32 {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		return v
	}
	docs := make([]spi.Document, n)
	for i := range docs {
		docs[i] = spi.Document{ID: fmt.Sprintf("d%05d", i), Metadata: spi.Strings(map[string]string{"version": "1"}), Vector: vec()}
	}
	if err := s.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	for i := range 400 {
		docs[i].Metadata = spi.Strings(map[string]string{"version": "2"})
	}
	if err := s.Upsert(ctx, docs[:400]); err != nil {
		t.Fatal(err)
	}
	var gone []string
	for _, d := range docs[n-5000:] {
		gone = append(gone, d.ID)
	}
	if err := s.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	for _, f := range []spi.Filter{spi.StringFilter(map[string][]string{"version": {"2"}}), spi.StringFilter(map[string][]string{"version": {"1", "2"}}), spi.StringFilter(map[string][]string{"version": {"1"}})} {
		req := spi.VectorRequest{Vector: vec(), K: 10, Filter: f}
		got, err := s.Retrieve(ctx, req)
		if err != nil {
			t.Fatalf("filter %v: %v", f, err)
		}
		want, err := embedded.FullScan(s, req)
		if err != nil {
			t.Fatal(err)
		}
		if !sameRefs(got, want) {
			t.Fatalf("filter %v: %v, want %v", f, got, want)
		}
	}
}
