package modelcache_test

import (
	"encoding/json"
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

// TestMalformedMarkersAreDamaged is issue 29 item 5: a .ragd-model.json
// whose files leave the model's directory ("../../../../etc/passwd"), name
// a link, or that is not a record at all, makes the model DAMAGED in List
// and unusable through Path; nothing outside the directory is looked at.
func TestMalformedMarkersAreDamaged(t *testing.T) {
	files := fakeModel(t, 64)
	outside := []byte("a file beside the model directories\n")
	for _, tc := range []struct {
		what, problem string
		edit          func(t *testing.T, dir string)
	}{
		{"a file outside the directory", "leaves the model's directory", func(t *testing.T, dir string) {
			// The file exists with the recorded size: only confinement refuses it.
			if err := os.WriteFile(filepath.Join(filepath.Dir(dir), "secret.txt"), outside, 0o644); err != nil {
				t.Fatal(err)
			}
			editMarker(t, dir, func(m map[string]any) {
				m["files"] = append(m["files"].([]any), map[string]any{"path": "../secret.txt", "size": len(outside),
					"sha256": strings.Repeat("0", 64)})
			})
		}},
		{"an absolute path", "leaves the model's directory", func(t *testing.T, dir string) {
			editMarker(t, dir, func(m map[string]any) {
				m["files"] = []any{map[string]any{"path": "/etc/passwd", "size": 1, "sha256": strings.Repeat("0", 64)}}
			})
		}},
		{"a file that became a link", "not a regular file", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "tokenizer.json")
			elsewhere := filepath.Join(t.TempDir(), "tokenizer.json")
			if err := os.Rename(p, elsewhere); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, p); err != nil {
				t.Skipf("no symlinks here: %v", err)
			}
		}},
		{"a file under a directory that became a link out", "leaves the model's directory", func(t *testing.T, dir string) {
			// "evil/secret.txt" is a clean relative path, but evil links
			// to a directory outside the model, whose file has the
			// recorded size: List looked at it and found nothing wrong.
			out := t.TempDir()
			if err := os.WriteFile(filepath.Join(out, "secret.txt"), outside, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(out, filepath.Join(dir, "evil")); err != nil {
				t.Skipf("no symlinks here: %v", err)
			}
			editMarker(t, dir, func(m map[string]any) {
				m["files"] = append(m["files"].([]any), map[string]any{"path": "evil/secret.txt", "size": len(outside),
					"sha256": strings.Repeat("0", 64)})
			})
		}},
		{"not JSON", "malformed", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, ".ragd-model.json"), []byte("{\"name\": "), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"a bad hash", "sha256", func(t *testing.T, dir string) {
			editMarker(t, dir, func(m map[string]any) { m["files"].([]any)[0].(map[string]any)["sha256"] = "xyz" })
		}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			c := newCache(t, nil)
			dir, err := c.Import(writeDir(t, files), "my-model")
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(t, dir)
			list, err := c.List()
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].Name != "my-model" || list[0].Dir != dir || !strings.Contains(list[0].Problem, tc.problem) {
				t.Fatalf("List = %+v, want my-model DAMAGED saying %q", list, tc.problem)
			}
			if _, err := c.Path("my-model"); !errors.Is(err, modelcache.ErrNotCached) {
				t.Fatalf("Path = %v, want ErrNotCached", err)
			}
		})
	}
}

// editMarker rewrites the .ragd-model.json of dir through edit.
func editMarker(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, ".ragd-model.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
