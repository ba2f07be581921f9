package app_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/app"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// openSearchConfig is defaultConfig with the keyword index on OpenSearch
// at hosts, under a prefix of the test's own.
func openSearchConfig(t *testing.T, host string) *config.Config {
	t.Helper()
	var b [5]byte
	_, _ = rand.Read(b[:])
	prefix := "app" + hex.EncodeToString(b[:])
	c := defaultConfig(t)
	c.Backends.Graph.Kind = config.KindNone
	c.Backends.Keyword = config.KeywordConfig{Kind: config.KindOpenSearch, Hosts: []string{host}, IndexPrefix: prefix,
		TitleBoost: 1, RefreshIntervalMS: 200, ConnectTimeoutMS: 500}
	t.Cleanup(func() {
		for _, p := range []string{"/" + prefix + "-*", "/_index_template/" + prefix + "-tenants"} {
			req, _ := http.NewRequest(http.MethodDelete, host+p, nil)
			if res, err := http.DefaultClient.Do(req); err == nil {
				res.Body.Close()
			}
		}
	})
	return c
}

// keyword.kind opensearch: writes reach the cluster through the change
// log, queries get keyword answers from it, and health shows the cluster.
func TestOpenSearchKeywordWiring(t *testing.T) {
	cfg := openSearchConfig(t, testenv.OpenSearch(t))
	// The wiring is the subject, not the latency: a loaded test machine
	// (the race detector, other packages' tests) has taken over the 1 s
	// default for the first search of a new index.
	cfg.Retriever.BudgetMS = 30000
	cfg.Retriever.Sources[spi.SourceKeyword] = config.SourceConfig{TimeoutMS: 30000}
	a := newApp(t, cfg)
	defer a.Close()
	ctx := context.Background()
	res := a.Pipeline.Upsert(ctx, []spi.Document{
		{ID: "d1", Tenant: "acme", Title: "zeppelin mooring", Text: "masts and winches"},
		{ID: "d2", Tenant: "acme", Title: "balloon", Text: "hydrogen envelope"},
	}, ingest.WriteOptions{Wait: 30 * time.Second})
	for _, r := range res {
		if r.Status != "ok" || r.Stores[spi.SourceKeyword] != "current" {
			t.Fatalf("upsert: %+v, want ok and the keyword store current", r)
		}
	}
	got := top(t, a, retriever.Query{Text: "zeppelin mooring", Limit: 3, Tenant: "acme", Sources: retriever.Only(spi.SourceKeyword)})
	if len(got.Hits) != 1 || got.Hits[0].ID != "d1" || got.Hits[0].Document == nil || got.Hits[0].Document.Title != "zeppelin mooring" {
		t.Fatalf("keyword answer: %+v", got)
	}
	h := a.Health()[spi.SourceKeyword].Health(ctx)
	if h.Status != spi.StatusUp || !strings.Contains(h.Detail, "opensearch green") || !strings.Contains(h.Detail, "2 documents") {
		t.Fatalf("keyword health %+v, want up with the cluster's detail", h)
	}
	if r := a.Pipeline.Delete(ctx, []string{"d1"}, ingest.WriteOptions{Wait: 30 * time.Second}); r[0].Status != "ok" {
		t.Fatalf("delete: %+v", r)
	}
	got = top(t, a, retriever.Query{Text: "zeppelin mooring", Limit: 3, Sources: retriever.Only(spi.SourceKeyword)})
	if len(got.Hits) != 0 {
		t.Fatalf("after the delete: %+v", got.Hits)
	}
}

// A cluster down at start does not stop ragd: it answers from the vector
// store, reports the keyword store down, and connects once it can.
func TestOpenSearchDownAtStart(t *testing.T) {
	cfg := openSearchConfig(t, "http://"+deadAddr(t))
	a := newApp(t, cfg)
	defer a.Close()
	ctx := context.Background()
	if r := a.Pipeline.Upsert(ctx, []spi.Document{{ID: "d1", Title: "zeppelin mooring", Text: "masts"}}, ingest.WriteOptions{}); r[0].Status != "ok" {
		t.Fatalf("upsert with the keyword cluster down: %+v", r)
	}
	res := top(t, a, retriever.Query{Text: "zeppelin mooring", Limit: 3})
	if len(res.Hits) != 1 || res.Sources[spi.SourceKeyword].Status == retriever.StatusOK {
		t.Fatalf("query with the keyword cluster down: %+v", res)
	}
	if h := a.Health()[spi.SourceKeyword].Health(ctx); h.Status != spi.StatusDown {
		t.Fatalf("keyword health %+v, want down", h)
	}
}

