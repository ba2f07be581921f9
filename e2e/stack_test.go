package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/eval"
	"github.com/ragd/ragd/internal/demo"
	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/spi"
)

// API keys of the generated configuration (auth is on, as in production).
const (
	adminKey = "e2e-admin-key-0123456789abcdef"
	queryKey = "e2e-query-key-0123456789abcdef"
)

// stack is ragd serving on dedicated PostgreSQL and Neo4j servers.
type stack struct {
	PG    *testenv.Server
	Neo4j *testenv.Neo4jServer
	Ragd  *ragdProc
	// Admin holds the admin key (ingest, force-close); Query the query key.
	Admin, Query *client
	Corpus       *eval.Dataset
	// Accepted are the ids the system of record acknowledged (status ok
	// or partial).
	Accepted map[string]bool
	cfgPath  string
}

// loadCranfield reads the Cranfield collection. When it is not there (a
// clone away from the shared data), the bundled sample corpus stands in, so
// the outage scenarios still run against the real servers: each sample
// document is the relevant answer to its own title and to the start of its
// text.
func loadCranfield(t *testing.T) *eval.Dataset {
	t.Helper()
	dir := os.Getenv(envCranfield)
	if dir == "" {
		root, err := testenv.ModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "..", "shared", "data", "cranfield")
	}
	if _, err := os.Stat(filepath.Join(dir, "corpus.jsonl")); err != nil {
		t.Logf("e2e: Cranfield not found at %s (set %s to a BEIR Cranfield directory); using the bundled sample corpus", dir, envCranfield)
		return sampleDataset(t)
	}
	ds, err := eval.LoadBEIR(dir, "test")
	if err != nil {
		t.Fatalf("load Cranfield: %v", err)
	}
	// Cranfield 471 and 995 have neither title nor text; ingest rightly
	// refuses them (empty_document), so they are left out here.
	ds.Corpus = slices.DeleteFunc(ds.Corpus, func(d spi.Document) bool { return d.Title == "" && d.Text == "" })
	return ds
}

// stackConfig renders the rag.yaml the tests run: pgvector + bleve + Neo4j,
// auth on, breakers that trip after two failures and admit a trial after
// one second. The per-source timeouts are long: on a loaded two-core machine
// (load average 30) a Neo4j query took more than 2 s often enough to open
// the graph breaker with every server up, and the outages here are stopped
// servers, which fail at once, not hung ones. The shutdown grace is a cap,
// long for the same reason: ragd exits as soon as its requests are done.
func stackConfig(dataDir, pgDSN string, neo testenv.Neo4jConn) string {
	q := strconv.Quote
	return `data_dir: ` + q(dataDir) + `
server:
  listen: 127.0.0.1:0
  request_timeout_s: 60
  shutdown_grace_s: 120
  max_in_flight: 512
backends:
  vector:
    kind: pgvector
    dsn: ` + q(pgDSN) + `
    connect_timeout_ms: 1000
  keyword:
    kind: bleve
    dir: keyword
  graph:
    kind: neo4j
    uri: ` + q(neo.URI) + `
    user: ` + q(neo.User) + `
    password: ` + q(neo.Password) + `
    connect_timeout_ms: 1000
embedder:
  kind: hashing
  dimension: 384
retriever:
  budget_ms: 20000
  sources:
    vector:  {timeout_ms: 10000}
    keyword: {timeout_ms: 10000}
    graph:   {weight: 1, timeout_ms: 10000}
  expand:
    enabled: true
    timeout_ms: 5000
breakers:
  enabled: true
  failure_threshold: 2
  reset_timeout_s: 1
  half_open_max_calls: 1
  success_threshold: 1
ingest:
  max_docs_per_request: 2000
auth:
  enabled: true
  keys:
    - {name: e2e-admin, key: ` + q(adminKey) + `, role: admin}
    - {name: e2e-query, key: ` + q(queryKey) + `, role: query}
log:
  level: info
`
}

