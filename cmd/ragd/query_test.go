package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// loadCorpus ingests a small corpus through the CLI.
func loadCorpus(t *testing.T, url string, extra ...string) {
	t.Helper()
	file := writeJSONL(t, t.TempDir(), "corpus.jsonl",
		spi.Document{ID: "bl", Title: "Boundary layer transition on a flat plate", Text: "Transition of the laminar boundary layer to turbulence.", Metadata: spi.Strings(map[string]string{"topic": "flow"})},
		spi.Document{ID: "ht", Title: "Heat transfer in hypersonic flow", Text: "Stagnation point heat transfer measured in a shock tube.", Metadata: spi.Strings(map[string]string{"topic": "heat"})},
		spi.Document{ID: "wf", Title: "Wing flutter", Text: "Flutter of swept wings at transonic speeds.", Metadata: spi.Strings(map[string]string{"topic": "structures"})},
		spi.Document{ID: "sw", Title: "Shock waves and boundary layers", Text: "Interaction of an oblique shock wave with a turbulent boundary layer.", Metadata: spi.Strings(map[string]string{"topic": "flow"})},
	)
	// Queries follow at once: wait for the keyword and graph stores.
	args := append([]string{"ingest", file, "--server", url, "--wait", "30s"}, extra...)
	if code, stdout, stderr := runRagd(t, args...); code != 0 {
		t.Fatalf("ingest: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// hitIDs returns the ids of the hit rows of a query table.
func hitIDs(stdout string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`(?m)^(\d+)\s+(\S+)\s+\d+\.\d+\s`).FindAllStringSubmatch(stdout, -1) {
		ids = append(ids, m[2])
	}
	return ids
}

func TestQueryTable(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	loadCorpus(t, srv.URL)

	code, stdout, stderr := runRagd(t, "query", "boundary layer transition", "--server", srv.URL, "--limit", "2", "--sources", "keyword")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	ids := hitIDs(stdout)
	if len(ids) != 2 || ids[0] != "bl" {
		t.Fatalf("hits %v, want 2 with bl first:\n%s", ids, stdout)
	}
	for _, want := range []string{
		"RANK  ID", "Boundary layer transition on a flat plate",
		"sources:", "keyword       ok", "vector        disabled",
		"2 hits of", "fusion " + config.Default().Retriever.Fusion, "took", "complete",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if stderr != "" {
		t.Errorf("a complete answer wrote to stderr: %s", stderr)
	}
}

func TestQueryExplainFilterFusion(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	loadCorpus(t, srv.URL)

	code, stdout, stderr := runRagd(t, "query", "boundary layer", "--server", srv.URL, "--explain",
		"--filter", "topic=flow", "--sources", "keyword,vector", "--fusion", "score")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	ids := hitIDs(stdout)
	if len(ids) != 2 || strings.Join(ids, ",") != "bl,sw" && strings.Join(ids, ",") != "sw,bl" {
		t.Fatalf("filter topic=flow: hits %v, want bl and sw:\n%s", ids, stdout)
	}
	if !regexp.MustCompile(`keyword: rank \d+, raw score [\d.]+, contribution [\d.]+`).MatchString(stdout) ||
		!strings.Contains(stdout, "vector: rank") || !strings.Contains(stdout, "fusion score") {
		t.Fatalf("explain or fusion missing:\n%s", stdout)
	}
}

// A JSON filter of the filter language, ANDed with a key=value one.
func TestQueryJSONFilter(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	loadCorpus(t, srv.URL)
	code, stdout, stderr := runRagd(t, "query", "boundary layer", "--server", srv.URL, "--sources", "keyword",
		"--filter", `{"topic": {"$in": ["flow", "heat"]}, "$not": {"topic": "heat"}}`)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	ids := hitIDs(stdout)
	if len(ids) != 2 || strings.Join(ids, ",") != "bl,sw" && strings.Join(ids, ",") != "sw,bl" {
		t.Fatalf("JSON filter topic in (flow, heat), not heat: hits %v, want bl and sw:\n%s", ids, stdout)
	}
	code, stdout, _ = runRagd(t, "query", "boundary layer", "--server", srv.URL, "--sources", "keyword",
		"--filter", `{"topic": {"$exists": true}}`, "--filter", "topic=nothing")
	if code != 0 || len(hitIDs(stdout)) != 0 {
		t.Fatalf("JSON filter AND topic=nothing: exit %d, hits %v, want none", code, hitIDs(stdout))
	}
}

func TestQueryJSON(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	loadCorpus(t, srv.URL)

	code, stdout, stderr := runRagd(t, "query", "heat transfer", "--server", srv.URL, "--json", "--limit", "3", "--offset", "1")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var res retriever.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("--json output is not a query result: %v\n%s", err, stdout)
	}
	if res.Limit != 3 || res.Offset != 1 || len(res.Hits) == 0 || res.Hits[0].Rank != 2 {
		t.Fatalf("limit %d offset %d hits %+v", res.Limit, res.Offset, res.Hits)
	}
	if _, ok := res.Sources[spi.SourceKeyword]; !ok {
		t.Fatalf("no keyword source in %+v", res.Sources)
	}
}

func TestQueryDegradedWarns(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	loadCorpus(t, srv.URL)
	if _, err := srv.App.Breakers.ForceOpen(spi.SourceGraph); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runRagd(t, "query", "wing flutter", "--server", srv.URL)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`graph\s+circuit_open\s.*retry in`).MatchString(stdout) || !strings.Contains(stdout, "partial and degraded") {
		t.Fatalf("the open graph source is not shown:\n%s", stdout)
	}
	if !strings.Contains(stderr, "warning: the answer is partial and degraded") {
		t.Fatalf("no warning on stderr: %q", stderr)
	}
}

func TestQueryNotEnoughSources(t *testing.T) {
	t.Parallel()
	t.Run("real server", func(t *testing.T) {
		srv := startTestRagd(t, nil)
		loadCorpus(t, srv.URL)
		if _, err := srv.App.Breakers.ForceOpen(spi.SourceGraph); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runRagd(t, "query", "wing flutter", "--server", srv.URL, "--min-sources", "3")
		if code != 1 {
			t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
		}
		if !strings.Contains(stdout, "not enough sources: 2 answered, 3 required") ||
			!regexp.MustCompile(`graph\s+circuit_open`).MatchString(stdout) ||
			!regexp.MustCompile(`keyword\s+ok`).MatchString(stdout) {
			t.Fatalf("per-source statuses missing:\n%s", stdout)
		}
		if !strings.Contains(stderr, "503 Service Unavailable: not_enough_sources") {
			t.Fatalf("stderr: %s", stderr)
		}
	})
	t.Run("fake server", func(t *testing.T) {
		healthy := 0
		fake := apiErrorServer(t, http.StatusServiceUnavailable, api.ErrorDetail{
			Code: api.CodeNotEnoughSources, Message: "0 of the required 1 retrieval sources answered; see sources",
			Required: 1, Healthy: &healthy,
			Sources: map[string]retriever.SourceStatus{
				spi.SourceVector:  {Status: retriever.StatusTimeout, TookMS: 1000, Error: "deadline exceeded"},
				spi.SourceKeyword: {Status: retriever.StatusError, Error: "index closed"},
			},
		})
		code, stdout, _ := runRagd(t, "query", "anything", "--server", fake.URL)
		if code != 1 {
			t.Fatalf("exit %d, want 1", code)
		}
		for _, re := range []string{`0 answered, 1 required`, `vector\s+timeout\s+1000\.0 ms.*error: deadline exceeded`, `keyword\s+error.*index closed`} {
			if !regexp.MustCompile(re).MatchString(stdout) {
				t.Errorf("output does not match %s:\n%s", re, stdout)
			}
		}
	})
}

func TestQueryAuth(t *testing.T) {
	srv := startTestRagd(t, withAuth)

	code, _, stderr := runRagd(t, "query", "flutter", "--server", srv.URL)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{"401 Unauthorized: unauthorized", "pass a valid key with --api-key or $RAGD_API_KEY"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q: %s", want, stderr)
		}
	}
	// Issue 29 item 8: one "ragd:" prefix, not "ragd: ragd answered 401".
	if !strings.HasPrefix(stderr, "ragd: server answered 401 Unauthorized") {
		t.Errorf("stderr %q, want it to start with \"ragd: server answered 401 Unauthorized\"", stderr)
	}

	// A query key may query but not ingest.
	file := writeJSONL(t, t.TempDir(), "docs.jsonl", numberedDocs(1)...)
	code, _, stderr = runRagd(t, "ingest", file, "--server", srv.URL, "--api-key", testQueryKey)
	if code != 1 || !strings.Contains(stderr, "403 Forbidden: forbidden") || !strings.Contains(stderr, "writes need an admin key") {
		t.Fatalf("ingest with a query key: exit %d, stderr: %s", code, stderr)
	}
	if strings.Contains(stderr, "retry 1") {
		t.Fatalf("a 403 was retried: %s", stderr)
	}

	t.Setenv(envAPIKey, testAdminKey)
	t.Setenv(envServer, srv.URL)
	t.Setenv(envServerOld, "")
	loadCorpus(t, "") // key and server from the environment
	code, stdout, stderr := runRagd(t, "query", "flutter", "--api-key", testQueryKey, "--sources", "keyword")
	if code != 0 || hitIDs(stdout)[0] != "wf" {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}

func TestQueryServerErrors(t *testing.T) {
	t.Parallel()
	t.Run("unreachable", func(t *testing.T) {
		code, _, stderr := runRagd(t, "query", "x", "--server", "http://127.0.0.1:1")
		if code != 1 || !strings.Contains(stderr, "cannot reach ragd at http://127.0.0.1:1") || !strings.Contains(stderr, "is `ragd serve` running") {
			t.Fatalf("exit %d, stderr: %s", code, stderr)
		}
	})
	t.Run("bad request", func(t *testing.T) {
		fake := apiErrorServer(t, http.StatusBadRequest, api.ErrorDetail{Code: "invalid_limit", Message: "limit: at most 100", Field: "limit", RequestID: "r-9"})
		code, _, stderr := runRagd(t, "query", "x", "--server", fake.URL)
		if code != 1 || !strings.Contains(stderr, "400 Bad Request: invalid_limit: limit: at most 100 [POST /v1/query, request id r-9]") {
			t.Fatalf("exit %d, stderr: %s", code, stderr)
		}
	})
	t.Run("not ragd", func(t *testing.T) {
		fake := newStaticServer(t, http.StatusBadGateway, "text/html", "<html><body>Bad gateway</body></html>")
		code, _, stderr := runRagd(t, "query", "x", "--server", fake)
		if code != 1 || !strings.Contains(stderr, "502 Bad Gateway: <html><body>Bad gateway</body></html>") {
			t.Fatalf("exit %d, stderr: %s", code, stderr)
		}
	})
}

func TestQueryUsageErrors(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"no text":         {"query"},
		"two texts":       {"query", "a", "b"},
		"blank text":      {"query", "  "},
		"unknown source":  {"query", "x", "--sources", "vector,sql"},
		"bad fusion":      {"query", "x", "--fusion", "max"},
		"bad filter":      {"query", "x", "--filter", "novalue"},
		"bad JSON filter": {"query", "x", "--filter", `{"topic": {"$regex": "f"}}`},
		"zero limit":      {"query", "x", "--limit", "0"},
	} {
		t.Run(name, func(t *testing.T) {
			if code, _, stderr := runRagd(t, args...); code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr: %s", code, exitUsage, stderr)
			}
		})
	}
}

