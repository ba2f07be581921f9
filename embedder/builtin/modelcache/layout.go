package modelcache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/ragd/ragd/embedder/builtin/bert"
	"github.com/ragd/ragd/embedder/builtin/wordpiece"
)

// Layout is what the files of a model directory in the sentence-transformers
// layout say, every file but the weights: ReadLayout is the one parser of
// them, for Import (what it installs) and the built-in embedder (what it
// opens), so that an import never installs a model the embedder refuses.
type Layout struct {
	// Config is config.json, validated by the encoder (package bert).
	Config bert.Config
	// Tokenizer is tokenizer.json, loaded; its ids fit Config.VocabSize.
	Tokenizer *wordpiece.Tokenizer
	// Pooling is PoolMean or PoolCLS.
	Pooling string
	// Normalize: the vectors are L2-normalised (a Normalize module).
	Normalize bool
	// MaxSeqLength is sentence_bert_config.json's max_seq_length, 0 when
	// not given; LowerCase its do_lower_case.
	MaxSeqLength int
	LowerCase    bool
	// QueryPrompt and DocumentPrompt are config_sentence_transformers.json's
	// "prompts" for the two roles ("" when none).
	QueryPrompt, DocumentPrompt string
}

// Pooling modes Layout.Pooling takes.
const (
	PoolMean = "mean"
	PoolCLS  = "cls"
)

// Module types modules.json may name, in this order (Normalize optional).
const (
	moduleTransformer = "sentence_transformers.models.Transformer"
	modulePooling     = "sentence_transformers.models.Pooling"
	moduleNormalize   = "sentence_transformers.models.Normalize"
)

// ReadLayout reads and checks the model in dir: config.json (bert's
// rules), model.safetensors present (its contents are weightsCheck's, at
// import and through CheckWeights at load),
// tokenizer.json (loaded, ids within vocab_size), and the
// sentence-transformers files:
//
//   - modules.json: a Transformer module at the directory's root, then a
//     Pooling module in a directory inside it, then optionally Normalize;
//     any other module (Dense, ...) is refused. Without modules.json the
//     directory is a bare transformer: mean pooling (or what
//     1_Pooling/config.json says), normalised when a 2_Normalize
//     directory is there.
//   - the pooling config (required when modules.json names it): exactly
//     one of mean or CLS, word_embedding_dimension (when given) equal to
//     hidden_size;
//   - sentence_bert_config.json (optional): max_seq_length from 2 to
//     max_position_embeddings, do_lower_case;
//   - config_sentence_transformers.json (optional): the prompts, strings.
//
// Errors wrap ErrInvalidModel and name the file.
func ReadLayout(dir string) (Layout, error) {
	l, err := readLayout(dir)
	if err != nil {
		return Layout{}, fmt.Errorf("%w: %v", ErrInvalidModel, err)
	}
	return l, nil
}

func readLayout(dir string) (Layout, error) {
	l := Layout{Pooling: PoolMean}
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if errors.Is(err, fs.ErrNotExist) {
			return l, fmt.Errorf("%s is missing (a model has config.json, model.safetensors and tokenizer.json; "+
				"a sentence-transformers model also modules.json and 1_Pooling/config.json)", f)
		}
		if err != nil {
			return l, err
		}
		if !st.Mode().IsRegular() {
			return l, fmt.Errorf("%s is not a regular file", f)
		}
	}
	cfg, err := readConfig(dir)
	if err != nil {
		return l, err
	}
	l.Config = cfg

	poolingDir, poolingRequired, err := readModules(dir, &l)
	if err != nil {
		return l, err
	}
	if err := readPooling(dir, poolingDir, poolingRequired, &l); err != nil {
		return l, err
	}

	var sbert struct {
		MaxSeqLength *int `json:"max_seq_length"`
		DoLowerCase  bool `json:"do_lower_case"`
	}
	if err := readJSON(dir, "sentence_bert_config.json", &sbert); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return l, err
	}
	if n := sbert.MaxSeqLength; n != nil {
		if *n < 2 || *n > cfg.MaxPositionEmbeddings {
			return l, fmt.Errorf("sentence_bert_config.json: max_seq_length %d: want 2 (room for [CLS] and [SEP]) to max_position_embeddings %d",
				*n, cfg.MaxPositionEmbeddings)
		}
		l.MaxSeqLength = *n
	}
	l.LowerCase = sbert.DoLowerCase

	var st struct {
		Prompts map[string]string `json:"prompts"`
	}
	if err := readJSON(dir, "config_sentence_transformers.json", &st); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return l, err
	}
	l.QueryPrompt = st.Prompts["query"]
	for _, k := range []string{"document", "passage", "doc", "corpus"} {
		if p, ok := st.Prompts[k]; ok {
			l.DocumentPrompt = p
			break
		}
	}

	tok, err := wordpiece.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return l, fmt.Errorf("tokenizer.json: %v", strings.TrimPrefix(err.Error(), "wordpiece: "))
	}
	if tok.VocabSize() > cfg.VocabSize {
		return l, fmt.Errorf("tokenizer.json has ids up to %d but config.json's vocab_size is %d: the files are not of one model",
			tok.VocabSize()-1, cfg.VocabSize)
	}
	l.Tokenizer = tok
	return l, nil
}