// startStack starts dedicated PostgreSQL and Neo4j servers and ragd on
// them, and ingests Cranfield. It skips when Cranfield or the services are
// missing (fails for missing services when RAG_REQUIRE_INTEGRATION=1).
func startStack(t *testing.T) *stack {
	t.Helper()
	ds := loadCranfield(t)
	begin := time.Now()
	pg := testenv.DedicatedPostgres(t)
	startBuild() // compile ragd while Neo4j starts
	neo := testenv.DedicatedNeo4j(t)
	t.Logf("dedicated PostgreSQL and Neo4j up in %v", time.Since(begin).Round(time.Millisecond))

	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "rag.yaml")
	if err := os.WriteFile(cfgPath, []byte(stackConfig(filepath.Join(dir, "data"), pg.DSN, neo.Neo4jConn)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &stack{PG: pg, Neo4j: neo, Corpus: ds, Accepted: map[string]bool{}, cfgPath: cfgPath}
	start := time.Now()
	s.Ragd = startRagd(t, cfgPath)
	t.Logf("ragd ready on %s in %v", s.Ragd.addr, time.Since(start).Round(time.Millisecond))
	s.Admin = newClient(s.Ragd.addr, adminKey)
	s.Query = newClient(s.Ragd.addr, queryKey)
	t.Cleanup(func() { s.Admin.close(); s.Query.close() })

	start = time.Now()
	s.ingestCranfield(t, 200)
	t.Logf("ingested %d Cranfield documents over HTTP in %v", len(ds.Corpus), time.Since(start).Round(time.Millisecond))
	return s
}

// ingestCranfield posts the corpus in batches and requires every document
// to be accepted by every store.
func (s *stack) ingestCranfield(t *testing.T, batch int) {
	t.Helper()
	for i := 0; i < len(s.Corpus.Corpus); i += batch {
		docs := make([]document, 0, batch)
		for _, d := range s.Corpus.Corpus[i:min(i+batch, len(s.Corpus.Corpus))] {
			docs = append(docs, document{ID: d.ID, Title: d.Title, Text: d.Text})
		}
		var resp batchResponse
		// Queries follow at once: wait for the derived stores too.
		st, body, err := s.Admin.call(context.Background(), http.MethodPost, "/v1/documents?wait=60s", upsertRequest{Documents: docs}, &resp)
		if err != nil || st != http.StatusOK {
			t.Fatalf("POST /v1/documents (batch at %d): status %d, %v: %.500s", i, st, err, body)
		}
		if resp.Total != len(docs) || resp.OK != len(docs) || resp.Pending != 0 {
			t.Fatalf("batch at %d: total %d ok %d pending %d failed %d, want all %d ok and applied: %.500s",
				i, resp.Total, resp.OK, resp.Pending, resp.Failed, len(docs), body)
		}
		for _, r := range resp.Results {
			s.Accepted[r.ID] = true
		}
	}
}

// query runs one query with the query key.
func (s *stack) query(ctx context.Context, text string) (int, queryResult, []byte, error) {
	var res queryResult
	st, body, err := s.Query.call(ctx, http.MethodPost, "/v1/query", queryRequest{Text: text, Limit: 10}, &res)
	return st, res, body, err
}

// sampleDataset turns the bundled sample corpus into a small test
// collection.
func sampleDataset(t *testing.T) *eval.Dataset {
	t.Helper()
	docs, err := demo.Documents()
	if err != nil {
		t.Fatal(err)
	}
	ds := &eval.Dataset{Name: "sample", Corpus: docs, Qrels: map[string]eval.Judgments{}}
	for _, d := range docs {
		words := strings.Fields(d.Text)
		for _, q := range []eval.Query{
			{ID: "title-" + d.ID, Text: d.Title},
			{ID: "text-" + d.ID, Text: strings.Join(words[:min(8, len(words))], " ")},
		} {
			ds.Queries = append(ds.Queries, q)
			ds.Qrels[q.ID] = eval.Judgments{d.ID: 1}
		}
	}
	return ds
}

// queryText returns the i-th Cranfield query, cycling.
func (s *stack) queryText(i int) string {
	qs := s.Corpus.Queries
	return qs[i%len(qs)].Text
}

// health reads GET /v1/status/health (200 or 503 both decode).
func (s *stack) health(t *testing.T) (int, healthResponse) {
	t.Helper()
	var h healthResponse
	st, body, err := s.Query.call(context.Background(), http.MethodGet, "/v1/status/health", nil, nil)
	if err != nil {
		t.Fatalf("GET /v1/status/health: %v", err)
	}
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatalf("GET /v1/status/health: status %d: %v: %.300s", st, err, body)
	}
	return st, h
}

