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
// Texts are tokenised (in the caller's goroutine), truncated at
// max_seq_length and run through the encoder by a scheduler (package
// internal/sched), up to GOMAXPROCS passes at once: the queries waiting
// together run as one forward pass on one goroutine (dynamic
// micro-batching; a lone query starts at once on a free worker), documents
// in chunks of about DocumentBatchTokens tokens, sorted by length, each
// split over Config.Threads goroutines, that run only while no query waits.
// A pass concatenates its texts' tokens without padding; vectors are pooled
// and, when the model says so, L2-normalised.
package builtin

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ragd/ragd/embedder/builtin/bert"
	"github.com/ragd/ragd/embedder/builtin/internal/kernel"
	"github.com/ragd/ragd/embedder/builtin/internal/sched"
	"github.com/ragd/ragd/embedder/builtin/modelcache"
	"github.com/ragd/ragd/embedder/builtin/wordpiece"
	"github.com/ragd/ragd/spi"
)

// Batch sizes. The encoder's cost per token falls with the rows of its
// matrix multiplies (the weights are read once per pass, not per text), so
// concurrent queries share passes; documents go in short chunks so a query
// never waits long behind one (docs/embedders.md has the measurements).
const (
	// BatchTokens is the most tokens of a query pass: an Embed call of
	// queries with more is split into passes of whole texts.
	BatchTokens = 2048
	// QueryBatch is the most query texts in one pass.
	QueryBatch = 16
	// DocumentBatchTokens is the size of a document chunk, in tokens (one
	// text longer than it runs alone): an Embed call of documents is split
	// into chunks of whole texts, sorted by length, ctx checked between them.
	DocumentBatchTokens = 256
)

// testHookBatchDone, when set by a test, runs after each chunk of an Embed
// call.
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
	// Threads is the number of goroutines one document pass uses; 0 means
	// runtime.GOMAXPROCS(0). A query pass uses one: queries are short, a
	// pass split over goroutines waits at every layer for the slowest of
	// them, and up to GOMAXPROCS query passes run side by side instead.
	Threads int
	// Precision of the encoder's linear layers: "fp32" (the reference) or
	// "int8" (dynamic quantisation, package bert); "" means
	// DefaultPrecision().
	Precision string
	// Passes is the most forward passes that run at once; 0 means
	// runtime.GOMAXPROCS(0).
	Passes int
}

// DefaultPrecision is the precision of a Config that leaves it out: "int8"
// where the CPU has the AVX-512 VNNI int8 kernel, which is
// 2-2.5× faster than fp32 for the same retrieval quality
// (docs/embedders.md); "fp32" elsewhere, where the portable int8 kernel
// would be far slower than the fp32 assembly.
func DefaultPrecision() string { return precisionFor(kernel.QKernelName()) }

// precisionFor is DefaultPrecision on a CPU whose int8 micro-kernel is
// qkernel: int8 only with VNNI, as the AVX2 int8 kernel's throughput is the
// fp32 AVX2 kernel's (docs/embedders.md) and the portable one's far below;
// arm64's NEON SDOT kernel is tested under emulation only, its speed on
// real hardware not measured, so arm64 keeps fp32 until it is.
func precisionFor(qkernel string) string {
	if qkernel == "avx512vnni" {
		return string(bert.Int8)
	}
	return string(bert.FP32)
}

// Model is a loaded built-in model. It is safe for concurrent use.
type Model struct {
	cfg       Config // prefixes, MaxSeqLength, Threads and Passes resolved
	enc       *bert.Model
	tok       *wordpiece.Tokenizer
	lay       layout
	sha256    string
	documents roleEmbedder
	queries   roleEmbedder
	sched     *sched.Scheduler
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
	if cfg.Passes <= 0 {
		cfg.Passes = runtime.GOMAXPROCS(0)
	}
	if cfg.Precision == "" {
		cfg.Precision = DefaultPrecision()
	}
	// The weights' SHA-256, and the check Import makes: a model whose
	// weights hold NaN or Inf would answer NaN for every text.
	sum, err := modelcache.CheckWeights(filepath.Join(cfg.Dir, "model.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("builtin: %s: %w", cfg.Dir, err)
	}
	enc, err := bert.Load(cfg.Dir, bert.Options{Threads: cfg.Threads, Precision: bert.Precision(cfg.Precision)})
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
	m.documents = roleEmbedder{m: m, prefix: cfg.DocumentPrefix, prio: sched.Document}
	m.queries = roleEmbedder{m: m, prefix: cfg.QueryPrefix, prio: sched.Query}
	m.sched = sched.New(sched.Config{
		Run: func(seqs [][]int32, p sched.Priority) ([][]float32, error) {
			threads := cfg.Threads
			if p == sched.Query {
				threads = 1
			}
			return m.enc.EmbedThreads(seqs, m.lay.pooling, m.lay.normalize, threads)
		},
		MaxBatch:  QueryBatch,
		MaxTokens: BatchTokens,
		// As many passes at once as there are cores: query passes run on
		// one goroutine each (docs/embedders.md, "How the encoder runs").
		Workers: cfg.Passes,
	})
	return m, nil
}

// Documents is the embedder for document texts (Config.DocumentPrefix).
func (m *Model) Documents() spi.Embedder { return m.documents }

// Queries is the embedder for query texts (Config.QueryPrefix).
func (m *Model) Queries() spi.Embedder { return m.queries }

// Dimension is the length of the vectors.
func (m *Model) Dimension() int { return m.enc.Hidden() }

// Precision is the arithmetic of the encoder's linear layers: "fp32" or
// "int8".
func (m *Model) Precision() string { return m.cfg.Precision }

// MaxSeqLength is the number of tokens, [CLS] and [SEP] included, past which
// texts are truncated.
func (m *Model) MaxSeqLength() int { return m.cfg.MaxSeqLength }

// Identity names the vector space the model produces: kind, model name, the
// first 16 hex digits of model.safetensors' SHA-256, pooling,
// normalisation, max_seq_length, the prefixes and, last, a precision other
// than fp32. Vectors of different identities are not comparable; stores
// record it with their vectors.
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
	return WithPrecision(id, m.cfg.Precision)
}

