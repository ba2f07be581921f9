package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/app"
	"github.com/ragd/ragd/backends/graph/embedded"
	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/client"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/internal/apptest"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// graphQuery asks for the graph source alone.
func graphQuery() retriever.Query {
	one := 1.0
	q := retriever.Query{Text: "circuit breaker half-open", Limit: 5, Sources: retriever.Only(spi.SourceGraph)}
	s := q.Sources[spi.SourceGraph]
	s.Weight = one
	q.Sources[spi.SourceGraph] = s
	return q
}

// graphEqualsRecord checks, through the pipeline's comparison, that the
// graph is awake and holds exactly the record's ids at its versions.
func graphEqualsRecord(t *testing.T, a *app.App, docs int) {
	t.Helper()
	rep, err := a.Pipeline.Check(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Stores {
		if s.Store != spi.SourceGraph {
			continue
		}
		if s.Dormant || s.Error != "" || s.Differences() != 0 || s.Documents != docs || s.Applied != rep.Head {
			t.Fatalf("graph against the record: %+v (head %d), want %d documents and no difference", s, rep.Head, docs)
		}
		return
	}
	t.Fatal("no graph in the check")
}

// With rag.yaml's defaults nothing reads the graph: writes do not build
// it (no file, results say dormant, health up and says so), and a check
// leaves it out. The first operator's query that asks for it is told it
// is being built and wakes it; it then answers, holding every document.
func TestGraphIsBuiltOnlyWhenAskedFor(t *testing.T) {
	cfg := defaultConfig(t)
	a := newApp(t, cfg)
	defer a.Close()
	ctx := context.Background()
	res := a.Pipeline.Upsert(ctx, []spi.Document{{ID: "x", Title: "zeppelin", Text: "mooring masts", Entities: []string{"zeppelin"}}},
		ingest.WriteOptions{Wait: 30 * time.Second})
	if res[0].Stores[spi.SourceGraph] != ingest.StoreDormant || res[0].Stores[spi.SourceKeyword] != ingest.StoreCurrent {
		t.Fatalf("write result %+v", res[0])
	}
	if _, err := a.LoadDemo(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "graph", embedded.FileName)); !os.IsNotExist(err) {
		t.Fatalf("the graph file exists before anything read the graph (%v)", err)
	}
	h := a.Health()[spi.SourceGraph].Health(ctx)
	if h.Status != spi.StatusUp || !strings.Contains(h.Detail, "dormant") {
		t.Fatalf("health of the dormant graph: %+v", h)
	}
	rep, err := a.Pipeline.Check(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Stores {
		if (s.Store == spi.SourceGraph) != s.Dormant || s.Repaired != 0 {
			t.Fatalf("check %+v", s)
		}
	}

	// An operator's query (TestOnlyAnOperatorWakesTheGraph: no other's).
	op := spi.AsOperator(ctx)
	_, err = a.Retriever.Retrieve(op, graphQuery())
	if err == nil || !strings.Contains(err.Error(), "graph: error") {
		t.Fatalf("the first graph query: %v, want the graph source failing while it is built", err)
	}
	eventually(t, "the graph to be built and answer", func() bool {
		res, err := a.Retriever.Retrieve(op, graphQuery())
		return err == nil && len(res.Hits) > 0 && res.Hits[0].ID == "circuit-breaker"
	})
	graphEqualsRecord(t, a, 25)
	if a.Pipeline.Dormant(spi.SourceGraph) {
		t.Error("the pipeline still calls the graph dormant")
	}
	res = a.Pipeline.Upsert(ctx, []spi.Document{{ID: "y", Title: "airship", Text: "hangar", Entities: []string{"zeppelin"}}},
		ingest.WriteOptions{Wait: 30 * time.Second})
	if res[0].Stores[spi.SourceGraph] != ingest.StoreCurrent {
		t.Fatalf("write after the graph woke: %+v", res[0])
	}
}

// A rag.yaml that switches the graph on later, after documents were
// written while it was dormant, gets the whole graph: at start the graph
// is not served until it has caught up with the change log (its health
// down with the progress meanwhile), then it holds every document at its
// version, and so after another restart.
func TestGraphSwitchedOnLaterIsComplete(t *testing.T) {
	cfg := defaultConfig(t)
	a := newApp(t, cfg)
	ctx := context.Background()
	if _, err := a.LoadDemo(ctx); err != nil {
		t.Fatal(err)
	}
	a.Pipeline.Delete(ctx, []string{"circuit-breaker"}, ingest.WriteOptions{})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	on := embeddedConfig(t) // the graph source and expansion on
	on.DataDir = cfg.DataDir
	woke, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	restore := app.SetGraphWakeHook(func() {
		close(woke)
		<-release
	})
	// Whatever fails below, no later wake meets this hook, and the one it
	// holds is let go.
	t.Cleanup(func() { restore(); unblock() })
	a = newApp(t, on)
	<-woke
	restore()
	// Queries while it is built fail for the graph, without tripping its
	// breaker (which would keep it out for reset_timeout after the build).
	for range 2 * cfg.Breakers.FailureThreshold {
		_, err := a.Retriever.Retrieve(ctx, graphQuery())
		if err == nil || !strings.Contains(err.Error(), "graph: error (not ready: being built)") {
			t.Fatalf("graph query while the graph is built: %v, want the graph source not ready", err)
		}
	}
	for _, b := range a.Breakers.Snapshot() {
		if b.Name == spi.SourceGraph && b.State != breaker.Closed {
			t.Errorf("the graph's breaker is %v after queries during the build", b.State)
		}
	}
	if h := a.Health()[spi.SourceGraph].Health(ctx); h.Status != spi.StatusDown || !strings.Contains(h.Detail, "being built") {
		t.Errorf("graph health while it is built: %+v", h)
	}
	unblock()
	eventually(t, "the graph to answer", func() bool {
		res, err := a.Retriever.Retrieve(ctx, graphQuery())
		return err == nil && len(res.Hits) > 0
	})
	graphEqualsRecord(t, a, 23)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	a = newApp(t, on)
	defer a.Close()
	eventually(t, "the graph to answer after a restart", func() bool {
		res, err := a.Retriever.Retrieve(ctx, graphQuery())
		return err == nil && len(res.Hits) > 0
	})
	graphEqualsRecord(t, a, 23)
}

// WakeGraph (ragd eval) builds a dormant graph and returns once it serves.
func TestWakeGraphWaitsUntilItServes(t *testing.T) {
	a := newApp(t, defaultConfig(t))
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.LoadDemo(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.WakeGraph(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := a.Retriever.Retrieve(ctx, graphQuery())
	if err != nil || len(res.Hits) == 0 {
		t.Fatalf("graph query after WakeGraph: %v, %+v", err, res)
	}
	graphEqualsRecord(t, a, 24)
}

// Issue 29 item 4: building the dormant graph costs every tenant CPU, heap
// and disk, so it is an operator's decision: rag.yaml, `ragd eval`, or a
// query with an admin key bound to no tenant. A tenant's query (or any
// other key's) asking for the graph leaves it dormant, and its answer
// says who may wake it.
func TestOnlyAnOperatorWakesTheGraph(t *testing.T) {
	const tenantAdmin = "acme-admin-key-0123456789"
	srv := apptest.Start(t, func(c *config.Config) {
		apptest.WithAuth(c)
		c.Auth.Keys = append(c.Auth.Keys, config.KeyConfig{Name: "acme-admin", Key: tenantAdmin, Role: config.RoleAdmin, Tenant: apptest.Tenant})
		def := config.Default()
		c.Retriever.Sources, c.Retriever.Expand = def.Retriever.Sources, def.Retriever.Expand // the graph dormant
	})
	ctx := context.Background()
	dormant := func() bool {
		h := srv.App.Health()[spi.SourceGraph].Health(ctx)
		return h.Status == spi.StatusUp && strings.Contains(h.Detail, "dormant")
	}
	if !dormant() {
		t.Fatal("the graph is not dormant at start")
	}
	ask := func(key string) retriever.SourceStatus {
		t.Helper()
		c, err := client.New(client.Config{BaseURL: srv.URL, APIKey: key})
		if err != nil {
			t.Fatal(err)
		}
		q := retriever.Query{Text: "circuit breaker", Sources: map[string]retriever.SourceOptions{spi.SourceGraph: {Enabled: new(true)}}}
		res, err := c.Query(ctx, q)
		if err != nil {
			t.Fatalf("query with %s: %v", key, err)
		}
		return res.Sources[spi.SourceGraph]
	}
	for _, key := range []string{apptest.TenantKey, tenantAdmin, apptest.QueryKey} {
		st := ask(key)
		if st.Status != retriever.StatusError || !strings.Contains(st.Error, "operator") {
			t.Errorf("graph for %s: %+v, want an error saying an operator wakes it", key, st)
		}
		if !dormant() {
			t.Fatalf("a query with %s woke the graph", key)
		}
	}
	ask(apptest.AdminKey)
	if dormant() {
		t.Fatal("the admin's query left the graph dormant")
	}
}
