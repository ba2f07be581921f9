package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ragd/ragd/client"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// TestIngestDirRepositoryDocsWithTheModel ingests this repository's docs/
// into a ragd embedding with the real model (RAG_TEST_MODEL_DIR), counting
// tokens with the model's own tokenizer (--tokenizer auto finds it), and
// asks, through the vector source alone, a question that shares almost no
// words with the section that answers it.
func TestIngestDirRepositoryDocsWithTheModel(t *testing.T) {
	modelDir := testenv.ModelDir(t)
	srv := startTestRagd(t, func(cfg *config.Config) {
		cfg.Embedder.Kind = config.KindBuiltin
		cfg.Embedder.ModelDir = modelDir
	})
	docs, err := filepath.Abs("../../docs")
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state.db")
	args := []string{"ingest", docs, "--server", srv.URL, "--state", state, "--progress", "none"}
	code, stdout, stderr := runRagd(t, args...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "tokens counted with the tokenizer of the server's model") {
		t.Fatalf("--tokenizer auto did not use the server's model:\n%s", stderr)
	}
	chunks := srv.storedChunks(t, "docs")
	files := map[string]bool{}
	for _, d := range chunks {
		files[d.Metadata["file"]] = true
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
	for _, q := range []string{
		"how do I take a backend offline for planned work so that queries skip it until I am done?",
		"keep the circuit open on purpose while we upgrade the database",
		"what happens when the embedding model is missing from the machine",
		"which texts are never embedded twice",
		"how are chunk ids kept stable between runs",
		"the service slows down for every user: where to look first",
		"an agent tool calls ragd over the model context protocol",
	} {
		r, err := c.Query(context.Background(), retriever.Query{Text: q, Limit: 5,
			Sources: map[string]retriever.SourceOptions{spi.SourceKeyword: {Enabled: &off}, spi.SourceGraph: {Enabled: &off}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range r.Hits {
			t.Logf("%q: %s: %s", q, h.Document.Metadata["file"], h.Document.Metadata["heading"])
		}
	}
	res, err := c.Query(context.Background(), retriever.Query{
		Text:  "I have to shut the database down for an upgrade: how do I keep searches from going to it until I am finished?",
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
		got = append(got, m["file"]+": "+m["heading"])
		if m["file"] == "operations.md" && strings.Contains(strings.ToLower(m["heading"]), "maintenance") {
			found = true
		}
	}
	if !found {
		t.Fatalf("the top 3 hits are %q; want a maintenance section of operations.md", got)
	}
	t.Logf("%d chunks of %d files; top 3: %q", len(chunks), len(files), got)

	// Nothing changed: the rerun sends nothing.
	code, stdout, stderr = runRagd(t, args...)
	if code != 0 || !strings.Contains(stdout, "  sent     0 chunks") {
		t.Fatalf("rerun: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
