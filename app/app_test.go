package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/app"
	"github.com/ragd/ragd/backends/graph/embedded"
	vectorembedded "github.com/ragd/ragd/backends/vector/embedded"
	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/internal/faultproxy"
	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// embeddedConfig is defaultConfig with the graph source and its expansion
// switched on.
func embeddedConfig(t testing.TB) *config.Config {
	t.Helper()
	c := defaultConfig(t)
	// The graph source and its expansion are off by default; these tests
	// are about the wiring of all three sources, so they switch them on.
	on, one := true, 1.0
	c.Retriever.Sources = map[string]config.SourceConfig{"graph": {Weight: &one}}
	c.Retriever.Expand.Enabled = &on
	return c
}

// defaultConfig is rag.yaml's defaults (the graph source and its
// expansion off) with auth off, in a temporary data directory, and the
// hashing embedder: these tests are about the wiring, and the hashing
// embedder is exact and needs no model (the built-in model's tests read it
// from testenv).
func defaultConfig(t testing.TB) *config.Config {
	t.Helper()
	c := config.Default()
	off := false
	c.Auth.Enabled = &off
	c.DataDir = t.TempDir()
	c.Embedder.Kind = config.KindHashing
	return &c
}

func newApp(t testing.TB, cfg *config.Config) *app.App {
	t.Helper()
	a, err := app.New(context.Background(), cfg, app.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	return a
}

func top(t *testing.T, a *app.App, q retriever.Query) *retriever.Result {
	t.Helper()
	res, err := a.Retriever.Retrieve(context.Background(), q)
	if err != nil {
		t.Fatalf("Retrieve: %v", err)
	}
	return res
}

func TestEmbeddedStackServesAndPersists(t *testing.T) {
	cfg := embeddedConfig(t)
	a := newApp(t, cfg)
	n, err := a.LoadDemo(context.Background())
	if err != nil || n != 24 {
		t.Fatalf("LoadDemo = %d, %v; want 24 documents", n, err)
	}
	q := retriever.Query{Text: "circuit breaker half-open trial calls", Limit: 3}
	res := top(t, a, q)
	if len(res.Hits) == 0 || res.Hits[0].ID != "circuit-breaker" || res.Hits[0].Document == nil {
		t.Fatalf("want circuit-breaker first and hydrated, got %+v", res.Hits)
	}
	for _, s := range []string{spi.SourceVector, spi.SourceKeyword, spi.SourceGraph, spi.SourceGraphExpand} {
		if res.Sources[s].Status != retriever.StatusOK {
			t.Errorf("source %s: %+v", s, res.Sources[s])
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopen: the demo is already there, nothing is written again.
	a = newApp(t, cfg)
	if n, err := a.LoadDemo(context.Background()); err != nil || n != 0 {
		t.Fatalf("LoadDemo after restart = %d, %v; want 0 (already stored)", n, err)
	}
	if res := top(t, a, q); res.Hits[0].ID != "circuit-breaker" {
		t.Fatalf("after restart: %+v", res.Hits)
	}
	a.Close()
}

func TestDerivedStoresRebuiltAtStart(t *testing.T) {
	cfg := embeddedConfig(t)
	a := newApp(t, cfg)
	if _, err := a.LoadDemo(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.Close()

	// Lose the keyword index and corrupt the graph file.
	if err := os.RemoveAll(filepath.Join(cfg.DataDir, "keyword")); err != nil {
		t.Fatal(err)
	}
	graphFile := filepath.Join(cfg.DataDir, "graph", embedded.FileName)
	if err := os.WriteFile(graphFile, []byte("this is not a bolt database"), 0o600); err != nil {
		t.Fatal(err)
	}

	a = newApp(t, cfg)
	defer a.Close()
	only := func(src string) retriever.Query {
		q := retriever.Query{Text: "circuit breaker half-open", Limit: 5, Sources: retriever.Only(src)}
		return q
	}
	// The keyword index is filled from the record in the background.
	eventually(t, "the keyword index to be rebuilt", func() bool {
		res, err := a.Retriever.Retrieve(context.Background(), only(spi.SourceKeyword))
		return err == nil && len(res.Hits) > 0 && res.Sources[spi.SourceKeyword].Status == retriever.StatusOK
	})
	// The new graph store is filled by its change-log applier, in the
	// background; it answers once it has caught up.
	eventually(t, "the graph store to be refilled", func() bool {
		res, err := a.Retriever.Retrieve(context.Background(), only(spi.SourceGraph))
		return err == nil && len(res.Hits) > 0 && res.Sources[spi.SourceGraph].Status == retriever.StatusOK
	})
	if _, err := os.Stat(graphFile + ".corrupt"); err != nil {
		t.Errorf("corrupt graph file was not kept aside: %v", err)
	}
}

func TestStartsWhileServerBackendsAreDown(t *testing.T) {
	cfg := embeddedConfig(t)
	cfg.Backends.Vector = config.VectorConfig{Kind: config.KindPgvector, DSN: "postgres://ragd:x@" + deadAddr(t) + "/ragd", Table: "ragd_documents", Distance: "cosine", ConnectTimeoutMS: 500, MaxConns: 2, EFSearch: 40}
	cfg.Backends.Graph = config.GraphConfig{Kind: config.KindNeo4j, URI: "bolt://" + deadAddr(t), User: "neo4j", Password: "x", ConnectTimeoutMS: 500}
	a := newApp(t, cfg)
	defer a.Close()

	// Writes fail per document (the system of record is down): never a panic,
	// never a silent success.
	res := a.Pipeline.Upsert(context.Background(), []spi.Document{{ID: "d1", Title: "circuit breakers", Text: "open after failures"}}, ingest.WriteOptions{})
	if len(res) != 1 || res[0].Status != "failed" {
		t.Fatalf("upsert while the record store is down: %+v", res)
	}
	// The keyword index is empty and cannot be filled from the record
	// while it is down: it is not served as if it were whole, and ragd is
	// not ready. Queries fail naming every source.
	_, err := a.Retriever.Retrieve(context.Background(), retriever.Query{Text: "circuit breakers", Limit: 3})
	for _, s := range []string{spi.SourceVector, spi.SourceKeyword, spi.SourceGraph} {
		if err == nil || !strings.Contains(err.Error(), s+": error") {
			t.Errorf("query while every source is down or incomplete: %v, want %s named as failing", err, s)
		}
	}
	if err := a.Ready(context.Background()); err == nil {
		t.Error("ready while the keyword index cannot be built")
	}
	h := a.Health()[spi.SourceVector].Health(context.Background())
	if h.Status != spi.StatusDown {
		t.Errorf("vector health %+v, want down", h)
	}
}

func TestConnectsWhenPostgresComesBack(t *testing.T) {
	dsn := testenv.Postgres(t)
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		t.Skipf("DSN %q is not a URL; this test rewrites its host", dsn)
	}
	p, err := faultproxy.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.Refuse()
	u.Host = p.Addr()

	cfg := embeddedConfig(t)
	cfg.Backends.Vector = config.VectorConfig{Kind: config.KindPgvector, DSN: u.String(), Table: "ragd_documents", Distance: "cosine", ConnectTimeoutMS: 1000, MaxConns: 4, EFSearch: 40}
	a := newApp(t, cfg)
	defer a.Close()
	if r := a.Pipeline.Upsert(context.Background(), []spi.Document{{ID: "early", Title: "t", Text: "x"}}, ingest.WriteOptions{}); r[0].Status != "failed" {
		t.Fatalf("upsert before PostgreSQL is reachable: %+v", r)
	}

	p.Pass()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := a.Pipeline.Upsert(context.Background(), []spi.Document{{ID: "late", Title: "zeppelin mooring", Text: "masts"}}, ingest.WriteOptions{})
		if r[0].Status == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never connected after PostgreSQL came back: %+v", r)
		}
		time.Sleep(200 * time.Millisecond)
	}
	res := top(t, a, retriever.Query{Text: "zeppelin mooring", Limit: 1})
	if len(res.Hits) == 0 || res.Hits[0].ID != "late" || res.Sources[spi.SourceVector].Status != retriever.StatusOK {
		t.Fatalf("after reconnect: %+v", res)
	}
}

func TestMisconfiguredServerFailsStart(t *testing.T) {
	dsn := testenv.Postgres(t)
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		t.Skipf("DSN %q is not a URL", dsn)
	}
	u.User = url.UserPassword("no_such_role_ragd", "wrong")
	cfg := embeddedConfig(t)
	cfg.Backends.Vector = config.VectorConfig{Kind: config.KindPgvector, DSN: u.String(), Table: "ragd_documents", Distance: "cosine", ConnectTimeoutMS: 1000, MaxConns: 2, EFSearch: 40}
	_, err = app.New(context.Background(), cfg, app.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil {
		t.Fatal("a wrong role must fail start-up, not be retried forever")
	}
	if errors.Is(err, spi.ErrUnavailable) {
		t.Logf("note: authentication failure classified as unavailable: %v", err)
	}
	if !strings.Contains(err.Error(), "backends.vector") {
		t.Errorf("error does not name the backend: %v", err)
	}
}

// eventually polls cond for up to 30 s (generous: CI machines are loaded).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A keyword index that starts empty beside a record holding documents (a
// replica joining, a lost index) is filled from the record in bulk; until
// then it is not served, its health is down with the progress and ragd is
// not ready. A document written while the load runs (after it read the
// log's head) is applied after it; the store ends equal to the record.
func TestKeywordIndexJoinsFromTheRecord(t *testing.T) {
	cfg := embeddedConfig(t)
	a := newApp(t, cfg)
	if _, err := a.LoadDemo(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if err := os.RemoveAll(filepath.Join(cfg.DataDir, "keyword")); err != nil {
		t.Fatal(err)
	}

	// A cooldown longer than the test: only the load's end can close the
	// breaker the refusals below open.
	cfg.Breakers.ResetTimeoutS = 600
	started, release := make(chan struct{}), make(chan struct{})
	restore := app.SetJoinHook(func() {
		close(started)
		<-release
	})
	defer restore()
	a = newApp(t, cfg)
	defer a.Close()
	<-started
	ctx := context.Background()
	q := retriever.Query{Text: "circuit breaker half-open", Limit: 5, Sources: retriever.Only(spi.SourceKeyword)}
	if h := a.Health()[spi.SourceKeyword].Health(ctx); h.Status != spi.StatusDown || !strings.Contains(h.Detail, "being built from the record") {
		t.Errorf("keyword health while building: %+v", h)
	}
	// Enough refusals to open the keyword breaker: the load's end closes it.
	for range cfg.Breakers.FailureThreshold + 1 {
		if _, err := a.Retriever.Retrieve(ctx, q); err == nil || !strings.Contains(err.Error(), "keyword:") {
			t.Errorf("keyword query while the index is being built: %v, want the keyword source failing", err)
		}
	}
	if err := a.Ready(ctx); err == nil {
		t.Error("ready while the keyword index is being built")
	}
	res := a.Pipeline.Upsert(ctx, []spi.Document{{ID: "late", Title: "zeppelin mooring masts", Text: "written during the load"}}, ingest.WriteOptions{})
	if res[0].Status != ingest.StatusOK {
		t.Fatalf("write during the load: %+v", res[0])
	}
	close(release)

	eventually(t, "the keyword index to hold the late document", func() bool {
		res, err := a.Retriever.Retrieve(ctx, retriever.Query{Text: "zeppelin mooring masts", Limit: 1, Sources: retriever.Only(spi.SourceKeyword)})
		return err == nil && len(res.Hits) == 1 && res.Hits[0].ID == "late"
	})
	if err := a.Ready(ctx); err != nil {
		t.Errorf("not ready after the load: %v", err)
	}
	if st := a.Breakers.Get(spi.SourceKeyword).State(); st != breaker.Closed {
		t.Errorf("keyword breaker %v after the load, want closed", st)
	}
	if res := top(t, a, q); len(res.Hits) == 0 || res.Hits[0].ID != "circuit-breaker" {
		t.Errorf("after the load: %+v", res.Hits)
	}
	rep, err := a.Pipeline.Check(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Stores {
		if s.Store == spi.SourceKeyword && (s.Missing+s.Stale+s.Extra != 0 || s.Applied != rep.Head || s.Documents != 25) {
			t.Errorf("keyword after the load: %+v, head %d", s, rep.Head)
		}
	}
}

func TestKeywordIndexCatchesUpWithTheRecordAtStart(t *testing.T) {
	cfg := embeddedConfig(t)
	a := newApp(t, cfg)
	if _, err := a.LoadDemo(context.Background()); err != nil {
		t.Fatal(err)
	}
	dim := a.Embedder.Dimension()
	a.Close()

	// A crash after the record write and before the index write: the
	// document is only in the system of record.
	vs, err := vectorembedded.Open(context.Background(), vectorembedded.Config{Dir: filepath.Join(cfg.DataDir, cfg.Backends.Vector.Dir), Dimension: dim})
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, dim)
	v[0] = 1
	if err := vs.Upsert(context.Background(), []spi.Document{{ID: "orphan", Title: "zeppelin mooring masts", Text: "only in the record", Vector: v}}); err != nil {
		t.Fatal(err)
	}
	vs.Close()

	a = newApp(t, cfg)
	defer a.Close()
	q := retriever.Query{Text: "zeppelin mooring masts", Limit: 1, Sources: retriever.Only(spi.SourceKeyword)}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := top(t, a, q)
		if len(res.Hits) > 0 && res.Hits[0].ID == "orphan" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("keyword index never caught up with the record: %+v", res.Hits)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHealthReportsTheEmbedder is issue 12 item 8: health lists an
// embedder component, as the docs and `ragd status` promise, and it follows
// the embedder's breaker.
func TestHealthReportsTheEmbedder(t *testing.T) {
	a := newApp(t, embeddedConfig(t))
	defer a.Close()
	hc, ok := a.Health()["embedder"]
	if !ok {
		t.Fatalf("no embedder component in %v", a.Health())
	}
	if h := hc.Health(context.Background()); h.Status != spi.StatusUp {
		t.Fatalf("embedder health %+v, want up", h)
	}
	if _, err := a.Breakers.ForceOpen("embedder"); err != nil {
		t.Fatal(err)
	}
	if h := hc.Health(context.Background()); h.Status != spi.StatusDown {
		t.Fatalf("embedder health with its breaker open %+v, want down", h)
	}
}

// TestDemoIsSeededOnce is issue 12 item 9: `serve --demo` loads the sample
// corpus into a data directory once; a restart neither overwrites the
// user's edits of sample documents nor brings back deleted ones.
func TestDemoIsSeededOnce(t *testing.T) {
	cfg := embeddedConfig(t)
	a := newApp(t, cfg)
	n, err := a.LoadDemo(context.Background())
	if err != nil || n < 20 {
		t.Fatalf("first LoadDemo: %d, %v", n, err)
	}
	edited := spi.Document{ID: "circuit-breaker", Title: "Edited", Text: "the user's own words"}
	if res := a.Pipeline.Upsert(context.Background(), []spi.Document{edited}, ingest.WriteOptions{}); res[0].Status != "ok" {
		t.Fatalf("edit: %+v", res)
	}
	if res := a.Pipeline.Delete(context.Background(), []string{"bm25"}, ingest.WriteOptions{}); res[0].Status != "ok" {
		t.Fatalf("delete: %+v", res)
	}
	a.Close()

	a = newApp(t, cfg)
	defer a.Close()
	if n, err := a.LoadDemo(context.Background()); err != nil || n != 0 {
		t.Fatalf("LoadDemo after a restart: %d, %v; want 0", n, err)
	}
	docs, missing, err := a.Vector.Hydrate(context.Background(), []string{"circuit-breaker", "bm25"})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 || docs[0].Title != "Edited" || len(missing) != 1 || missing[0] != "bm25" {
		t.Fatalf("after restart: docs %+v missing %v; want the edit kept and bm25 still deleted", docs, missing)
	}
}

// Issue 12 item 14: a breaker with an override reports each transition
// once (it was logged and counted twice: by its own hook and the
// registry's).
func TestOverriddenBreakerTransitionsCountOnce(t *testing.T) {
	cfg := embeddedConfig(t)
	cfg.Breakers.Overrides = map[string]config.BreakerSettings{spi.SourceGraph: {FailureThreshold: 2}}
	a := newApp(t, cfg)
	defer a.Close()
	if _, err := a.Breakers.ForceOpen(spi.SourceGraph); err != nil {
		t.Fatal(err)
	}
	mfs, err := a.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "ragd_breaker_transitions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "breaker" && l.GetValue() == spi.SourceGraph {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	if n != 1 {
		t.Fatalf("graph transitions counted %v times, want 1", n)
	}
}
