package vector_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/vector"
	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

func mustOpen(tb testing.TB, cfg vector.Config) *vector.Backend {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := vector.Open(ctx, cfg)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	return b
}

func TestConfigValidate(t *testing.T) {
	ok := vector.Config{DSN: "postgres://u@127.0.0.1:5432/db", Dimension: 3}
	tests := []struct {
		name string
		mod  func(*vector.Config)
		want string // substring of the error; "" means valid
	}{
		{"ok", func(*vector.Config) {}, ""},
		{"ok full", func(c *vector.Config) {
			c.Distance, c.Table, c.HNSW = vector.L2, "ragd.docs", vector.HNSW{M: 8, EfConstruction: 32, EfSearch: 200, MaxScanTuples: 50000}
			c.IterativeScan, c.MaxConns, c.MinConns, c.ConnectTimeout = vector.IterativeStrict, 4, 1, time.Second
		}, ""},
		{"no DSN", func(c *vector.Config) { c.DSN = "" }, "DSN"},
		{"bad DSN", func(c *vector.Config) { c.DSN = "postgres://u:secret@[::1" }, "DSN"},
		{"no dimension", func(c *vector.Config) { c.Dimension = 0 }, "Dimension"},
		{"dimension over HNSW limit", func(c *vector.Config) { c.Dimension = 2001 }, "Dimension"},
		{"bad distance", func(c *vector.Config) { c.Distance = "hamming" }, "Distance"},
		{"injection in table", func(c *vector.Config) { c.Table = "docs; DROP TABLE x" }, "Table"},
		{"quoted table", func(c *vector.Config) { c.Table = `"docs"` }, "Table"},
		{"three-part table", func(c *vector.Config) { c.Table = "a.b.c" }, "Table"},
		{"M too small", func(c *vector.Config) { c.HNSW.M = 1 }, "HNSW.M"},
		{"ef_construction below 2M", func(c *vector.Config) { c.HNSW = vector.HNSW{M: 16, EfConstruction: 20} }, "EfConstruction"},
		{"ef_search too big", func(c *vector.Config) { c.HNSW.EfSearch = 5000 }, "EfSearch"},
		{"bad iterative scan", func(c *vector.Config) { c.IterativeScan = "sometimes" }, "IterativeScan"},
		{"min over max conns", func(c *vector.Config) { c.MaxConns, c.MinConns = 2, 3 }, "MinConns"},
		{"negative timeout", func(c *vector.Config) { c.ConnectTimeout = -time.Second }, "ConnectTimeout"},
		{"negative page", func(c *vector.Config) { c.ScanPageSize = -1 }, "ScanPageSize"},
		{"negative max scan tuples", func(c *vector.Config) { c.HNSW.MaxScanTuples = -1 }, "MaxScanTuples"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mod(&c)
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tt.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("Validate() leaks the DSN password: %v", err)
			}
			if _, oerr := vector.Open(context.Background(), c); oerr == nil {
				t.Fatal("Open accepted an invalid config")
			}
		})
	}
}

// A server that is not there must fail Open quickly with ErrUnavailable, so
// that startup and breakers see it at once.
func TestOpenUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	start := time.Now()
	_, err = vector.Open(context.Background(), vector.Config{
		DSN: "postgres://ragd@" + addr + "/ragd?sslmode=disable", Dimension: 3, ConnectTimeout: time.Second,
	})
	if !errors.Is(err, spi.ErrUnavailable) {
		t.Fatalf("Open against a closed port: %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Open took %v to fail", d)
	}
}

func TestContract(t *testing.T) {
	var mu sync.Mutex
	cfgs := map[spitest.VectorStore]vector.Config{}
	spitest.TestVectorBackend(t, spitest.VectorHarness{
		Open: func(t *testing.T, o spitest.VectorOptions) spitest.VectorStore {
			cfg := vector.Config{DSN: testenv.Postgres(t), Dimension: o.Dimension, Distance: vector.Distance(o.Distance)}
			b := mustOpen(t, cfg)
			mu.Lock()
			cfgs[b] = cfg
			mu.Unlock()
			return b
		},
		Reopen: func(t *testing.T, s spitest.VectorStore) spitest.VectorStore {
			mu.Lock()
			cfg := cfgs[s]
			mu.Unlock()
			if err := s.(*vector.Backend).Close(); err != nil {
				t.Fatal(err)
			}
			b := mustOpen(t, cfg)
			mu.Lock()
			cfgs[b] = cfg
			mu.Unlock()
			return b
		},
		Approximate: true,
		MinRecall:   0.95,
	})
}

