package builtin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ragd/ragd/embedder/builtin/bert"
)

// layout is what the sentence-transformers files of a model directory say.
type layout struct {
	pooling        bert.Pooling
	poolingName    string
	normalize      bool
	maxSeqLength   int
	lowerCase      bool
	queryPrompt    string
	documentPrompt string
}

// readJSON decodes dir/name into v; a missing file is reported as
// fs.ErrNotExist so optional files can be skipped.
func readJSON(dir, name string, v any) error {
	raw, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func readLayout(dir string) (layout, error) {
	l := layout{pooling: bert.PoolMean, poolingName: "mean"}
	poolingDir := "1_Pooling"

	var modules []struct {
		Path string `json:"path"`
		Type string `json:"type"`
	}
	switch err := readJSON(dir, "modules.json", &modules); {
	case errors.Is(err, fs.ErrNotExist):
		// A bare transformer directory: mean pooling, and normalisation
		// only when a 2_Normalize directory says so.
		if st, err := os.Stat(filepath.Join(dir, "2_Normalize")); err == nil && st.IsDir() {
			l.normalize = true
		}
	case err != nil:
		return l, err
	default:
		for _, m := range modules {
			switch m.Type {
			case "sentence_transformers.models.Transformer":
			case "sentence_transformers.models.Pooling":
				poolingDir = m.Path
			case "sentence_transformers.models.Normalize":
				l.normalize = true
			default:
				return l, fmt.Errorf("modules.json: module %s is not supported (the built-in embedder runs Transformer, Pooling and Normalize)", m.Type)
			}
		}
	}

	var pool struct {
		CLS      bool `json:"pooling_mode_cls_token"`
		Mean     bool `json:"pooling_mode_mean_tokens"`
		Max      bool `json:"pooling_mode_max_tokens"`
		MeanSqrt bool `json:"pooling_mode_mean_sqrt_len_tokens"`
		Weighted bool `json:"pooling_mode_weightedmean_tokens"`
		Last     bool `json:"pooling_mode_lasttoken"`
	}
	switch err := readJSON(dir, filepath.Join(poolingDir, "config.json"), &pool); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return l, err
	default:
		switch {
		case pool.Max || pool.MeanSqrt || pool.Weighted || pool.Last || pool.CLS == pool.Mean:
			return l, fmt.Errorf("%s/config.json: the pooling must be exactly one of mean or cls (max, mean_sqrt_len, weightedmean and lasttoken are not supported)", poolingDir)
		case pool.CLS:
			l.pooling, l.poolingName = bert.PoolCLS, "cls"
		}
	}

	var sbert struct {
		MaxSeqLength int  `json:"max_seq_length"`
		DoLowerCase  bool `json:"do_lower_case"`
	}
	if err := readJSON(dir, "sentence_bert_config.json", &sbert); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return l, err
	}
	l.maxSeqLength, l.lowerCase = sbert.MaxSeqLength, sbert.DoLowerCase

	var st struct {
		Prompts map[string]string `json:"prompts"`
	}
	if err := readJSON(dir, "config_sentence_transformers.json", &st); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return l, err
	}
	l.queryPrompt = st.Prompts["query"]
	for _, k := range []string{"document", "passage", "doc", "corpus"} {
		if p, ok := st.Prompts[k]; ok {
			l.documentPrompt = p
			break
		}
	}
	return l, nil
}