// readConfig reads config.json with the encoder's rules.
func readConfig(dir string) (bert.Config, error) {
	var cfg bert.Config
	if err := readJSON(dir, "config.json", &cfg); err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("config.json: %v", err)
	}
	return cfg, nil
}

// readModules reads modules.json into l and returns the pooling config's
// directory and whether that config must be there.
func readModules(dir string, l *Layout) (poolingDir string, required bool, err error) {
	var modules []struct {
		Path string `json:"path"`
		Type string `json:"type"`
	}
	switch err := readJSON(dir, "modules.json", &modules); {
	case errors.Is(err, fs.ErrNotExist):
		// A bare transformer directory: mean pooling unless a pooling
		// config says otherwise, and normalisation only when a
		// 2_Normalize directory says so.
		if st, err := os.Stat(filepath.Join(dir, "2_Normalize")); err == nil && st.IsDir() {
			l.Normalize = true
		}
		return "1_Pooling", false, nil
	case err != nil:
		return "", false, err
	}
	want := []string{moduleTransformer, modulePooling, moduleNormalize}
	for i, m := range modules {
		if i >= len(want) || m.Type != want[i] {
			return "", false, fmt.Errorf("modules.json: module %d is %s: the built-in embedder runs a Transformer, a Pooling "+
				"and optionally a Normalize module, in that order", i, m.Type)
		}
		switch m.Type {
		case moduleTransformer:
			if m.Path != "" {
				return "", false, fmt.Errorf("modules.json: the Transformer module is at %q: the built-in embedder reads it from the model's root", m.Path)
			}
		case modulePooling:
			if m.Path == "" || !localSlashPath(m.Path) {
				return "", false, fmt.Errorf("modules.json: pooling path %q is not a directory inside the model", m.Path)
			}
			poolingDir = m.Path
		case moduleNormalize:
			l.Normalize = true
		}
	}
	if poolingDir == "" {
		return "", false, errors.New("modules.json names no Transformer and Pooling module")
	}
	return poolingDir, true, nil
}

// readPooling reads the pooling config in poolingDir into l.
func readPooling(dir, poolingDir string, required bool, l *Layout) error {
	file := path.Join(poolingDir, "config.json")
	var pool struct {
		Dim      int  `json:"word_embedding_dimension"`
		CLS      bool `json:"pooling_mode_cls_token"`
		Mean     bool `json:"pooling_mode_mean_tokens"`
		Max      bool `json:"pooling_mode_max_tokens"`
		MeanSqrt bool `json:"pooling_mode_mean_sqrt_len_tokens"`
		Weighted bool `json:"pooling_mode_weightedmean_tokens"`
		Last     bool `json:"pooling_mode_lasttoken"`
	}
	switch err := readJSON(dir, file, &pool); {
	case errors.Is(err, fs.ErrNotExist) && !required:
		return nil
	case err != nil:
		return err
	}
	if pool.Max || pool.MeanSqrt || pool.Weighted || pool.Last || pool.CLS == pool.Mean {
		return fmt.Errorf("%s: the pooling must be exactly one of mean or cls (max, mean_sqrt_len, weightedmean and lasttoken are not supported)", file)
	}
	if pool.CLS {
		l.Pooling = PoolCLS
	}
	if pool.Dim != 0 && pool.Dim != l.Config.HiddenSize {
		return fmt.Errorf("%s: word_embedding_dimension %d is not config.json's hidden_size %d", file, pool.Dim, l.Config.HiddenSize)
	}
	return nil
}

// readJSON decodes dir/name (slash-separated) into v; a missing file is
// an error matching fs.ErrNotExist that names it.
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