func TestDimensionMismatch(t *testing.T) {
	dsn := testenv.Postgres(t)
	b := mustOpen(t, vector.Config{DSN: dsn, Dimension: 4, Table: "docs"})
	if err := b.Upsert(context.Background(), []spi.Document{{ID: "a", Vector: []float32{1, 2, 3, 4}}}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	_, err := vector.Open(context.Background(), vector.Config{DSN: dsn, Dimension: 8, Table: "docs"})
	var dm *vector.DimensionMismatchError
	if !errors.As(err, &dm) || dm.Existing != 4 || dm.Configured != 8 {
		t.Fatalf("Open with another dimension: %v, want *DimensionMismatchError{4, 8}", err)
	}
	if !strings.Contains(err.Error(), "vector(4)") || !strings.Contains(err.Error(), "8") {
		t.Errorf("error %q does not name both dimensions", err)
	}
	// Another table in the same database may have another dimension, and
	// the original table is untouched.
	mustOpen(t, vector.Config{DSN: dsn, Dimension: 8, Table: "docs8"})
	b = mustOpen(t, vector.Config{DSN: dsn, Dimension: 4, Table: "docs"})
	docs, _, err := b.Hydrate(context.Background(), []string{"a"})
	if err != nil || len(docs) != 1 {
		t.Fatalf("original table after the failed Open: %v, %v", docs, err)
	}
}

// The embedder identity is recorded per table in ragd_meta: a table built
// by one embedder refuses another while it holds rows, and RecordEmbedder
// replaces it.
func TestEmbedderIdentity(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	b := mustOpen(t, vector.Config{DSN: dsn, Dimension: 4, Table: "docs", Embedder: "kind=hashing one"})
	if err := b.Upsert(ctx, []spi.Document{{ID: "a", Vector: []float32{1, 2, 3, 4}}}); err != nil {
		t.Fatal(err)
	}
	if id, err := b.Embedder(ctx); err != nil || id != "kind=hashing one" {
		t.Fatalf("Embedder = %q, %v", id, err)
	}
	b.Close()
	// Another table of the same schema records its own identity.
	mustOpen(t, vector.Config{DSN: dsn, Dimension: 4, Table: "other", Embedder: "kind=openai two"})
	_, err := vector.Open(ctx, vector.Config{DSN: dsn, Dimension: 4, Table: "docs", Embedder: "kind=openai two"})
	var ec *vector.EmbedderChangedError
	if !errors.As(err, &ec) || ec.Recorded != "kind=hashing one" || ec.Configured != "kind=openai two" {
		t.Fatalf("Open with another embedder: %v, want *EmbedderChangedError", err)
	}
	if !strings.Contains(err.Error(), "ragd reembed") {
		t.Errorf("error %q does not say how to fix it", err)
	}
	b = mustOpen(t, vector.Config{DSN: dsn, Dimension: 4, Table: "docs"})
	if err := b.RecordEmbedder(ctx, "kind=openai two"); err != nil {
		t.Fatal(err)
	}
	b.Close()
	mustOpen(t, vector.Config{DSN: dsn, Dimension: 4, Table: "docs", Embedder: "kind=openai two"})
}

// Several processes starting at once against a database without the
// extension or the table must all succeed, and leave one table with its
// four indexes.
func TestConcurrentOpen(t *testing.T) {
	dsn := testenv.Postgres(t)
	conn := connect(t, dsn)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "DROP EXTENSION IF EXISTS vector CASCADE"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := vector.Open(ctx, vector.Config{DSN: dsn, Dimension: 3, Table: "public.docs", HNSW: vector.HNSW{M: 8}})
			if err == nil {
				b.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent Open #%d: %v", i, err)
		}
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = 'public' AND tablename = 'docs'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 5 { // primary key, hnsw, tenant, metadata, the tail's version
		t.Errorf("docs has %d indexes, want 5", n)
	}
	var storage string
	if err := conn.QueryRow(ctx, `SELECT attstorage::text FROM pg_attribute WHERE attrelid = 'public.docs'::regclass AND attname = 'embedding'`).Scan(&storage); err != nil {
		t.Fatal(err)
	}
	if storage != "m" {
		t.Errorf("a new table stores embeddings with storage %q, want m (inline)", storage)
	}
	// A schema that does not exist is the operator's to create: a clear error.
	_, err := vector.Open(ctx, vector.Config{DSN: dsn, Dimension: 3, Table: "nosuch.docs"})
	if err == nil || !strings.Contains(err.Error(), `schema "nosuch" does not exist`) {
		t.Errorf("Open in a missing schema: %v", err)
	}
}

// 2,000 documents, a filter matching 5% of them, k=10, all of them in the
// HNSW index (one bulk rebuild). At this size the planner would rather scan
// the table exactly, so the test turns sequential and bitmap scans off to
// force the HNSW index scan: then the index alone (ef_search candidates,
// then the filter) returns about 2 rows, and the iterative scan must fill k.
func TestFilteredQueryFillsK(t *testing.T) {
	const n, dim = 2000, 32
	dsn := withParams(t, testenv.Postgres(t), "enable_seqscan", "off", "enable_bitmapscan", "off")
	cfg := vector.Config{DSN: dsn, Dimension: dim, HNSW: vector.HNSW{EfSearch: 40}, Index: vector.IndexConfig{RebuildMin: 1, DeferMax: 1}}
	b := mustOpen(t, cfg)
	r := rand.New(rand.NewPCG(1, 2))
	docs := make([]spi.Document, n)
	for i := range docs {
		docs[i] = spi.Document{ID: fmt.Sprintf("d%04d", i), Vector: randVec(r, dim),
			Metadata: spi.Strings(map[string]string{"bucket": fmt.Sprint(i % 20)})}
	}
	if err := b.Upsert(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	analyze(t, dsn)
	rep, err := b.IndexStep(context.Background())
	if err != nil || !rep.Rebuilt || rep.V != n {
		t.Fatalf("IndexStep = %+v, %v; want a rebuild of the %d rows", rep, err, n)
	}
	plan := explain(t, dsn, fmt.Sprintf(`SELECT id FROM ragd_documents WHERE (indexed OR version <= %d) AND metadata @> ANY($2::jsonb[]) ORDER BY embedding <=> $1 LIMIT 18`, rep.V),
		randVec(r, dim), []string{`{"bucket":"3"}`})
	if !strings.Contains(plan, fmt.Sprintf("Index Scan using ragd_documents_cosine_hnsw_v%d", rep.V)) {
		t.Fatalf("the forced plan does not use the HNSW index:\n%s", plan)
	}
	filter := spi.StringFilter(map[string][]string{"bucket": {"3"}})
	queries := make([][]float32, 20)
	for i := range queries {
		queries[i] = randVec(r, dim)
	}
	for i, q := range queries {
		refs, err := b.Retrieve(context.Background(), spi.VectorRequest{Vector: q, K: 10, Filter: filter})
		if err != nil {
			t.Fatal(err)
		}
		if len(refs) != 10 {
			t.Fatalf("query %d: %d results for k=10 with 100 matching documents", i, len(refs))
		}
		for _, ref := range refs {
			if !docs[idx(ref.ID)].Metadata["bucket"].Equal(spi.String("3")) {
				t.Fatalf("query %d: %s does not match the filter", i, ref.ID)
			}
		}
	}
	// Without the iterative scan the same plan comes up short: the check
	// above would have caught a backend that forgot it.
	cfg.IterativeScan = vector.IterativeOff
	off := mustOpen(t, cfg)
	short := 0
	for _, q := range queries {
		refs, err := off.Retrieve(context.Background(), spi.VectorRequest{Vector: q, K: 10, Filter: filter})
		if err != nil {
			t.Fatal(err)
		}
		if len(refs) < 10 {
			short++
		}
	}
	if short == 0 {
		t.Errorf("with iterative scan off every query still filled k: the test does not exercise the index")
	}
}

func TestClosed(t *testing.T) {
	b := mustOpen(t, vector.Config{DSN: testenv.Postgres(t), Dimension: 2})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := b.Retrieve(ctx, spi.VectorRequest{Vector: []float32{1, 2}, K: 1}); !errors.Is(err, spi.ErrUnavailable) {
		t.Errorf("Retrieve after Close: %v, want ErrUnavailable", err)
	}
	if err := b.Upsert(ctx, []spi.Document{{ID: "a", Vector: []float32{1, 2}}}); !errors.Is(err, spi.ErrUnavailable) {
		t.Errorf("Upsert after Close: %v, want ErrUnavailable", err)
	}
	if h := b.Health(ctx); h.Status != spi.StatusDown {
		t.Errorf("Health after Close = %+v, want down", h)
	}
}

func TestChangeLog(t *testing.T) {
	spitest.TestChangeLog(t, 4, func(t *testing.T) spitest.RecordStore {
		return mustOpen(t, vector.Config{DSN: testenv.Postgres(t), Dimension: 4})
	})
}
