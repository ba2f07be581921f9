package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ragd/ragd/internal/faultproxy"
	"github.com/ragd/ragd/internal/testenv"
)

// serverRagd writes a server-mode rag.yaml under a new directory and
// starts ragd on it.
func serverRagd(t *testing.T, pgDSN string, neo testenv.Neo4jConn) (*ragdProc, *client) {
	t.Helper()
	return serverRagdWith(t, pgDSN, neo, func(cfg string) string { return cfg })
}

// serverRagdWith is serverRagd with the configuration edited by edit.
func serverRagdWith(t *testing.T, pgDSN string, neo testenv.Neo4jConn, edit func(string) string) (*ragdProc, *client) {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "rag.yaml")
	if err := os.WriteFile(cfgPath, []byte(edit(crashConfig(filepath.Join(dir, "data"), pgDSN, &neo))), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startRagd(t, cfgPath)
	c := newClient(p.addr, "")
	t.Cleanup(c.close)
	return p, c
}

// neo4jViaProxy returns neo reached through a fault proxy, closed when
// the test ends.
func neo4jViaProxy(t *testing.T, neo testenv.Neo4jConn) (testenv.Neo4jConn, *faultproxy.Proxy) {
	t.Helper()
	u, err := url.Parse(neo.URI)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	neo.URI = u.Scheme + "://" + proxy.Addr()
	return neo, proxy
}

func upsert(t *testing.T, c *client, query string, docs ...document) batchResponse {
	t.Helper()
	var resp batchResponse
	st, body, err := c.call(context.Background(), http.MethodPost, "/v1/documents"+query, upsertRequest{Documents: docs}, &resp)
	if err != nil || st != http.StatusOK || resp.OK != len(docs) {
		t.Fatalf("POST /v1/documents%s: status %d, %v: %.300s", query, st, err, body)
	}
	return resp
}

// checkStores asks the server to compare its derived stores with the
// record and fails on any difference.
func checkStores(t *testing.T, c *client, who string) {
	t.Helper()
	var rep checkReport
	st, body, err := c.call(context.Background(), http.MethodPost, "/v1/status/check", nil, &rep)
	if err != nil || st != http.StatusOK || len(rep.Stores) != 2 {
		t.Fatalf("%s: check: status %d, %v: %.300s", who, st, err, body)
	}
	for _, s := range rep.Stores {
		if s.Error != "" || s.Missing+s.Stale+s.Extra > 0 {
			t.Errorf("%s: %s differs from the record: %+v", who, s.Store, s)
		}
	}
}

// TestHungGraphDoesNotHoldWrites: with Neo4j hung (its connections
// blackholed, as a SIGSTOPped server), a write answers as soon as
// PostgreSQL committed it, says the graph is pending, and the graph
// catches up once Neo4j answers again.
//
// How soon: Neo4j's connect timeout (dialling and taking a pooled
// connection) is 30 s here, and the request's deadline 60 s, so a write
// path that waited on the hung Neo4j in any way would answer no sooner
// than 30 s after its commit; one that does not answers within an HTTP
// response's time. The bound of 5 s between the two leaves a loaded
// machine its pauses.
func TestHungGraphDoesNotHoldWrites(t *testing.T) {
	startBuild()
	t.Parallel()
	dsn := testenv.Postgres(t)
	neo := testenv.Neo4j(t)
	viaProxy, proxy := neo4jViaProxy(t, neo)
	slowConnect := regexp.MustCompile(`(?m)^(  graph: \{kind: neo4j, .*connect_timeout_ms: )2000\}$`)
	_, c := serverRagdWith(t, dsn, viaProxy, func(cfg string) string {
		edited := slowConnect.ReplaceAllString(cfg, "${1}30000}")
		if edited == cfg {
			t.Fatalf("no Neo4j connect timeout to raise in:\n%s", cfg)
		}
		return edited
	})
	tag := randomTag(t)
	upsert(t, c, "?wait=30s", document{ID: tag + "-before", Tenant: tag, Text: "written before the hang", Entities: []string{"hang test"}})

	proxy.Blackhole()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var worst time.Duration
	for i := range 5 {
		doc := document{ID: fmt.Sprintf("%s-hung-%d", tag, i), Tenant: tag, Text: "written while Neo4j hangs", Entities: []string{"hang test"}}
		resp := upsert(t, c, "", doc)
		answered := time.Now()
		r := resp.Results[0]
		if r.Stores["graph"] != "pending" || r.Stores["vector"] != "ok" {
			t.Fatalf("write %d while Neo4j hangs: stores %v, want graph pending", i, r.Stores)
		}
		var committed time.Time
		if err := conn.QueryRow(context.Background(), `SELECT at FROM ragd_documents_log WHERE seq = $1`, int64(r.Version)).Scan(&committed); err != nil {
			t.Fatal(err)
		}
		gap := answered.Sub(committed)
		worst = max(worst, gap)
		// The write path does not touch Neo4j at all: the answer follows
		// the commit by the time one HTTP response takes (see above).
		if gap > 5*time.Second {
			t.Errorf("write %d answered %v after PostgreSQL committed it, want under 5 s (waiting on Neo4j takes 30 s)", i, gap)
		}
	}
	t.Logf("5 writes with Neo4j hung: answered at most %v after the record commit", worst.Round(time.Millisecond))

	// A bounded wait answers after the wait, naming the store still pending.
	begin := time.Now()
	resp := upsert(t, c, "?wait=1s", document{ID: tag + "-waited", Tenant: tag, Text: "waited for", Entities: []string{"hang test"}})
	if r := resp.Results[0]; r.Stores["graph"] != "pending" || r.Stores["keyword"] != "current" {
		t.Fatalf("write with wait=1s while Neo4j hangs: stores %v, want keyword current and graph pending", r.Stores)
	}
	if took := time.Since(begin); took > 30*time.Second {
		t.Fatalf("a write with wait=1s took %v", took)
	}

	proxy.Pass()
	restart := time.Now()
	took := waitConverged(t, c, restart, 3*time.Minute)
	t.Logf("the graph applied the writes missed during the hang %v after Neo4j answered again", took.Round(time.Millisecond))
	checkStores(t, c, "ragd")
	cleanupGraphIDs(t, neo, tag+"-before", tag+"-hung-0", tag+"-hung-1", tag+"-hung-2", tag+"-hung-3", tag+"-hung-4", tag+"-waited")
}

