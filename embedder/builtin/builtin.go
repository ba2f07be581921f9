// Package builtin is ragd's in-process transformer embedder: it runs a
// BERT-family sentence-transformers model (all-MiniLM-L6-v2 by default; e5,
// bge and other BERT encoders) from a model directory, in pure Go, with no
// server and no cgo.
//
// A model directory has the sentence-transformers layout: config.json and
// model.safetensors (the encoder, package bert), tokenizer.json (WordPiece,
// package wordpiece), modules.json, sentence_bert_config.json
// (max_seq_length, do_lower_case), 1_Pooling/config.json (mean or CLS) and
// a Normalize module, and config_sentence_transformers.json whose "prompts"
// give the query and document prefixes of models that want them.
//
// Texts are tokenised, truncated at max_seq_length and run through the
// encoder in batches of about BatchTokens tokens, concatenated without
// padding; vectors are pooled and, when the model says so, L2-normalised.
package builtin

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"

	"github.com/ragd/ragd/embedder/builtin/bert"
	"github.com/ragd/ragd/embedder/builtin/modelcache"
	"github.com/ragd/ragd/embedder/builtin/wordpiece"
	"github.com/ragd/ragd/spi"
)

// BatchTokens is the number of tokens the encoder runs at once, at most: an
// Embed call with more is split into batches of whole texts, and ctx is
// checked between them.
const BatchTokens = 2048

// testHookBatchDone, when set by a test, runs after each batch.
var testHookBatchDone func()

// Config selects and tunes a built-in model.
type Config struct {
	Dir  string // model directory, sentence-transformers layout
	Name string // model name for the identity, e.g. "sentence-transformers/all-MiniLM-L6-v2"
	// QueryPrefix and DocumentPrefix are prepended to query and document
	// texts; "" means the model's own (config_sentence_transformers.json
	// "prompts", else none).
	QueryPrefix, DocumentPrefix string
	// MaxSeqLength truncates texts, in tokens with [CLS] and [SEP]; 0 means
	// sentence_bert_config.json's max_seq_length (else the model's
	// max_position_embeddings).
	MaxSeqLength int
	// Threads is the number of goroutines one batch uses; 0 means
	// runtime.GOMAXPROCS(0).
	Threads int
}

// Model is a loaded built-in model. It is safe for concurrent use.
type Model struct {
	cfg       Config // prefixes, MaxSeqLength and Threads resolved
	enc       *bert.Model
	tok       *wordpiece.Tokenizer
	lay       layout
	sha256    string
	documents roleEmbedder
	queries   roleEmbedder
}

// Open loads the model in cfg.Dir.
func Open(cfg Config) (*Model, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("builtin: no model directory")
	}
	if cfg.Name == "" {
		cfg.Name = filepath.Base(cfg.Dir)
	}
	lay, err := readLayout(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("builtin: %s: %w", cfg.Dir, err)
	}
	if cfg.Threads <= 0 {
		cfg.Threads = runtime.GOMAXPROCS(0)
	}
	// The weights' SHA-256, and the check Import makes: a model whose
	// weights hold NaN or Inf would answer NaN for every text.
	sum, err := modelcache.CheckWeights(filepath.Join(cfg.Dir, "model.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("builtin: %s: %w", cfg.Dir, err)
	}
	enc, err := bert.Load(cfg.Dir, bert.Options{Threads: cfg.Threads})
	if err != nil {
		return nil, fmt.Errorf("builtin: %w", err)
	}
	tok := lay.tokenizer // its ids fit config.json's vocab_size (readLayout)
	if cfg.MaxSeqLength == 0 {
		cfg.MaxSeqLength = lay.maxSeqLength
	}
	if cfg.MaxSeqLength == 0 {
		cfg.MaxSeqLength = enc.MaxPositions()
	}
	if cfg.MaxSeqLength < 2 || cfg.MaxSeqLength > enc.MaxPositions() {
		return nil, fmt.Errorf("builtin: max_seq_length %d: want 2 (room for [CLS] and [SEP]) to the model's %d positions", cfg.MaxSeqLength, enc.MaxPositions())
	}
	if cfg.QueryPrefix == "" {
		cfg.QueryPrefix = lay.queryPrompt
	}
	if cfg.DocumentPrefix == "" {
		cfg.DocumentPrefix = lay.documentPrompt
	}
	m := &Model{cfg: cfg, enc: enc, tok: tok, lay: lay, sha256: sum}
	m.documents = roleEmbedder{m: m, prefix: cfg.DocumentPrefix}
	m.queries = roleEmbedder{m: m, prefix: cfg.QueryPrefix}
	return m, nil
}

