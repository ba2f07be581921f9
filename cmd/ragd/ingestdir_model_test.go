package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ragd/ragd/client"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/internal/integration"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// TestIngestDirRepositoryDocsWithTheModel ingests this repository's docs/
// into a ragd embedding with the real model (RAG_TEST_MODEL_DIR), counting
// tokens with the model's own tokenizer (--tokenizer auto finds it), and
// asks, through the vector source alone, a question that shares no word
// but "what" with the section that answers it (the runbook "Everything is
// slow"); then runs the README's "Point it at your docs" commands as
// given, the query through every source. Not parallel: see TestMain.
func TestIngestDirRepositoryDocsWithTheModel(t *testing.T) {
	modelDir := integration.ModelDir(t)
	srv := startTestRagd(t, func(cfg *config.Config) {
		cfg.Embedder.Kind = config.KindBuiltin
		cfg.Embedder.ModelDir = modelDir
		// The subject is chunking and what the model finds, not how long
		// a batch may take: under -race on a loaded machine one Embed
		// call of 64 chunks outlasted the 30 s default five times over
		// (a CI run, 504 on every retry). A request's deadline has its
		// own tests.
		cfg.Server.RequestTimeoutS = 600
		cfg.Server.WriteTimeoutS = 660
	})
	ingestArgs, queryArgs := readmeDocsCommands(t)
	state := filepath.Join(t.TempDir(), "state.db")
	args := append(ingestArgs, "--server", srv.URL, "--state", state, "--progress", "none")
	code, stdout, stderr := runRagd(t, args...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("first run:\n%s", stdout)
	if !strings.Contains(stderr, "tokens counted with the tokenizer of the server's model") {
		t.Fatalf("--tokenizer auto did not use the server's model:\n%s", stderr)
	}
	chunks := srv.storedChunks(t, "docs")
	files := map[string]bool{}
	for _, d := range chunks {
		files[d.Metadata["file"].Str()] = true
	}
	if len(files) < 10 || !files["operations.md"] || !files["ingest.md"] || len(chunks) < 100 {
		t.Fatalf("%d chunks of %d files: %v", len(chunks), len(files), slices.Sorted(func(yield func(string) bool) {
			for f := range files {
				if !yield(f) {
					return
				}
			}
		}))
	}

	c, err := client.New(client.Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	off := false
	res, err := c.Query(context.Background(), retriever.Query{
		Text:  "my users all complain that answers take ages: what do I check first?",
		Limit: 3,
		Sources: map[string]retriever.SourceOptions{
			spi.SourceKeyword: {Enabled: &off}, spi.SourceGraph: {Enabled: &off},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	found := false
	for _, h := range res.Hits {
		if h.Document == nil {
			continue
		}
		m := h.Document.Metadata
		got = append(got, m["file"].Str()+": "+m["heading"].Str())
		if isSlowRunbook(h.Document) {
			found = true
		}
	}
	if !found {
		t.Fatalf("the top 3 hits of the vector source are %q; want operations.md's runbook \"Everything is slow\"", got)
	}
	t.Logf("%d chunks of %d files; top 3: %q", len(chunks), len(files), got)

	// The README's query, as a user runs it (every source).
	code, stdout, stderr = runRagd(t, append(queryArgs, "--server", srv.URL, "--json")...)
	if code != 0 {
		t.Fatalf("README query: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var readme retriever.Result
	if err := json.Unmarshal([]byte(stdout), &readme); err != nil {
		t.Fatalf("README query: %v\n%s", err, stdout)
	}
	got, found = nil, false
	for _, h := range readme.Hits[:min(3, len(readme.Hits))] {
		got = append(got, h.Document.Metadata["file"].Str()+": "+h.Document.Metadata["heading"].Str())
		found = found || isSlowRunbook(h.Document)
	}
	if !found {
		t.Fatalf("the top 3 hits of the README's query are %q; want operations.md's runbook \"Everything is slow\"", got)
	}
	t.Logf("README query's top 3: %q", got)

	// Nothing changed: the rerun sends nothing.
	code, stdout, stderr = runRagd(t, args...)
	if code != 0 || !strings.Contains(stdout, "  sent     0 chunks") {
		t.Fatalf("rerun: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// isSlowRunbook reports whether d is a chunk of operations.md's runbook
// for a slow service.
func isSlowRunbook(d *spi.Document) bool {
	return d != nil && d.Metadata["file"].Str() == "operations.md" && strings.HasSuffix(d.Metadata["heading"].Str(), "Runbooks > Everything is slow")
}

var docsBlock = regexp.MustCompile("(?s)<!-- quickstart:docs -->\\s*```[a-z]*\\n(.*?)\\n```")

// readmeDocsCommands returns the arguments of the README's "Point it at
// your docs" commands (go run ./cmd/ragd ARGS), paths made relative to
// this package's directory.
func readmeDocsCommands(t *testing.T) (ingest, query []string) {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := docsBlock.FindSubmatch(b)
	if m == nil {
		t.Fatal("README.md has no <!-- quickstart:docs --> code block")
	}
	for _, line := range strings.Split(strings.TrimSpace(string(m[1])), "\n") {
		args, ok := strings.CutPrefix(line, "go run ./cmd/ragd ")
		if !ok {
			t.Fatalf("README docs command %q does not run ./cmd/ragd", line)
		}
		words := shellWords(t, args)
		switch words[0] {
		case "ingest":
			words[1] = filepath.Join("../..", words[1])
			ingest = words
		case "query":
			query = words
		}
	}
	if ingest == nil || query == nil {
		t.Fatalf("README docs block lacks an ingest or a query:\n%s", m[1])
	}
	return ingest, query
}

// shellWords splits s at spaces, keeping double-quoted words whole.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				t.Fatalf("unclosed quote in %q", s)
			}
			words, s = append(words, s[1:1+end]), s[2+end:]
			continue
		}
		w, rest, _ := strings.Cut(s, " ")
		words, s = append(words, w), rest
	}
	return words
}
