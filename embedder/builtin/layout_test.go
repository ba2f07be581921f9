package builtin_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragd/ragd/embedder/builtin"
	"github.com/ragd/ragd/embedder/builtin/modelcache"
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

// TestImportAndOpenAgree is issue 29 item 5: the importer and the loader
// read a model's layout with one parser, so `ragd model import` installs
// exactly what the built-in embedder opens. Before, the importer took
// max or mean_sqrt_len pooling and modules the loader refuses, refused a
// bare transformer the loader opens, and took configs, tokenizers and
// max_seq_length values the loader refuses.
func TestImportAndOpenAgree(t *testing.T) {
	modules := func(extra string) string {
		return `[{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
 {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}` + extra + `]`
	}
	for _, tc := range []struct {
		name  string
		edits map[string]string
		ok    bool
	}{
		{"as is", nil, true},
		{"bare transformer", map[string]string{"modules.json": "", "1_Pooling/config.json": "",
			"sentence_bert_config.json": "", "config_sentence_transformers.json": ""}, true},
		{"mean pooling", map[string]string{"1_Pooling/config.json": `{"word_embedding_dimension": 32, "pooling_mode_mean_tokens": true}`}, true},
		{"max pooling", map[string]string{"1_Pooling/config.json": `{"word_embedding_dimension": 32, "pooling_mode_max_tokens": true}`}, false},
		{"mean_sqrt_len pooling", map[string]string{"1_Pooling/config.json": `{"word_embedding_dimension": 32, "pooling_mode_mean_sqrt_len_tokens": true}`}, false},
		{"lasttoken pooling", map[string]string{"1_Pooling/config.json": `{"word_embedding_dimension": 32, "pooling_mode_lasttoken": true}`}, false},
		{"no pooling mode", map[string]string{"1_Pooling/config.json": `{"word_embedding_dimension": 32}`}, false},
		{"pooling of another width", map[string]string{"1_Pooling/config.json": `{"word_embedding_dimension": 16, "pooling_mode_cls_token": true}`}, false},
		{"pooling config missing", map[string]string{"1_Pooling/config.json": ""}, false},
		{"a Dense module", map[string]string{"modules.json": modules(`, {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}`)}, false},
		{"a look-alike module", map[string]string{"modules.json": modules(`, {"idx": 2, "name": "2", "path": "2_Normalize", "type": "evil.models.Normalize"}`)}, false},
		{"pooling path leaves the model", map[string]string{"modules.json": strings.Replace(modules(""), `"1_Pooling"`, `"../1_Pooling"`, 1)}, false},
		{"no Transformer module", map[string]string{"modules.json": `[{"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]`}, false},
		{"roberta", map[string]string{"config.json": strings.Replace(readTiny(t, "config.json"), `"bert"`, `"roberta"`, 1)}, false},
		{"max_seq_length past the positions", map[string]string{"sentence_bert_config.json": `{"max_seq_length": 1000}`}, false},
		{"another model's tokenizer", map[string]string{"tokenizer.json": tokenizerWithID(t, 5000)}, false},
		{"prompts not strings", map[string]string{"config_sentence_transformers.json": `{"prompts": {"query": 1}}`}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTiny(t, tc.edits)
			m, openErr := builtin.Open(builtin.Config{Dir: dir})
			if m != nil {
				m.Close()
			}
			cache := &modelcache.Cache{Dir: t.TempDir()}
			_, importErr := cache.Import(dir, "tiny")
			if (openErr == nil) != tc.ok || (importErr == nil) != tc.ok {
				t.Fatalf("Open: %v\nImport: %v\nwant both to %s", openErr, importErr, map[bool]string{true: "accept", false: "refuse"}[tc.ok])
			}
			if importErr != nil && !errors.Is(importErr, modelcache.ErrInvalidModel) {
				t.Fatalf("Import: %v, want ErrInvalidModel", importErr)
			}
		})
	}
}

func readTiny(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata/tiny", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOpenRefusesNonFiniteWeights is issue 29 item 5: a model whose
// weights hold NaN or Inf was opened (and reported healthy) while every
// vector it made was NaN; Open now refuses it, naming the tensor.
func TestOpenRefusesNonFiniteWeights(t *testing.T) {
	raw, err := os.ReadFile("testdata/tiny/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(raw)
	var hdr map[string]struct {
		DType   string   `json:"dtype"`
		Offsets [2]int64 `json:"data_offsets"`
	}
	if err := json.Unmarshal(raw[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	const name = "bert.encoder.layer.1.attention.output.dense.weight"
	ti, ok := hdr[name]
	if !ok || ti.DType != "F32" {
		t.Fatalf("the tiny model has no F32 tensor %s: %+v", name, ti)
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		b := bytes.Clone(raw)
		binary.LittleEndian.PutUint32(b[8+int64(n)+ti.Offsets[0]+4*5:], math.Float32bits(bad))
		dir := copyTiny(t, map[string]string{"model.safetensors": string(b)})
		m, err := builtin.Open(builtin.Config{Dir: dir})
		if err == nil {
			m.Close()
			t.Fatalf("Open took weights holding %v", bad)
		}
		if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "NaN or Inf") {
			t.Fatalf("Open: %v, want the tensor named", err)
		}
	}
}
