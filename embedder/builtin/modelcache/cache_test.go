package modelcache_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ragd/ragd/embedder/builtin/modelcache"
)

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"all-MiniLM-L6-v2":                       "sentence-transformers/all-MiniLM-L6-v2",
		"all-minilm-l6-v2":                       "sentence-transformers/all-MiniLM-L6-v2",
		"sentence-transformers/all-minilm-L6-v2": "sentence-transformers/all-MiniLM-L6-v2",
		"bge-small-en-v1.5":                      "BAAI/bge-small-en-v1.5",
		"intfloat/e5-small-v2":                   "intfloat/e5-small-v2",
		"my_model.v2":                            "my_model.v2",
	} {
		if got, err := modelcache.Canonical(in); err != nil || got != want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "/etc/passwd", "../x", "a/../b", "a/b/c", "a//b", ".hidden", "org/.x",
		"-flag", `a\b`, "C:x", "a b", "a--b", "org/", "é", strings.Repeat("x", 97)} {
		if got, err := modelcache.Canonical(in); !errors.Is(err, modelcache.ErrInvalidName) {
			t.Errorf("Canonical(%q) = %q, %v; want ErrInvalidName", in, got, err)
		}
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv(modelcache.EnvCache, "/srv/models")
	if d, err := modelcache.DefaultDir(); err != nil || d != "/srv/models" {
		t.Fatalf("DefaultDir with %s = %q, %v", modelcache.EnvCache, d, err)
	}
	t.Setenv(modelcache.EnvCache, "")
	base, err := os.UserCacheDir()
	if err != nil {
		t.Skip(err)
	}
	if d, err := modelcache.DefaultDir(); err != nil || d != filepath.Join(base, "ragd", "models") {
		t.Fatalf("DefaultDir = %q, %v", d, err)
	}
}

func TestDefaultBaseURLFromEnv(t *testing.T) {
	t.Setenv(modelcache.EnvBaseURL, "")
	t.Setenv(modelcache.EnvHFEndpoint, "")
	if u := modelcache.DefaultBaseURLFromEnv(); u != "https://huggingface.co" {
		t.Fatalf("default %q", u)
	}
	t.Setenv(modelcache.EnvHFEndpoint, "https://mirror.example/")
	if u := modelcache.DefaultBaseURLFromEnv(); u != "https://mirror.example" {
		t.Fatalf("with HF_ENDPOINT %q", u)
	}
	t.Setenv(modelcache.EnvBaseURL, "http://127.0.0.1:9999")
	if u := modelcache.DefaultBaseURLFromEnv(); u != "http://127.0.0.1:9999" {
		t.Fatalf("with %s %q", modelcache.EnvBaseURL, u)
	}
}

// TestKnownModelsArePinned: every pin names a full commit and sizes and
// SHA-256s for the files the built-in embedder opens.
func TestKnownModelsArePinned(t *testing.T) {
	hexRe := regexp.MustCompile(`^[0-9a-f]+$`)
	for _, m := range modelcache.KnownModels() {
		if len(m.Revision) != 40 || !hexRe.MatchString(m.Revision) {
			t.Errorf("%s: revision %q is not a commit hash", m.Name, m.Revision)
		}
		have := map[string]bool{}
		for _, f := range m.Files {
			if len(f.SHA256) != 64 || !hexRe.MatchString(f.SHA256) || f.Size <= 0 || have[f.Path] {
				t.Errorf("%s: bad pin %+v", m.Name, f)
			}
			have[f.Path] = true
		}
		for _, need := range []string{"config.json", "model.safetensors", "tokenizer.json", "modules.json",
			"sentence_bert_config.json", "config_sentence_transformers.json", "1_Pooling/config.json"} {
			if !have[need] {
				t.Errorf("%s: %s is not pinned", m.Name, need)
			}
		}
		if got, err := modelcache.Canonical(m.Name); err != nil || got != m.Name {
			t.Errorf("Canonical(%s) = %q, %v", m.Name, got, err)
		}
	}
}

func TestListOfAMissingCacheIsEmpty(t *testing.T) {
	c := &modelcache.Cache{Dir: filepath.Join(t.TempDir(), "absent")}
	if list, err := c.List(); err != nil || len(list) != 0 {
		t.Fatalf("List = %v, %v", list, err)
	}
	if _, err := c.Path("all-MiniLM-L6-v2"); !errors.Is(err, modelcache.ErrNotCached) {
		t.Fatalf("Path = %v", err)
	}
}
