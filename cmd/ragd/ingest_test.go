package main

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/ingest/corpus"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
	"github.com/ragd/ragd/wire"
)

// ingestCount reads a count ("sent", "ok", "partial", "failed") from the
// ingest summary.
func ingestCount(t *testing.T, stdout, label string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  ` + label + `\s+(\d+)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("summary has no %q count:\n%s", label, stdout)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// checkpointLine loads the checkpoint of input and returns its line.
func checkpointLine(t *testing.T, input string) int {
	t.Helper()
	abs, _ := filepath.Abs(input)
	pos, err := (&corpus.Checkpoint{Path: input + ".ckpt", Input: abs}).Load(-1)
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	return pos.Line
}

func TestIngestJSONL(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	dir := t.TempDir()
	lines := numberedDocs(7)
	lines = append(lines, spi.Document{ID: "t1", Tenant: "own", Text: "keeps its tenant"})
	file := writeJSONL(t, dir, "docs.jsonl", lines...)

	code, stdout, stderr := runRagd(t, "ingest", file, "--server", srv.URL, "--batch", "3", "--tenant", "acme")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if ingestCount(t, stdout, "sent") != 8 || ingestCount(t, stdout, "ok") != 8 || ingestCount(t, stdout, "failed") != 0 {
		t.Fatalf("summary:\n%s", stdout)
	}
	if !strings.Contains(stdout, "in 3 requests") || !strings.Contains(stdout, "docs/s") {
		t.Fatalf("summary lacks the request count or rate:\n%s", stdout)
	}
	if !strings.Contains(stderr, "ingest: line 3 (") {
		t.Fatalf("no plain progress line after the first batch:\n%s", stderr)
	}
	if fileExists(t, file+".ckpt") {
		t.Fatal("the checkpoint was not removed after a complete run")
	}
	got := srv.docs(t, "d1", "d7", "t1")
	if len(got) != 3 || got["d1"].Title != "document 1" {
		t.Fatalf("stored documents: %+v", got)
	}
	if got["d7"].Tenant != "acme" || got["t1"].Tenant != "own" {
		t.Fatalf("--tenant: d7 has %q (want acme), t1 has %q (want own)", got["d7"].Tenant, got["t1"].Tenant)
	}
}

func TestIngestBEIRDir(t *testing.T) {
	t.Parallel()
	const n = 12
	src, err := os.ReadFile(filepath.Join(spitest.CranfieldDir(t), "corpus.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	head := strings.SplitAfterN(string(src), "\n", n+1)[:n]
	if err := os.WriteFile(filepath.Join(dir, "corpus.jsonl"), []byte(strings.Join(head, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	var first struct {
		ID    string `json:"_id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(head[0]), &first); err != nil {
		t.Fatal(err)
	}

	srv := startTestRagd(t, nil)
	code, stdout, stderr := runRagd(t, "ingest", dir, "--server", srv.URL, "--batch", "5")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if ingestCount(t, stdout, "ok") != n || !strings.Contains(stdout, "(beir)") {
		t.Fatalf("summary:\n%s", stdout)
	}
	if d, ok := srv.docs(t, first.ID)[first.ID]; !ok || d.Title != first.Title {
		t.Fatalf("document %s stored as %+v, want title %q", first.ID, d, first.Title)
	}
}

func TestIngestMalformedLinesAndRejectedDocuments(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	file := writeJSONL(t, t.TempDir(), "bad.jsonl",
		spi.Document{ID: "ok1", Text: "fine"},
		`{"id": "broken", "text": `,
		`{"id": "typo", "txt": "unknown key"}`,
		"",
		spi.Document{ID: "vec", Text: "wrong dimension", Vector: []float32{1, 2}},
		spi.Document{ID: "ok2", Text: "fine too"},
	)
	code, stdout, stderr := runRagd(t, "ingest", file, "--server", srv.URL)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if s, ok, f := ingestCount(t, stdout, "sent"), ingestCount(t, stdout, "ok"), ingestCount(t, stdout, "failed"); s != 3 || ok != 2 || f != 3 {
		t.Fatalf("sent %d ok %d failed %d, want 3 2 3:\n%s", s, ok, f, stdout)
	}
	for _, want := range []string{
		"1 rejected by the server, 2 malformed lines",
		"line 2  id -  malformed_line:",
		"line 3  id -  malformed_line: unknown field \"txt\"",
		"line 5  id \"vec\"  invalid_vector:",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "ragd: ingest: 3 of 5 documents failed") {
		t.Errorf("stderr: %s", stderr)
	}
	if fileExists(t, file+".ckpt") {
		t.Error("failures that a retry cannot fix kept the checkpoint")
	}
	if got := srv.docs(t, "ok1", "ok2", "vec"); len(got) != 2 {
		t.Errorf("stored %v, want ok1 and ok2", slices.Sorted(maps.Keys(got)))
	}
}

// proxy forwards to a real server, records the ids of the documents it
// was sent, and fails requests after the first okLimit.
type proxy struct {
	t       *testing.T
	rp      *httputil.ReverseProxy
	mu      sync.Mutex
	posts   int
	okLimit int // -1: never fail
	// failStatus is answered to failing requests; 0 drops the connection.
	failStatus int
	ids        []string
}

func newProxy(t *testing.T, target string) (*proxy, string) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, rp: httputil.NewSingleHostReverseProxy(u), okLimit: -1}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

func (p *proxy) set(okLimit, failStatus int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.posts, p.okLimit, p.failStatus, p.ids = 0, okLimit, failStatus, nil
}

func (p *proxy) received() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ids)
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	p.mu.Lock()
	p.posts++
	fail := p.okLimit >= 0 && p.posts > p.okLimit
	status := p.failStatus
	if !fail && r.URL.Path == "/v1/documents" {
		var req api.UpsertRequest
		if err := json.Unmarshal(body, &req); err == nil {
			for _, d := range req.Documents {
				p.ids = append(p.ids, d.ID)
			}
		}
	}
	p.mu.Unlock()
	if !fail {
		p.rp.ServeHTTP(w, r)
		return
	}
	if status == 0 {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(api.ErrorResponse{Error: api.ErrorDetail{Code: api.CodeUnavailable, Message: "a backend is unavailable; retry later"}})
}

func TestIngestResumesAfterTheServerWentAway(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	px, pxURL := newProxy(t, srv.URL)
	file := writeJSONL(t, t.TempDir(), "docs.jsonl", numberedDocs(10)...)

	// Two batches get through, then the server is gone.
	px.set(2, 0)
	code, stdout, stderr := runRagd(t, "ingest", file, "--server", pxURL, "--batch", "2", "--retries", "2", "--retry-wait", "1ms")
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "ingest stopped early") || ingestCount(t, stdout, "sent") != 4 {
		t.Fatalf("summary:\n%s", stdout)
	}
	if n := strings.Count(stderr, "batch from line 5: cannot reach ragd"); n != 2 {
		t.Fatalf("%d retry messages for the batch from line 5, want 2:\n%s", n, stderr)
	}
	if !strings.Contains(stderr, "rerun the same command to resume from line 5") {
		t.Fatalf("stderr does not say how to resume:\n%s", stderr)
	}
	if line := checkpointLine(t, file); line != 4 {
		t.Fatalf("checkpoint at line %d, want 4", line)
	}

	// The server is back: the rerun sends only what was not committed.
	px.set(-1, 0)
	code, stdout, stderr = runRagd(t, "ingest", file, "--server", pxURL, "--batch", "2")
	if code != 0 {
		t.Fatalf("resume: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "resuming "+file+" after line 4") {
		t.Fatalf("resume not announced:\n%s", stderr)
	}
	if got, want := px.received(), []string{"d5", "d6", "d7", "d8", "d9", "d10"}; !slices.Equal(got, want) {
		t.Fatalf("resumed run sent %v, want %v", got, want)
	}
	if fileExists(t, file+".ckpt") {
		t.Fatal("the checkpoint was not removed after the resumed run completed")
	}
	if got := srv.docs(t, "d1", "d4", "d5", "d10"); len(got) != 4 {
		t.Fatalf("stored %d of d1, d4, d5, d10", len(got))
	}

	// --no-resume starts over and keeps no checkpoint.
	px.set(1, http.StatusBadRequest)
	code, _, stderr = runRagd(t, "ingest", file, "--server", pxURL, "--batch", "2", "--no-resume")
	if code != 1 || !strings.Contains(stderr, "this run kept no checkpoint") || fileExists(t, file+".ckpt") {
		t.Fatalf("--no-resume: exit %d, checkpoint present %v, stderr:\n%s", code, fileExists(t, file+".ckpt"), stderr)
	}
}

func TestIngestRetries5xx(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	px, _ := newProxy(t, srv.URL)
	file := writeJSONL(t, t.TempDir(), "docs.jsonl", numberedDocs(3)...)

	// The first two requests fail with 503, then the server answers.
	healing := &healingHandler{next: px, failures: 2, status: http.StatusServiceUnavailable}
	hs := httptest.NewServer(healing)
	defer hs.Close()
	code, stdout, stderr := runRagd(t, "ingest", file, "--server", hs.URL, "--retries", "3", "--retry-wait", "1ms")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"retry 1 of 3", "retry 2 of 3", "503 Service Unavailable: unavailable"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "retry 3 of 3") || ingestCount(t, stdout, "ok") != 3 {
		t.Fatalf("retried too often or lost documents:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
}

// healingHandler fails the first failures requests with status, then
// passes requests to next.
type healingHandler struct {
	next     http.Handler
	mu       sync.Mutex
	failures int
	status   int
}

func (h *healingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	fail := h.failures > 0
	h.failures--
	h.mu.Unlock()
	if !fail {
		h.next.ServeHTTP(w, r)
		return
	}
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(h.status)
	json.NewEncoder(w).Encode(api.ErrorResponse{Error: api.ErrorDetail{Code: api.CodeUnavailable, Message: "a backend is unavailable; retry later"}})
}

func TestIngestDoesNotRetryClientErrors(t *testing.T) {
	t.Parallel()
	fake := apiErrorServer(t, http.StatusBadRequest, api.ErrorDetail{Code: api.CodeMalformedJSON, Message: "the body is not valid JSON", RequestID: "rid-1"})
	file := writeJSONL(t, t.TempDir(), "docs.jsonl", numberedDocs(3)...)
	code, _, stderr := runRagd(t, "ingest", file, "--server", fake.URL, "--retry-wait", "1ms")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if strings.Contains(stderr, "retry 1") {
		t.Fatalf("a 400 was retried:\n%s", stderr)
	}
	if !strings.Contains(stderr, "400 Bad Request: malformed_json: the body is not valid JSON [POST /v1/documents, request id rid-1]") {
		t.Fatalf("stderr does not explain the error:\n%s", stderr)
	}
}

// docFailServer answers POST /v1/documents like the API, failing the
// documents whose ids are in fail with code.
func docFailServer(t *testing.T, code string, fail ...string) (*httptest.Server, *[]string) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req api.UpsertRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("fake server: %v", err)
		}
		resp := api.BatchResponse{Total: len(req.Documents)}
		for _, d := range req.Documents {
			mu.Lock()
			seen = append(seen, d.ID)
			mu.Unlock()
			if slices.Contains(fail, d.ID) {
				resp.Failed++
				resp.Results = append(resp.Results, ingest.Result{ID: d.ID, Status: ingest.StatusFailed, Code: code, Error: "simulated"})
				continue
			}
			resp.OK++
			resp.Results = append(resp.Results, ingest.Result{ID: d.ID, Status: ingest.StatusOK})
		}
		status := http.StatusOK
		if resp.Failed > 0 {
			status = http.StatusMultiStatus
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func TestIngestTransientDocumentFailureKeepsTheCheckpoint(t *testing.T) {
	t.Parallel()
	file := writeJSONL(t, t.TempDir(), "docs.jsonl", numberedDocs(6)...)
	fake, _ := docFailServer(t, ingest.CodeStoreUnavailable, "d3")
	code, stdout, stderr := runRagd(t, "ingest", file, "--server", fake.URL, "--batch", "2")
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if ingestCount(t, stdout, "ok") != 5 || !strings.Contains(stdout, `line 3  id "d3"  store_unavailable: simulated`) {
		t.Fatalf("summary:\n%s", stdout)
	}
	if !strings.Contains(stderr, "some may pass on a retry: rerun the same command to resend from line 3") {
		t.Fatalf("stderr:\n%s", stderr)
	}
	if line := checkpointLine(t, file); line != 2 {
		t.Fatalf("checkpoint at line %d, want 2 (before the batch with the failure)", line)
	}

	healthy, seen := docFailServer(t, "")
	code, stdout, stderr = runRagd(t, "ingest", file, "--server", healthy.URL, "--batch", "2")
	if code != 0 {
		t.Fatalf("rerun: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if want := []string{"d3", "d4", "d5", "d6"}; !slices.Equal(*seen, want) {
		t.Fatalf("rerun sent %v, want %v", *seen, want)
	}
	if fileExists(t, file+".ckpt") {
		t.Fatal("checkpoint left after the rerun")
	}
}

func TestIngestSplitsWhatTheServerFindsTooLarge(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, func(cfg *config.Config) {
		cfg.Ingest.MaxDocsPerRequest = 3
		cfg.Ingest.BatchSize = 3
	})
	file := writeJSONL(t, t.TempDir(), "docs.jsonl", numberedDocs(8)...)
	code, stdout, stderr := runRagd(t, "ingest", file, "--server", srv.URL, "--batch", "8")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "sending at most 2") || ingestCount(t, stdout, "ok") != 8 {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	if got := srv.docs(t, "d1", "d8"); len(got) != 2 {
		t.Fatalf("stored %d of d1 and d8", len(got))
	}
}

func TestIngestRepeatedIDStartsANewBatch(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	file := writeJSONL(t, t.TempDir(), "docs.jsonl",
		spi.Document{ID: "a", Title: "first version", Text: "x"},
		spi.Document{ID: "b", Text: "y"},
		spi.Document{ID: "a", Title: "second version", Text: "x"},
	)
	code, stdout, stderr := runRagd(t, "ingest", file, "--server", srv.URL)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "in 2 requests") {
		t.Fatalf("want two requests:\n%s", stdout)
	}
	if got := srv.docs(t, "a")["a"].Title; got != "second version" {
		t.Fatalf("a has title %q, want the later line's", got)
	}
}

func TestIngestCheckpointForAnotherInputIsRejected(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := writeJSONL(t, dir, "docs.jsonl", numberedDocs(2)...)
	other := &corpus.Checkpoint{Path: file + ".ckpt", Input: "/somewhere/else.jsonl"}
	if err := other.Save(corpus.Position{Line: 1, Offset: 10}); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runRagd(t, "ingest", file, "--server", "http://127.0.0.1:1")
	if code != 1 || !strings.Contains(stderr, "pass --no-resume to start over") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

func TestIngestUsageErrors(t *testing.T) {
	t.Parallel()
	file := writeJSONL(t, t.TempDir(), "docs.jsonl", numberedDocs(1)...)
	for name, args := range map[string][]string{
		"no input":               {"ingest"},
		"two inputs":             {"ingest", file, file},
		"zero batch":             {"ingest", file, "--batch", "0"},
		"unknown format":         {"ingest", file, "--format", "csv"},
		"checkpoint and restart": {"ingest", file, "--checkpoint", "x.ckpt", "--no-resume"},
		"unknown progress":       {"ingest", file, "--progress", "fancy"},
		"not an http server":     {"ingest", file, "--server", "ftp://example.com"},
		"negative retries":       {"ingest", file, "--retries", "-1"},
		"wait too long":          {"ingest", file, "--wait", "2h"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := runRagd(t, args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr)
			}
		})
	}
}

func TestIngestMissingInput(t *testing.T) {
	t.Parallel()
	code, _, stderr := runRagd(t, "ingest", filepath.Join(t.TempDir(), "nope.jsonl"), "--server", "http://127.0.0.1:1")
	if code != 1 || !strings.Contains(stderr, "no such file") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

// TestIngestPendingIsOK: a document stored but not yet applied by a
// derived store is a success; the checkpoint moves past it.
func TestIngestPendingIsOK(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req api.UpsertRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("fake server: %v", err)
		}
		resp := api.BatchResponse{Total: len(req.Documents), OK: len(req.Documents)}
		for _, d := range req.Documents {
			resp.Results = append(resp.Results, ingest.Result{ID: d.ID, Status: ingest.StatusOK, Version: 1,
				Stores: map[string]string{"vector": "ok", "keyword": "pending"}})
		}
		json.NewEncoder(w).Encode(resp)
	}))
	defer srv.Close()
	file := writeJSONL(t, t.TempDir(), "docs.jsonl", numberedDocs(3)...)
	code, stdout, stderr := runRagd(t, "ingest", file, "--server", srv.URL)
	if code != 0 || ingestCount(t, stdout, "ok") != 3 {
		t.Fatalf("exit %d, want 0 and 3 ok\n%s\n%s", code, stdout, stderr)
	}
	if fileExists(t, file+".ckpt") {
		t.Fatal("a pending result kept the checkpoint")
	}
}

// TestIngestBadDocumentDoesNotLoseItsBatch: documents the server cannot
// store (a NUL byte, an all-zero vector) fail alone; the rest of their
// batch is stored, so moving the checkpoint past the batch loses nothing.
func TestIngestBadDocumentDoesNotLoseItsBatch(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	zero := make([]float32, srv.App.Embedder.Dimension())
	file := writeJSONL(t, t.TempDir(), "docs.jsonl",
		spi.Document{ID: "g1", Text: "good one"},
		spi.Document{ID: "nul", Text: "a\x00b"},
		spi.Document{ID: "g2", Text: "good two"},
		spi.Document{ID: "zero", Text: "zero vector", Vector: zero},
		spi.Document{ID: "g3", Text: "good three"},
	)
	code, stdout, stderr := runRagd(t, "ingest", file, "--server", srv.URL, "--batch", "5")
	if code != 1 || ingestCount(t, stdout, "ok") != 3 || ingestCount(t, stdout, "failed") != 2 {
		t.Fatalf("exit %d, want 1 with 3 ok and 2 failed\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{`id "nul"  invalid_text`, `id "zero"  invalid_vector`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	if got := srv.docs(t, "g1", "g2", "g3", "nul", "zero"); len(got) != 3 {
		t.Fatalf("stored %v, want g1 g2 g3", slices.Sorted(maps.Keys(got)))
	}
}

// TestIngestOutcomeUnknownKeepsTheCheckpoint: a write whose outcome the
// server could not confirm is sent again by a rerun.
func TestIngestOutcomeUnknownKeepsTheCheckpoint(t *testing.T) {
	t.Parallel()
	file := writeJSONL(t, t.TempDir(), "docs.jsonl", numberedDocs(4)...)
	fake, _ := docFailServer(t, ingest.CodeOutcomeUnknown, "d3")
	code, stdout, stderr := runRagd(t, "ingest", file, "--server", fake.URL, "--batch", "2")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	if line := checkpointLine(t, file); line != 2 {
		t.Fatalf("checkpoint at line %d, want 2 (before the batch with the unconfirmed write)", line)
	}
}

// slowBatches answers 504 timeout, as ragd does when a request outlasts
// its deadline, to every upsert of more than most documents, and passes
// the rest to target; it counts the documents of each upsert it passed.
type slowBatches struct {
	most   int
	target http.Handler
	mu     sync.Mutex
	passed []int
	timed  int
}

func (s *slowBatches) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/documents" {
		s.target.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req api.UpsertRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(req.Documents) > s.most {
		s.timed++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGatewayTimeout)
		_ = json.NewEncoder(w).Encode(wire.ErrorResponse{Error: wire.ErrorDetail{Code: api.CodeTimeout, Message: "the request did not finish within its deadline"}})
		return
	}
	s.passed = append(s.passed, len(req.Documents))
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.target.ServeHTTP(w, r)
}

// A batch the server cannot store within its request deadline (its
// embedding outlasts request_timeout_s) fails whole every time it is
// sent: both ingesters halve it until the server can, and send no larger
// requests after, so the run completes.
func TestIngestHalvesRequestsTheServerTimesOutOn(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, args func(url string) []string, want int) string {
		sb := &slowBatches{most: 2, target: httputil.NewSingleHostReverseProxy(u)}
		px := httptest.NewServer(sb)
		t.Cleanup(px.Close)
		code, stdout, stderr := runRagd(t, args(px.URL)...)
		if code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		if !strings.Contains(stderr, "the server ran out of its request deadline on 8 documents; sending at most 4") ||
			!strings.Contains(stderr, "on 4 documents; sending at most 2") {
			t.Fatalf("the halving is not reported:\n%s", stderr)
		}
		sb.mu.Lock()
		defer sb.mu.Unlock()
		sum := 0
		for _, n := range sb.passed {
			sum += n
			if n > 2 {
				t.Fatalf("a request of %d documents passed", n)
			}
		}
		if sum != want {
			t.Fatalf("%d documents stored in %v, want %d", sum, sb.passed, want)
		}
		// Once halved to 2, no request larger is sent again: 8 and 4 of
		// the first batch, then none.
		if sb.timed != 2 {
			t.Fatalf("%d requests timed out, want 2 (8 and 4 documents, then never again)", sb.timed)
		}
		return stdout
	}
	t.Run("jsonl", func(t *testing.T) {
		file := writeJSONL(t, t.TempDir(), "docs.jsonl", numberedDocs(20)...)
		stdout := run(t, func(url string) []string {
			return []string{"ingest", file, "--server", url, "--batch", "8", "--retries", "0"}
		}, 20)
		if ingestCount(t, stdout, "ok") != 20 || ingestCount(t, stdout, "failed") != 0 {
			t.Fatalf("summary:\n%s", stdout)
		}
	})
	t.Run("dir", func(t *testing.T) {
		dir := t.TempDir()
		writeTree(t, dir, guideFiles)
		want := expectChunks(t, dir, "slow", dirChunkTokens, 8)
		state := filepath.Join(t.TempDir(), "state.db")
		run(t, func(url string) []string {
			a := dirArgs(dir, url, state, "--batch", "8", "--retries", "0")
			for i, s := range a {
				if s == "docs" && a[i-1] == "--source" {
					a[i] = "slow"
				}
			}
			return a
		}, len(want))
		srv.sameChunks(t, "slow", want)
	})
}