func TestHelpOnEveryClientCommand(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"ingest", "query", "status"} {
		code, stdout, _ := runRagd(t, c, "--help")
		if code != 0 || !strings.Contains(stdout, "Examples:") || !strings.Contains(stdout, "--server") {
			t.Errorf("%s --help: exit %d\n%s", c, code, stdout)
		}
	}
}

// TestServerFromEitherVariable is issue 29 item 8: the client examples
// read $RAGD_URL, the CLI read only $RAGD_SERVER. The CLI takes
// $RAGD_URL (the documented name) and still $RAGD_SERVER when it is
// unset; --server wins over both.
func TestServerFromEitherVariable(t *testing.T) {
	srv := startTestRagd(t, nil)
	loadCorpus(t, srv.URL)
	unreachable := "http://127.0.0.1:1"
	for _, tc := range []struct {
		name          string
		url, server   string
		args          []string
		wantReachable bool
	}{
		{"RAGD_URL", srv.URL, "", nil, true},
		{"RAGD_SERVER", "", srv.URL, nil, true},
		{"RAGD_URL wins", srv.URL, unreachable, nil, true},
		{"RAGD_URL wins the other way", unreachable, srv.URL, nil, false},
		{"--server wins", unreachable, unreachable, []string{"--server", srv.URL}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("RAGD_URL", tc.url)
			t.Setenv("RAGD_SERVER", tc.server)
			code, stdout, stderr := runRagd(t, append([]string{"query", "flutter", "--sources", "keyword"}, tc.args...)...)
			if tc.wantReachable && (code != 0 || len(hitIDs(stdout)) == 0 || hitIDs(stdout)[0] != "wf") {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			if !tc.wantReachable && (code != 1 || !strings.Contains(stderr, "127.0.0.1:1")) {
				t.Fatalf("exit %d, want the unreachable server\n%s", code, stderr)
			}
		})
	}
}