// WithPrecision is identity, the Identity of a model, changed to
// precision p. The precision is the identity's last part, and fp32 leaves
// it out, so identities from before int8 stay valid. int8 vectors are
// close to fp32's (cosine ≥ 0.99) but not equal: a store or cache of one
// precision is not silently mixed with the other.
func WithPrecision(identity, p string) string {
	for _, q := range []bert.Precision{bert.Int8} {
		identity = strings.TrimSuffix(identity, " precision="+string(q))
	}
	if p != "" && p != string(bert.FP32) {
		identity += " precision=" + p
	}
	return identity
}

// Close releases the model. The embedders must not be used afterwards.
// (The scheduler holds no goroutine while no call runs.)
func (m *Model) Close() error { return nil }

// QueryServiceTime is what one more waiting query adds to a query's wait
// for its vector, as recently measured: the wall time of a query pass
// divided by the queries in it; 0 before the first query pass.
func (m *Model) QueryServiceTime() time.Duration { return m.sched.ServiceTime() }

// BatchStats are the scheduler's counters.
type BatchStats = sched.Stats

// BatchStats returns the scheduler's counters: passes, queries per pass,
// jobs waiting.
func (m *Model) BatchStats() BatchStats { return m.sched.Stats() }

// roleEmbedder is Documents or Queries: the model with one prefix and the
// scheduler priority of its role.
type roleEmbedder struct {
	m      *Model
	prefix string
	prio   sched.Priority
}

var _ spi.Embedder = roleEmbedder{}

func (r roleEmbedder) Dimension() int { return r.m.Dimension() }

// Embed returns one vector per text. Texts longer than MaxSeqLength tokens
// are truncated; an empty text embeds as [CLS] [SEP], like the reference.
// ctx is checked before the work starts and between chunks, and a call
// whose ctx ends while it waits for the encoder returns at once; a
// cancelled ctx returns its error.
func (r roleEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return r.m.embed(ctx, texts, r.prefix, r.prio)
}

func (m *Model) embed(ctx context.Context, texts []string, prefix string, prio sched.Priority) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	seqs := make([][]int32, len(texts))
	var ids []int32
	for i, t := range texts {
		t = prefix + t
		if m.lay.lowerCase {
			t = pyLower(t)
		}
		if len(ids)+m.cfg.MaxSeqLength > cap(ids) {
			ids = make([]int32, 0, m.cfg.MaxSeqLength*min(len(texts)-i, 16))
		}
		start := len(ids)
		ids = m.tok.Encode(ids, t, m.cfg.MaxSeqLength)
		seqs[i] = ids[start:len(ids):len(ids)]
	}
	// Documents go by length, so each chunk holds texts of similar length.
	order := make([]int, len(seqs))
	for i := range order {
		order[i] = i
	}
	limit := BatchTokens
	if prio == sched.Document {
		limit = DocumentBatchTokens
		slices.SortStableFunc(order, func(a, b int) int { return len(seqs[a]) - len(seqs[b]) })
	}
	out := make([][]float32, len(texts))
	chunk := make([][]int32, 0, 64)
	for lo := 0; lo < len(order); {
		chunk = chunk[:0]
		hi, tokens := lo, 0
		for hi < len(order) && (hi == lo || tokens+len(seqs[order[hi]]) <= limit) {
			chunk = append(chunk, seqs[order[hi]])
			tokens += len(seqs[order[hi]])
			hi++
		}
		vecs, err := m.sched.Do(ctx, prio, chunk)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// The tokenizer only makes ids of its vocabulary and the
			// truncation keeps sequences within the model: an error here is
			// a model whose files disagree.
			return nil, fmt.Errorf("builtin: %w", err)
		}
		for k, v := range vecs {
			out[order[lo+k]] = v
		}
		lo = hi
		if testHookBatchDone != nil {
			testHookBatchDone()
		}
	}
	return out, nil
}