// Documents is the embedder for document texts (Config.DocumentPrefix).
func (m *Model) Documents() spi.Embedder { return m.documents }

// Queries is the embedder for query texts (Config.QueryPrefix).
func (m *Model) Queries() spi.Embedder { return m.queries }

// Dimension is the length of the vectors.
func (m *Model) Dimension() int { return m.enc.Hidden() }

// MaxSeqLength is the number of tokens, [CLS] and [SEP] included, past which
// texts are truncated.
func (m *Model) MaxSeqLength() int { return m.cfg.MaxSeqLength }

// Identity names the vector space the model produces: kind, model name, the
// first 16 hex digits of model.safetensors' SHA-256, pooling,
// normalisation, max_seq_length and the prefixes. Vectors of different
// identities are not comparable; stores record it with their vectors.
func (m *Model) Identity() string {
	id := fmt.Sprintf("kind=builtin model=%q sha256=%s dimension=%d pooling=%s normalize=%t max_seq_length=%d",
		m.cfg.Name, m.sha256[:16], m.Dimension(), m.lay.poolingName, m.lay.normalize, m.cfg.MaxSeqLength)
	if m.lay.lowerCase {
		id += " lower_case=true"
	}
	for _, kv := range []struct{ k, v string }{
		{"query_prefix", m.cfg.QueryPrefix}, {"document_prefix", m.cfg.DocumentPrefix},
	} {
		if kv.v != "" {
			id += fmt.Sprintf(" %s=%q", kv.k, kv.v)
		}
	}
	return id
}

// Close releases the model. The embedders must not be used afterwards.
func (m *Model) Close() error { return nil }

// roleEmbedder is Documents or Queries: the model with one prefix.
type roleEmbedder struct {
	m      *Model
	prefix string
}

var _ spi.Embedder = roleEmbedder{}

func (r roleEmbedder) Dimension() int { return r.m.Dimension() }

// Embed returns one vector per text. Texts longer than MaxSeqLength tokens
// are truncated; an empty text embeds as [CLS] [SEP], like the reference.
// ctx is checked before the work starts and between batches; a cancelled ctx
// returns its error.
func (r roleEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return r.m.embed(ctx, texts, r.prefix)
}

func (m *Model) embed(ctx context.Context, texts []string, prefix string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]float32, 0, len(texts))
	ids := make([]int32, 0, BatchTokens+m.cfg.MaxSeqLength)
	seqs := make([][]int32, 0, 64)
	flush := func() error {
		if len(seqs) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		vecs, err := m.enc.Embed(seqs, m.lay.pooling, m.lay.normalize)
		if err != nil {
			// The tokenizer only makes ids of its vocabulary and the
			// truncation keeps sequences within the model: an error here is
			// a model whose files disagree.
			return fmt.Errorf("builtin: %w", err)
		}
		out = append(out, vecs...)
		seqs, ids = seqs[:0], ids[:0]
		if testHookBatchDone != nil {
			testHookBatchDone()
		}
		return nil
	}
	for _, t := range texts {
		t = prefix + t
		if m.lay.lowerCase {
			t = pyLower(t)
		}
		start := len(ids)
		if start > 0 && start+m.cfg.MaxSeqLength > BatchTokens {
			if err := flush(); err != nil {
				return nil, err
			}
			start = 0
		}
		ids = m.tok.Encode(ids, t, m.cfg.MaxSeqLength)
		seqs = append(seqs, ids[start:len(ids):len(ids)])
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}