// ragd check --repair restores what the cluster lost behind ragd's back:
// a tenant's index deleted (an operator's mistake, a lost shard), while
// the id records still say the documents are there.
func TestOpenSearchCheckRepairs(t *testing.T) {
	host := testenv.OpenSearch(t)
	cfg := openSearchConfig(t, host)
	a := newApp(t, cfg)
	defer a.Close()
	ctx := context.Background()
	docs := []spi.Document{{ID: "d1", Tenant: "lost", Title: "zeppelin mooring", Text: "masts"}, {ID: "d2", Tenant: "kept", Title: "balloon", Text: "envelope"}}
	if r := a.Pipeline.Upsert(ctx, docs, ingest.WriteOptions{Wait: 30 * time.Second}); r[0].Stores[spi.SourceKeyword] != "current" {
		t.Fatalf("upsert: %+v", r)
	}
	// An apply attempt that ran out of its deadline on a loaded machine
	// (and was retried) may still be in the cluster: its write, landing
	// after the delete, would create the index again with d1 in it (a CI
	// run saw the check find both documents). So the cluster's writes
	// are waited out before the index is deleted.
	waitWritesDone(t, host, cfg.Backends.Keyword.IndexPrefix)
	req, _ := http.NewRequest(http.MethodDelete, host+"/"+cfg.Backends.Keyword.IndexPrefix+"-t-lost-*", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("deleting tenant lost's index behind ragd's back: %v %v", res, err)
	}
	res.Body.Close()
	only := retriever.Query{Text: "zeppelin mooring", Limit: 3, Sources: retriever.Only(spi.SourceKeyword)}
	if got := top(t, a, only); len(got.Hits) != 0 {
		t.Fatalf("the lost document still answers: %+v", got.Hits)
	}
	rep, err := a.Pipeline.Check(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range rep.Stores {
		if s.Store == spi.SourceKeyword {
			found = true
			if s.Missing != 1 || s.Repaired != 1 || s.Remaining != 0 {
				t.Fatalf("check of the keyword store: %+v, want 1 missing, repaired", s)
			}
		}
	}
	if !found {
		t.Fatalf("the check did not compare the keyword store: %+v", rep)
	}
	if got := top(t, a, only); len(got.Hits) != 1 || got.Hits[0].ID != "d1" {
		t.Fatalf("after the repair: %+v", got.Hits)
	}
}

// waitWritesDone waits until the cluster at host runs no write task (a
// bulk or index request) naming an index of prefix, for at most 30 s.
func waitWritesDone(t *testing.T, host, prefix string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(host + "/_tasks?actions=indices:data/write/*&detailed=true")
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Nodes map[string]struct {
				Tasks map[string]struct {
					Description string `json:"description"`
				} `json:"tasks"`
			} `json:"nodes"`
		}
		err = json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, n := range body.Nodes {
			for _, task := range n.Tasks {
				if strings.Contains(task.Description, prefix) {
					running++
				}
			}
		}
		if running == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster still runs %d write tasks after 30 s", running)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Two replicas on one PostgreSQL share the cluster as they share Neo4j:
// the replica holding the keyword store's apply lease applies each write,
// the other follows the cluster's checkpoint, and both see the writes
// current (before, every replica applied every write again).
func TestOpenSearchAppliedOncePerWrite(t *testing.T) {
	host := testenv.OpenSearch(t)
	dsn := testenv.Postgres(t)
	cfgA := openSearchConfig(t, host)
	cfgA.Backends.Vector = config.VectorConfig{Kind: config.KindPgvector, DSN: dsn, Table: "ragd_documents", Distance: "cosine", ConnectTimeoutMS: 2000, MaxConns: 4, EFSearch: 40}
	// No check at start: a check applies what it finds behind on its own
	// (ingest's tailer.check), lease or not, so a check racing A's writes
	// in B would apply them a second time (harmless: external versions).
	cfgA.Ingest.CheckAtStart = false
	cfgB := *cfgA
	cfgB.DataDir = t.TempDir()
	a := newApp(t, cfgA)
	defer a.Close()
	b := newApp(t, &cfgB)
	defer b.Close()
	ctx := context.Background()
	docs := make([]spi.Document, 40)
	for i := range docs {
		docs[i] = spi.Document{ID: fmt.Sprintf("d%02d", i), Tenant: "acme", Title: "zeppelin mooring", Text: fmt.Sprintf("mast %d", i)}
	}
	for _, r := range a.Pipeline.Upsert(ctx, docs, ingest.WriteOptions{Wait: 60 * time.Second}) {
		if r.Status != "ok" || r.Stores[spi.SourceKeyword] != "current" {
			t.Fatalf("upsert through A: %+v, want ok and the keyword store current", r)
		}
	}
	eventually(t, "B to see the keyword store current", func() bool {
		st, err := b.Pipeline.Status(ctx)
		return err == nil && len(st.Stores) == 1 && st.Stores[0].Behind == 0
	})
	applied := func(x *app.App) float64 {
		mfs, err := x.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "ragd_log_applied_entries_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "store" && l.GetValue() == spi.SourceKeyword {
						return m.GetCounter().GetValue()
					}
				}
			}
		}
		return 0
	}
	na, nb := applied(a), applied(b)
	if na+nb != float64(len(docs)) || min(na, nb) != 0 {
		t.Fatalf("keyword entries applied: A %v, B %v; want all %d by one replica", na, nb, len(docs))
	}
	got := top(t, b, retriever.Query{Text: "zeppelin mooring", Limit: 50, Tenant: "acme", Sources: retriever.Only(spi.SourceKeyword)})
	if len(got.Hits) != len(docs) {
		t.Fatalf("B's keyword answer: %d hits, want %d", len(got.Hits), len(docs))
	}
}
