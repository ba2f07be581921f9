package main

import (
	"bytes"
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

	"github.com/ragd/ragd/embedder/builtin"
	"github.com/ragd/ragd/embedder/hashing"
	"github.com/ragd/ragd/internal/fakeembed"
	"github.com/ragd/ragd/internal/integration"
	"github.com/ragd/ragd/spi"
)

func runEmbed(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runWithInput(context.Background(), append([]string{"embed"}, args...), strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// vectorLines parses embed's output: one JSON array per line.
func vectorLines(t *testing.T, stdout string) [][]float32 {
	t.Helper()
	var out [][]float32
	for _, l := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		if l == "" && stdout == "" {
			break
		}
		var v []float32
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %q is not a JSON array of numbers: %v", l, err)
		}
		out = append(out, v)
	}
	return out
}

func TestEmbedHashing(t *testing.T) {
	t.Parallel()
	texts := []string{"boundary layer transition", "", "Überschall wing"}
	code, stdout, stderr := runEmbed(t, strings.Join(texts, "\r\n")+"\n", "-c", writeConfig(t, t.TempDir(), "  kind: hashing\n  dimension: 64\n"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	h, err := hashing.New(hashing.Config{Dimension: 64})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := h.Embed(context.Background(), texts)
	got := vectorLines(t, stdout)
	if len(got) != len(want) {
		t.Fatalf("%d lines for %d texts:\n%s", len(got), len(want), stdout)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("line %d = %v, want the hashing embedder's %v (bit for bit through JSON)", i+1, got[i], want[i])
		}
	}
	if code, stdout, _ := runEmbed(t, "", "-c", writeConfig(t, t.TempDir(), "  kind: hashing\n")); code != 0 || stdout != "" {
		t.Fatalf("empty input: exit %d, output %q", code, stdout)
	}
}

func TestEmbedServerRolesAndBatches(t *testing.T) {
	t.Parallel()
	s := fakeembed.New(t, 16)
	cfg := filepath.Join(t.TempDir(), "rag.yaml")
	if err := os.WriteFile(cfg, []byte("auth: {enabled: false}\nembedder:\n  kind: openai\n  base_url: "+strconv.Quote(s.URL)+
		"\n  model: fake\n  dimension: 16\n  max_retries: 0\n  query_prefix: 'query: '\n  document_prefix: 'passage: '\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := "a\nb\nc\nd\ne\n"
	code, stdout, stderr := runEmbed(t, in, "-c", cfg, "--batch", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := vectorLines(t, stdout)
	for i, text := range strings.Fields(in) {
		if !slices.Equal(got[i], fakeembed.Vector("passage: "+text, 16)) {
			t.Fatalf("line %d = %v, want the server's vector of %q", i+1, got[i], "passage: "+text)
		}
	}
	if reqs := fmt.Sprint(s.Requests()); reqs != "[[passage: a passage: b] [passage: c passage: d] [passage: e]]" {
		t.Fatalf("requests %s, want batches of 2 with the document prefix", reqs)
	}
	code, stdout, _ = runEmbed(t, "a\n", "-c", cfg, "--input-type", "query")
	if code != 0 || !slices.Equal(vectorLines(t, stdout)[0], fakeembed.Vector("query: a", 16)) {
		t.Fatalf("--input-type query: exit %d, %s", code, stdout)
	}

	s.SetHandle(func(_ []string, w http.ResponseWriter, _ *http.Request) bool {
		http.Error(w, `{"error":"model crashed"}`, http.StatusInternalServerError)
		return true
	})
	code, stdout, stderr = runEmbed(t, "a\nb\nc\n", "-c", cfg, "--batch", "2")
	if code != exitFailure || stdout != "" || !strings.Contains(stderr, "lines 1-2") || !strings.Contains(stderr, "model crashed") {
		t.Fatalf("failing server: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
}

func TestEmbedBadInput(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, t.TempDir(), "  kind: hashing\n")
	code, stdout, stderr := runEmbed(t, "fine\nbad \xff byte\n", "-c", cfg, "--batch", "1")
	if code != exitFailure || !strings.Contains(stderr, "line 2: not valid UTF-8") || len(vectorLines(t, stdout)) != 1 {
		t.Fatalf("invalid UTF-8: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	if code, _, stderr := runEmbed(t, "x\n", "-c", cfg, "--input-type", "passage"); code != exitUsage || !strings.Contains(stderr, "query or document") {
		t.Fatalf("bad --input-type: exit %d, %s", code, stderr)
	}
}

// TestEmbedBuiltin: with the built-in model, ragd embed writes exactly the
// model's vectors, for each role.
func TestEmbedBuiltin(t *testing.T) {
	t.Parallel()
	dir := integration.ModelDir(t)
	cfg := writeConfig(t, t.TempDir(), "  kind: builtin\n  model: all-MiniLM-L6-v2\n  model_dir: "+strconv.Quote(dir)+"\n")
	m, err := builtin.Open(builtin.Config{Dir: dir, Name: "sentence-transformers/all-MiniLM-L6-v2"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	texts := []string{"boundary layer transition at supersonic speed", "Überschall"}
	for role, e := range map[string]spi.Embedder{"query": m.Queries(), "document": m.Documents()} {
		code, stdout, stderr := runEmbed(t, strings.Join(texts, "\n")+"\n", "-c", cfg, "--input-type", role)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", role, code, stderr)
		}
		want, err := e.Embed(context.Background(), texts)
		if err != nil {
			t.Fatal(err)
		}
		got := vectorLines(t, stdout)
		for i := range want {
			if !slices.Equal(got[i], want[i]) || len(got[i]) != 384 {
				t.Fatalf("%s line %d differs from the model's vector", role, i+1)
			}
		}
	}
}