// TestReplicasConverge runs three ragd replicas against one PostgreSQL and
// one Neo4j, each with its own bleve index: a write through one is found by
// keyword search on the others, and after concurrent writes through all
// three every replica's stores equal the record.
func TestReplicasConverge(t *testing.T) {
	startBuild()
	t.Parallel()
	dsn := testenv.Postgres(t)
	neo := testenv.Neo4j(t)
	var cs []*client
	for range 3 {
		_, c := serverRagd(t, dsn, neo)
		cs = append(cs, c)
	}
	tag := randomTag(t)
	var ids []string

	// A write through replica 0 reaches the others' keyword indexes.
	var worst time.Duration
	for i := range 5 {
		word := fmt.Sprintf("zeppelinx%sx%d", tag, i)
		id := fmt.Sprintf("%s-probe-%d", tag, i)
		ids = append(ids, id)
		upsert(t, cs[i%3], "", document{ID: id, Tenant: tag, Text: "the " + word + " mooring mast"})
		acked := time.Now()
		for r, c := range cs {
			for {
				var res queryResult
				off := false
				st, body, err := c.call(context.Background(), http.MethodPost, "/v1/query", queryRequest{Text: word, Limit: 1,
					Sources: map[string]sourceOptions{"vector": {Enabled: &off}, "graph": {Enabled: &off}}}, &res)
				if err != nil || st != http.StatusOK {
					t.Fatalf("keyword query on replica %d: status %d, %v: %.300s", r, st, err, body)
				}
				if len(res.Hits) > 0 && res.Hits[0].ID == id {
					break
				}
				if time.Since(acked) > 30*time.Second {
					t.Fatalf("replica %d did not find a write made through replica %d within 30 s", r, i%3)
				}
				time.Sleep(20 * time.Millisecond)
			}
			worst = max(worst, time.Since(acked))
		}
	}
	t.Logf("writes through one replica found by keyword search on all three within %v", worst.Round(time.Millisecond))

	// Concurrent writes through every replica, some to the same ids.
	var wg sync.WaitGroup
	var mu sync.Mutex
	for r, c := range cs {
		wg.Go(func() {
			for n := range 40 {
				id := fmt.Sprintf("%s-shared-%d", tag, n%10)
				if n%7 == 3 {
					var resp batchResponse
					if st, body, err := c.call(context.Background(), http.MethodPost, "/v1/documents/delete", deleteRequest{IDs: []string{id}}, &resp); err != nil || st != http.StatusOK {
						t.Errorf("replica %d delete: status %d, %v: %.300s", r, st, err, body)
					}
					continue
				}
				upsert(t, c, "", document{ID: id, Tenant: tag, Text: fmt.Sprintf("replica %d write %d", r, n), Entities: []string{fmt.Sprintf("topic %d", n%4)}})
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for r, c := range cs {
		took := waitConverged(t, c, time.Now(), convergeBound)
		t.Logf("replica %d applied the log's head %v after the writes ended", r, took.Round(time.Millisecond))
	}
	for r, c := range cs {
		checkStores(t, c, fmt.Sprintf("replica %d", r))
	}
	slices.Sort(ids)
	cleanupGraphIDs(t, neo, slices.Compact(ids)...)
}
