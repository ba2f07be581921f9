package builtin_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragd/ragd/embedder/builtin"
)

// copyTiny copies testdata/tiny into a temporary directory and applies edits
// (file name → new content; "" removes the file).
func copyTiny(t *testing.T, edits map[string]string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir("testdata/tiny", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel("testdata/tiny", path)
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), raw, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range edits {
		p := filepath.Join(dst, name)
		if content == "" {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestOpenRejects: what the built-in embedder does not implement fails
// Open with an error that names it.
func TestOpenRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edits map[string]string
		want  string
	}{
		{"max pooling", map[string]string{"1_Pooling/config.json": `{"pooling_mode_max_tokens": true}`}, "pooling"},
		{"two poolings", map[string]string{"1_Pooling/config.json": `{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true}`}, "pooling"},
		{"a Dense module", map[string]string{"modules.json": `[{"path": "2_Dense", "type": "sentence_transformers.models.Dense"}]`}, "Dense"},
		{"roberta", map[string]string{"config.json": `{"model_type": "roberta"}`}, "model_type"},
		{"no weights", map[string]string{"model.safetensors": ""}, "model.safetensors"},
		{"no tokenizer", map[string]string{"tokenizer.json": ""}, "tokenizer.json"},
		{"bad modules.json", map[string]string{"modules.json": `{`}, "modules.json"},
		{"another model's tokenizer", map[string]string{"tokenizer.json": tokenizerWithID(t, 5000)}, "vocab_size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := builtin.Open(builtin.Config{Dir: copyTiny(t, tc.edits)})
			t.Log(err)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// TestOpenBareTransformer: a directory without the sentence-transformers
// files (no modules.json, pooling or prompts) embeds with mean pooling, no
// normalisation, no prefixes, at the model's position count.
func TestOpenBareTransformer(t *testing.T) {
	dir := copyTiny(t, map[string]string{"modules.json": "", "1_Pooling/config.json": "",
		"sentence_bert_config.json": "", "config_sentence_transformers.json": ""})
	m, err := builtin.Open(builtin.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	id := m.Identity()
	for _, want := range []string{"pooling=mean", "normalize=false", "max_seq_length=64"} {
		if !strings.Contains(id, want) {
			t.Errorf("Identity() = %s, want %s in it", id, want)
		}
	}
	if strings.Contains(id, "prefix") {
		t.Errorf("Identity() = %s: no prefixes expected", id)
	}
}

// tokenizerWithID is the tiny model's tokenizer.json with one more token, of
// the given id.
func tokenizerWithID(t *testing.T, id int) string {
	t.Helper()
	raw, err := os.ReadFile("testdata/tiny/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	var tj map[string]any
	if err := json.Unmarshal(raw, &tj); err != nil {
		t.Fatal(err)
	}
	tj["model"].(map[string]any)["vocab"].(map[string]any)["zebra"] = id
	out, err := json.Marshal(tj)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestOpenNormalizeDirectory: without modules.json, a 2_Normalize directory
// turns normalisation on.
func TestOpenNormalizeDirectory(t *testing.T) {
	dir := copyTiny(t, map[string]string{"modules.json": ""})
	if err := os.Mkdir(filepath.Join(dir, "2_Normalize"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := builtin.Open(builtin.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if id := m.Identity(); !strings.Contains(id, "normalize=true") {
		t.Errorf("Identity() = %s, want normalize=true", id)
	}
}