// breaker returns one breaker's snapshot from GET /v1/status/breakers.
func (s *stack) breaker(t *testing.T, name string) breakerSnapshot {
	t.Helper()
	var resp breakersResponse
	st, body, err := s.Query.call(context.Background(), http.MethodGet, "/v1/status/breakers", nil, &resp)
	if err != nil || st != http.StatusOK {
		t.Fatalf("GET /v1/status/breakers: status %d, %v: %.300s", st, err, body)
	}
	if resp.Total != len(resp.Breakers) {
		t.Fatalf("GET /v1/status/breakers: total %d but %d breakers", resp.Total, len(resp.Breakers))
	}
	for _, b := range resp.Breakers {
		if b.Name == name {
			return b
		}
	}
	t.Fatalf("GET /v1/status/breakers: no breaker %q in %+v", name, resp.Breakers)
	return breakerSnapshot{}
}

// metric returns the value of the first /metrics sample whose line starts
// with prefix (a metric name with its labels), or -1 when absent.
func (s *stack) metric(t *testing.T, prefix string) float64 {
	t.Helper()
	st, body, err := s.Query.call(context.Background(), http.MethodGet, "/metrics", nil, nil)
	if err != nil || st != http.StatusOK {
		t.Fatalf("GET /metrics: status %d, %v", st, err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok && strings.HasPrefix(rest, " ") {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("metric %s: %q: %v", prefix, line, err)
			}
			return v
		}
	}
	return -1
}

// relevantInTop reports whether any of the hits is judged relevant for
// query qid.
func (s *stack) relevantInTop(qid string, hits []hit) bool {
	j := s.Corpus.Qrels[qid]
	for _, h := range hits {
		if j[h.ID] > 0 {
			return true
		}
	}
	return false
}

// sourceNames of the retrieval sources every answer reports.
var sourceNames = []string{"vector", "keyword", "graph"}

// checkHealthy returns why a 200 answer is not a complete, healthy one, or
// "" when every source answered ok and every hit is hydrated.
func checkHealthy(res queryResult) string {
	for _, n := range sourceNames {
		if st := res.Sources[n].Status; st != "ok" {
			return fmt.Sprintf("source %s is %q (%s)", n, st, res.Sources[n].Error)
		}
	}
	if res.Partial || res.Degraded {
		return fmt.Sprintf("partial=%v degraded=%v", res.Partial, res.Degraded)
	}
	return checkHydrated(res)
}

// checkHydrated returns why the page is not fully hydrated, or "".
func checkHydrated(res queryResult) string {
	if len(res.Hits) == 0 {
		return "no hits"
	}
	if len(res.Missing) > 0 {
		return fmt.Sprintf("missing documents %v", res.Missing)
	}
	for _, h := range res.Hits {
		if h.Document == nil || h.Document.ID != h.ID || (h.Document.Title == "" && h.Document.Text == "") {
			return fmt.Sprintf("hit %s not hydrated: %+v", h.ID, h.Document)
		}
	}
	return ""
}

// dropped statuses: the source was left out of the fusion.
var droppedStatuses = []string{"error", "timeout", "circuit_open"}

// checkDropped returns why the answer does not name source as dropped with
// partial and degraded set and the other sources still answering, or "".
func checkDropped(res queryResult, source string) string {
	st := res.Sources[source]
	if !slices.Contains(droppedStatuses, st.Status) {
		return fmt.Sprintf("source %s is %q, want one of %v", source, st.Status, droppedStatuses)
	}
	if !res.Partial || !res.Degraded {
		return fmt.Sprintf("source %s is %s but partial=%v degraded=%v", source, st.Status, res.Partial, res.Degraded)
	}
	answered := 0
	for _, n := range sourceNames {
		if n != source && res.Sources[n].Status == "ok" {
			answered++
		}
	}
	if answered == 0 {
		return fmt.Sprintf("no other source answered: %+v", res.Sources)
	}
	return checkHydrated(res)
}

// percentile returns the p-th percentile (nearest rank) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
