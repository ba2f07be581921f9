package app_test

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ragd/ragd/internal/fakeembed"
)

// schemaNames are the ragd_ names the docs mention that are not metrics:
// storage identifiers (PostgreSQL tables and indexes, Neo4j constraints and
// indexes) and the Python client's package.
var schemaNames = []string{
	"ragd_client",
	"ragd_documents", "ragd_documents_log", "ragd_documents_log_meta", "ragd_meta",
	"ragd_documents_embedding_cosine_idx", "ragd_documents_tenant_idx", "ragd_documents_metadata_idx",
	"ragd_documents_tail_idx", "ragd_documents_cosine_hnsw_v", // the partial HNSW index, ragd_documents_cosine_hnsw_v<V>
	"ragd_document_id", "ragd_entity_name", "ragd_entity_terms",
	"ragd_deg", // an entity's degree per tenant, ragd_deg:<tenant>
}

// docNames is every ragd_ name in README.md and docs/*.md, with the files
// that mention it. A name ending in "_" is a prefix (docs write
// ragd_breaker_*).
func docNames(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("docs: %v (%d files)", err, len(files))
	}
	files = append(files, filepath.Join("..", "README.md"))
	re := regexp.MustCompile(`\bragd_[a-z0-9_]+`)
	names := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range re.FindAllString(string(b), -1) {
			if !slices.Contains(names[n], filepath.Base(f)) {
				names[n] = append(names[n], filepath.Base(f))
			}
		}
	}
	return names
}

// scrape returns the metric families /metrics serves.
func scrape(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
	}
	served := map[string]bool{}
	for line := range strings.Lines(string(body)) {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, _, _ := strings.Cut(rest, " ")
			served[name] = true
		}
	}
	return served
}

// missing lists the names of docs that served lacks, with where the docs
// mention them; only names with prefix are checked.
func missing(docs map[string][]string, served map[string]bool, prefix string) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		if !strings.HasPrefix(name, prefix) || slices.Contains(schemaNames, name) {
			continue
		}
		ok := served[name]
		if p, isPrefix := strings.CutSuffix(name, "_"); isPrefix {
			for s := range served {
				ok = ok || strings.HasPrefix(s, p+"_")
			}
		}
		if !ok {
			out = append(out, name+" (in "+strings.Join(docs[name], ", ")+")")
		}
	}
	return out
}

// Every metric name the docs mention is served on /metrics of a real app
// (issue 18, item 8: the change-log counters were registered as
// ragd_log_commitswrites_total and the like while the docs and runbooks
// said ragd_log_committed_writes_total, so alerts written from the docs
// never fired). The change-log counters are served from the start, at
// zero for every derived store, so an alert on increase() sees the first
// apply error too; the rest once the traffic that makes them has run.
func TestEveryDocumentedMetricIsServed(t *testing.T) {
	// An embedder with the vector caches (the hashing one needs none), so
	// that their metrics are served too.
	a := newApp(t, openaiConfig(t, fakeembed.New(t, 16), "metrics"))
	defer a.Close()
	srv, err := a.API()
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	docs := docNames(t)
	if len(docs) < 10 {
		t.Fatalf("found only %d ragd_ names in the docs: is the pattern broken?", len(docs))
	}
	if m := missing(docs, scrape(t, ts.URL), "ragd_log_"); len(m) > 0 {
		t.Errorf("change-log metrics the docs name but a fresh app does not serve:\n%s", strings.Join(m, "\n"))
	}

	post := func(path, body string, want int) {
		t.Helper()
		resp, err := http.Post(ts.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("POST %s: %d, want %d: %s", path, resp.StatusCode, want, b)
		}
	}
	post("/v1/documents?wait=10s", `{"documents":[{"id":"m1","title":"Circuit breakers","text":"A circuit breaker opens after failures."}]}`, http.StatusOK)
	post("/v1/query", `{"text":"circuit breaker"}`, http.StatusOK)
	post("/v1/query", `{"text":"circuit breaker","limit":100000}`, http.StatusBadRequest)
	post("/v1/status/breakers/graph/force-open", "", http.StatusOK)
	post("/v1/status/breakers/graph/force-close", "", http.StatusOK)
	// The built-in model's own metrics: TestBuiltinMetricsServed.
	m := slices.DeleteFunc(missing(docs, scrape(t, ts.URL), "ragd_"), func(n string) bool { return strings.HasPrefix(n, builtinMetrics) })
	if len(m) > 0 {
		t.Errorf("metrics the docs name but the app does not serve:\n%s", strings.Join(m, "\n"))
	}
}

// builtinMetrics is the prefix of the metrics only the built-in model
// serves (its scheduler's).
const builtinMetrics = "ragd_embedder_"

// TestBuiltinMetricsServed: with the built-in model (the tiny test model
// of embedder/builtin), every ragd_embedder_ metric the docs name is
// served once a query and a document went through the model.
func TestBuiltinMetricsServed(t *testing.T) {
	cfg := builtinConfig(t)
	cfg.Embedder.ModelDir = filepath.Join("..", "embedder", "builtin", "testdata", "tiny")
	a := newApp(t, cfg)
	defer a.Close()
	srv, err := a.API()
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for _, r := range []struct{ path, body string }{
		{"/v1/documents?wait=10s", `{"documents":[{"id":"m1","text":"A circuit breaker opens after failures."}]}`},
		{"/v1/query", `{"text":"circuit breaker"}`},
	} {
		resp, err := http.Post(ts.URL+r.path, "application/json", strings.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d: %s", r.path, resp.StatusCode, b)
		}
	}
	docs := docNames(t)
	var named int
	for n := range docs {
		if strings.HasPrefix(n, builtinMetrics) {
			named++
		}
	}
	if named < 5 {
		t.Fatalf("the docs name %d %s metrics: is the pattern broken?", named, builtinMetrics)
	}
	if m := missing(docs, scrape(t, ts.URL), builtinMetrics); len(m) > 0 {
		t.Errorf("built-in model metrics the docs name but the app does not serve:\n%s", strings.Join(m, "\n"))
	}
}
