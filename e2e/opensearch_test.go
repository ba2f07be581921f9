package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/testenv"
)

// openSearchConfig renders a rag.yaml with the keyword index on OpenSearch
// at url under prefix, new indexes with that many replicas (derived from
// the embedded vector store's change log), breakers
// that trip after two failures and probe every second, and a keyword
// deadline short enough that a hung node costs a query little.
func openSearchConfig(dataDir, url, prefix string, replicas int) string {
	q := strconv.Quote
	return `data_dir: ` + q(dataDir) + `
server:
  listen: 127.0.0.1:0
  request_timeout_s: 60
  shutdown_grace_s: 60
  max_in_flight: 512
backends:
  vector: {kind: embedded}
  keyword:
    kind: opensearch
    hosts: [` + q(url) + `]
    index_prefix: ` + q(prefix) + `
    replicas: ` + strconv.Itoa(replicas) + `
    refresh_interval_ms: 200
    connect_timeout_ms: 500
  graph: {kind: none}
embedder:
  kind: hashing
  dimension: 384
retriever:
  budget_ms: 20000
  sources:
    vector:  {timeout_ms: 10000}
    keyword: {timeout_ms: 1500}
breakers:
  enabled: true
  failure_threshold: 2
  reset_timeout_s: 1
  half_open_max_calls: 1
  success_threshold: 1
  warmup_timeout_s: 10
auth:
  enabled: true
  keys:
    - {name: e2e-admin, key: ` + q(adminKey) + `, role: admin}
    - {name: e2e-query, key: ` + q(queryKey) + `, role: query}
log:
  level: info
`
}

// TestOpenSearchFaults serves hybrid queries with the keyword index on a
// dedicated OpenSearch node, under eight concurrent clients throughout,
// while the node is hung (SIGSTOP), killed (SIGKILL) and restarted (a
// graceful stop and start): each outage trips the keyword breaker (a
// restart may be too short to), the recovery probes close it again once
// the node answers, and every answer is a 200 from the healthy source.
func TestOpenSearchFaults(t *testing.T) {
	t.Parallel()
	ds := loadCranfield(t)
	node := testenv.DedicatedOpenSearch(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "rag.yaml")
	if err := os.WriteFile(cfgPath, []byte(openSearchConfig(filepath.Join(dir, "data"), node.URL, "e2e", 0)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &stack{Corpus: ds, Accepted: map[string]bool{}, cfgPath: cfgPath}
	s.Ragd = startRagd(t, cfgPath)
	s.Admin = newClient(s.Ragd.addr, adminKey)
	s.Query = newClient(s.Ragd.addr, queryKey)
	t.Cleanup(func() { s.Admin.close(); s.Query.close() })
	s.ingestCranfield(t, 200)
	// A fresh node's first searches (JIT, caches) can outlast the keyword
	// source's 1.5 s timeout on a loaded machine: query until keyword
	// answers, each answer a 200, for at most two minutes.
	for tries, begin := 1, time.Now(); ; tries++ {
		st, res, body, err := s.query(context.Background(), s.queryText(0))
		if err != nil || st != http.StatusOK {
			t.Fatalf("first queries: status %d, %v: %.300s", st, err, body)
		}
		if res.Sources["keyword"].Status == "ok" {
			break
		}
		if time.Since(begin) > 2*time.Minute {
			t.Fatalf("keyword did not answer a query within 2 minutes (%d queries), last %+v", tries, res.Sources["keyword"])
		}
		time.Sleep(500 * time.Millisecond)
	}
	if _, h := s.health(t); h.Components["keyword"].Status != "up" {
		t.Fatalf("keyword health %+v, want up with the cluster's detail", h.Components["keyword"])
	}

	const clients = 8
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newClient(s.Ragd.addr, queryKey)
	c.hc.Transport.(*http.Transport).MaxIdleConnsPerHost = clients
	defer c.close()
	var (
		mu      sync.Mutex
		total   int
		bad     = map[string]int{}
		keyword = map[string]int{}
	)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := i * 31; ctx.Err() == nil; n++ {
				var res queryResult
				st, _, err := c.call(ctx, http.MethodPost, "/v1/query", queryRequest{Text: s.queryText(n), Limit: 10}, &res)
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				total++
				switch {
				case err != nil:
					bad["transport: "+firstLine(err.Error())]++
				case st != http.StatusOK:
					bad[fmt.Sprintf("status %d", st)]++
				default:
					keyword[res.Sources["keyword"].Status]++
				}
				mu.Unlock()
			}
		}()
	}

	// waitBreaker polls the keyword breaker until cond holds.
	waitBreaker := func(what string, limit time.Duration, cond func(breakerSnapshot) bool) time.Duration {
		t.Helper()
		begin := time.Now()
		for {
			b := s.breaker(t, "keyword")
			if cond(b) {
				return time.Since(begin)
			}
			if time.Since(begin) > limit {
				cancel()
				wg.Wait()
				t.Fatalf("%s: the keyword breaker is %+v after %v", what, b, limit)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	isOpen := func(b breakerSnapshot) bool { return b.State == "open" || b.State == "half_open" }
	// recovered: closed, and a query answered with the keyword source.
	recovered := func(b breakerSnapshot) bool {
		if b.State != "closed" {
			return false
		}
		_, res, _, err := s.query(context.Background(), s.queryText(7))
		return err == nil && res.Sources["keyword"].Status == "ok"
	}
	opened := func() uint64 { return s.breaker(t, "keyword").OpenedTotal }

	time.Sleep(2 * time.Second) // load before the first fault
	bg := context.Background()
	faults := []struct {
		name        string
		fault, heal func() error
		mustTrip    bool
	}{
		{"hung (SIGSTOP)", func() error { return node.Pause(bg) }, func() error { return node.Unpause(bg) }, true},
		{"killed (SIGKILL)", func() error { return node.Kill(bg) }, func() error { return node.Start(bg) }, true},
		{"restarted", func() error { return node.Stop(bg) }, func() error { return node.Start(bg) }, false},
	}
	for _, f := range faults {
		before := opened()
		began := time.Now()
		if err := f.fault(); err != nil {
			cancel()
			wg.Wait()
			t.Fatalf("%s: %v", f.name, err)
		}
		tripped := "not tripped"
		if f.mustTrip {
			took := waitBreaker(f.name+": trip", time.Minute, isOpen)
			tripped = fmt.Sprintf("tripped in %v", took.Round(time.Millisecond))
		}
		if err := f.heal(); err != nil {
			cancel()
			wg.Wait()
			t.Fatalf("%s: heal: %v", f.name, err)
		}
		healed := time.Now()
		waitBreaker(f.name+": recover", 3*time.Minute, recovered)
		if opened() > before && !f.mustTrip {
			tripped = "tripped"
		}
		t.Logf("%s: breaker %s; recovered %v after the node was back (%v in all)", f.name, tripped,
			time.Since(healed).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
		time.Sleep(time.Second)
	}
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d queries from %d clients; keyword source statuses %v", total, clients, keyword)
	if len(bad) > 0 {
		t.Errorf("of %d queries, not answered 200: %v", total, bad)
	}
	if keyword["circuit_open"] == 0 {
		t.Errorf("no query was answered with the keyword breaker open: %v", keyword)
	}
}
