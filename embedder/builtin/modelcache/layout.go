package modelcache

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// maxSafetensorsHeader bounds the JSON header of model.safetensors.
const maxSafetensorsHeader = 100 << 20

// validateLayout checks that dir holds a model in the sentence-transformers
// layout the built-in embedder opens: modules.json naming a Transformer
// and a Pooling module, config.json of a transformer encoder, the pooling
// config, tokenizer.json, and a model.safetensors whose header fits the
// file. It parses what it checks but does not judge the architecture: the
// embedder says which ones it runs. Errors wrap ErrInvalidModel.
func validateLayout(dir string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidModel, fmt.Sprintf(format, args...))
	}
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "modules.json"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return bad("%s is missing (a sentence-transformers model has config.json, model.safetensors, "+
					"tokenizer.json, modules.json and 1_Pooling/config.json)", f)
			}
			return bad("%v", err)
		}
		if !st.Mode().IsRegular() {
			return bad("%s is not a regular file", f)
		}
	}

	var modules []struct {
		Path string `json:"path"`
		Type string `json:"type"`
	}
	if err := readJSON(dir, "modules.json", &modules); err != nil {
		return bad("%v", err)
	}
	poolingDir, haveTransformer := "", false
	for _, m := range modules {
		switch {
		case strings.HasSuffix(m.Type, ".Transformer"):
			haveTransformer = true
		case strings.HasSuffix(m.Type, ".Pooling"):
			poolingDir = m.Path
		}
	}
	if !haveTransformer || poolingDir == "" {
		return bad("modules.json names no Transformer and Pooling module")
	}
	if !filepath.IsLocal(poolingDir) {
		return bad("modules.json: pooling path %q leaves the model directory", poolingDir)
	}

	var cfg struct {
		ModelType string `json:"model_type"`
		Hidden    int    `json:"hidden_size"`
		Layers    int    `json:"num_hidden_layers"`
		Heads     int    `json:"num_attention_heads"`
		Vocab     int    `json:"vocab_size"`
	}
	if err := readJSON(dir, "config.json", &cfg); err != nil {
		return bad("%v", err)
	}
	if cfg.ModelType == "" || cfg.Hidden <= 0 || cfg.Layers <= 0 || cfg.Heads <= 0 || cfg.Vocab <= 0 {
		return bad("config.json: want model_type and positive hidden_size, num_hidden_layers, num_attention_heads, vocab_size")
	}

	poolingFile := path.Join(filepath.ToSlash(poolingDir), "config.json")
	var pool struct {
		Dim      int  `json:"word_embedding_dimension"`
		CLS      bool `json:"pooling_mode_cls_token"`
		Mean     bool `json:"pooling_mode_mean_tokens"`
		Max      bool `json:"pooling_mode_max_tokens"`
		MeanSqrt bool `json:"pooling_mode_mean_sqrt_len_tokens"`
	}
	if err := readJSON(dir, poolingFile, &pool); err != nil {
		return bad("%v", err)
	}
	if pool.Dim != cfg.Hidden {
		return bad("%s: word_embedding_dimension %d is not config.json's hidden_size %d", poolingFile, pool.Dim, cfg.Hidden)
	}
	if !pool.CLS && !pool.Mean && !pool.Max && !pool.MeanSqrt {
		return bad("%s: no pooling mode is on", poolingFile)
	}

	var st struct {
		MaxSeq *int `json:"max_seq_length"`
	}
	if err := readJSON(dir, "sentence_bert_config.json", &st); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return bad("%v", err)
	}
	if st.MaxSeq != nil && *st.MaxSeq <= 0 {
		return bad("sentence_bert_config.json: max_seq_length %d", *st.MaxSeq)
	}

	var tok struct {
		Model json.RawMessage `json:"model"`
	}
	if err := readJSON(dir, "tokenizer.json", &tok); err != nil {
		return bad("%v", err)
	}
	if len(tok.Model) == 0 || tok.Model[0] != '{' {
		return bad("tokenizer.json has no tokenizer model")
	}
	if err := checkSafetensors(filepath.Join(dir, "model.safetensors")); err != nil {
		return bad("model.safetensors: %v", err)
	}
	return nil
}

// readJSON decodes dir/name (slash-separated) into v.
func readJSON(dir, name string, v any) error {
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s is missing: %w", name, fs.ErrNotExist)
		}
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	return nil
}

// checkSafetensors reads the header of a safetensors file (an 8-byte
// little-endian length, then a JSON object of tensors with data offsets)
// and checks that it names at least one tensor and that every tensor's
// bytes lie inside the file: a truncated or foreign file fails here
// rather than in the embedder.
func checkSafetensors(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	var lenBuf [8]byte
	if _, err := io.ReadFull(f, lenBuf[:]); err != nil {
		return fmt.Errorf("too short for a header (%d bytes)", st.Size())
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n == 0 || n > maxSafetensorsHeader || int64(n) > st.Size()-8 {
		return fmt.Errorf("header length %d does not fit a %d-byte file", n, st.Size())
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return err
	}
	var tensors map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &tensors); err != nil {
		return fmt.Errorf("header is not a JSON object: %v", err)
	}
	data := st.Size() - 8 - int64(n)
	count := 0
	for name, raw := range tensors {
		if name == "__metadata__" {
			continue
		}
		var t struct {
			Offsets []int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &t); err != nil || len(t.Offsets) != 2 {
			return fmt.Errorf("tensor %q has no data_offsets", name)
		}
		if t.Offsets[0] < 0 || t.Offsets[0] > t.Offsets[1] || t.Offsets[1] > data {
			return fmt.Errorf("tensor %q lies outside the file (offsets %v, %d data bytes): truncated?", name, t.Offsets, data)
		}
		count++
	}
	if count == 0 {
		return errors.New("no tensors")
	}
	return nil
}
