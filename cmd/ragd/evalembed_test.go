package main

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ragd/ragd/internal/fakeembed"
)

// fakeEmbedConfig writes a rag.yaml with the openai embedder pointed at s
// and a query-embedding deadline of 1 ms, far shorter than the server
// takes when a test holds it.
func fakeEmbedConfig(t *testing.T, s *fakeembed.Server) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rag.yaml")
	cfg := "auth: {enabled: false}\nembedder:\n  kind: openai\n  base_url: " + strconv.Quote(s.URL) +
		"\n  model: fake\n  dimension: 16\n  max_retries: 0\nretriever:\n  embed_timeout_ms: 1\n"
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEvalEmbedsOnceWithoutTheServerDeadline: `ragd eval` embeds the
// query texts once, in one batch, and waits for a server that holds that
// batch (a hook releases it once it arrived) although the configured
// query-embedding deadline is 1 ms: no query scores 0 for it. A second run
// without --data-dir embeds nothing: the corpus and the queries come from
// the vector cache; a second run on the same --data-dir neither.
func TestEvalEmbedsOnceWithoutTheServerDeadline(t *testing.T) {
	t.Parallel()
	s := fakeembed.New(t, 16)
	queries := map[string]bool{}
	for _, q := range paraphrase.queries {
		queries[q[0]] = true
	}
	var once sync.Once
	release := make(chan struct{})
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	s.SetHandle(func(inputs []string, _ http.ResponseWriter, r *http.Request) bool {
		if !queries[inputs[0]] {
			return false
		}
		if len(inputs) == len(queries) {
			once.Do(func() { close(release) }) // the batch of every query text arrived
		}
		select {
		case <-release:
		case <-r.Context().Done(): // the client gave up
		}
		return false
	})
	ds := writeParaphrase(t)
	cfg := fakeEmbedConfig(t, s)
	cache := t.TempDir()

	out := evalOut(t, "-c", cfg, "--vector-cache", cache, "--modes", "keyword,vector,hybrid", ds)
	if strings.Contains(out, "failed (scored 0)") || !strings.Contains(out, "query embedding: 6 texts") {
		t.Fatalf("eval under a 1 ms query deadline:\n%s", out)
	}
	var queryRequests [][]string
	for _, req := range s.Requests() {
		if queries[req[0]] {
			queryRequests = append(queryRequests, req)
		}
	}
	if len(queryRequests) != 1 || len(queryRequests[0]) != len(queries) {
		t.Fatalf("query texts were sent in %d requests %q, want one batch of all %d", len(queryRequests), queryRequests, len(queries))
	}
	if n := len(s.Texts()); n != len(paraphrase.docs)+len(queries) {
		t.Fatalf("server embedded %d texts, want %d documents and %d queries once each", n, len(paraphrase.docs), len(queries))
	}

	before := len(s.Texts())
	again := evalOut(t, "-c", cfg, "--vector-cache", cache, "--modes", "keyword,vector,hybrid", ds)
	if n := len(s.Texts()) - before; n != 0 {
		t.Fatalf("second run embedded %d texts, want none (the vector cache)", n)
	}
	if tableOf(again) != tableOf(out) {
		t.Fatalf("scores changed with cached vectors:\n%s\n%s", out, again)
	}

	data := t.TempDir()
	evalOut(t, "-c", cfg, "--data-dir", data, "--vector-cache", "off", "--modes", "vector", ds)
	before = len(s.Texts())
	evalOut(t, "-c", cfg, "--data-dir", data, "--vector-cache", "off", "--modes", "vector", ds)
	if got := s.Texts()[before:]; slices.ContainsFunc(got, func(x string) bool { return !queries[x] }) {
		t.Fatalf("a re-run on the same --data-dir without a cache re-embedded documents %q: unchanged ones keep their vectors", got)
	}
}

func evalOut(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := runRagd(t, append([]string{"eval"}, args...)...)
	if code != 0 {
		t.Fatalf("ragd eval %v: exit %d\n%s\n%s", args, code, stdout, stderr)
	}
	return stdout + stderr
}

// tableOf keeps the score columns of eval's table.
func tableOf(out string) string {
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Split(l, "|"); len(f) > 5 && strings.HasPrefix(l, "| ") {
			rows = append(rows, strings.Join(f[1:5], "|"))
		}
	}
	return strings.Join(rows, "\n")
}
