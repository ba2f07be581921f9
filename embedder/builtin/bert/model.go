// Package bert is a BERT encoder in pure Go: it loads a Hugging Face
// config.json and model.safetensors (the BERT family: BERT, MiniLM, e5,
// bge, ...) and turns batches of token-id sequences into pooled sentence
// vectors.
//
// The forward pass concatenates the tokens of every sequence in a batch (no
// padding): the linear layers, which are nearly all of the work, act per
// token and run as one matrix multiply over all the batch's tokens, split
// across threads by rows (or by output columns when there are few rows).
// Attention runs per sequence and head. The multiply is package kernel's
// packed sgemm; weights are packed into its panel layout at load.
package bert

import (
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/ragd/ragd/embedder/builtin/internal/kernel"
)

// Model is a loaded encoder. It is safe for concurrent use.
type Model struct {
	cfg       Config
	threads   int
	eps       float32
	precision Precision

	wordEmb, posEmb, typeEmb0 []float32 // typeEmb0: token type 0 only
	embLNg, embLNb            []float32
	layers                    []layer

	pool sync.Pool // *workspace
}

type layer struct {
	qkv        weight // [Q K V] (3H outputs); Q pre-scaled by 1/√(head dim)
	qkvBias    []float32
	attnOut    weight
	attnBias   []float32
	ln1g, ln1b []float32
	inter      weight
	interBias  []float32
	out        weight
	outBias    []float32
	ln2g, ln2b []float32
}

// weight is a Linear layer's weight, packed for the model's precision:
// f (fp32 panels) or q (int8), never both.
type weight struct {
	f kernel.Panels
	q kernel.QPanels
}

// Precision is the arithmetic of the linear layers.
type Precision string

const (
	// FP32 runs the linear layers in single precision (the reference).
	FP32 Precision = "fp32"
	// Int8 quantises them dynamically: int8 weights (a scale per output
	// feature, at load), uint8 activations (a scale and zero point per
	// token, per layer as they come), int32 sums (package kernel). Attention,
	// LayerNorm, GELU and pooling stay in fp32.
	Int8 Precision = "int8"
)

// Options tune a loaded Model.
type Options struct {
	// Threads is the number of goroutines one forward pass uses; 0 means
	// runtime.GOMAXPROCS(0).
	Threads int
	// Precision of the linear layers; "" means FP32.
	Precision Precision
}

// Load reads dir/config.json and dir/model.safetensors.
func Load(dir string, opts Options) (*Model, error) {
	cfg, err := ReadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	t, err := readSafetensors(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return nil, err
	}
	return newModel(cfg, t, opts)
}

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// Hidden is the width of the hidden states and of the pooled vectors.
func (m *Model) Hidden() int { return m.cfg.HiddenSize }

// MaxPositions is the longest sequence, in tokens, the model accepts.
func (m *Model) MaxPositions() int { return m.cfg.MaxPositionEmbeddings }

// Threads is the number of goroutines a forward pass uses.
func (m *Model) Threads() int { return m.threads }

// Precision is the arithmetic of the linear layers.
func (m *Model) Precision() Precision { return m.precision }

func newModel(cfg Config, t *tensors, opts Options) (*Model, error) {
	switch opts.Precision {
	case "":
		opts.Precision = FP32
	case FP32, Int8:
	default:
		return nil, fmt.Errorf("bert: precision %q: want %q or %q", opts.Precision, FP32, Int8)
	}
	m := &Model{cfg: cfg, threads: opts.Threads, eps: float32(cfg.LayerNormEps), precision: opts.Precision}
	if m.threads <= 0 {
		m.threads = runtime.GOMAXPROCS(0)
	}
	prefix := ""
	if !t.has("embeddings.word_embeddings.weight") && t.has("bert.embeddings.word_embeddings.weight") {
		prefix = "bert."
	}
	H, I := cfg.HiddenSize, cfg.IntermediateSize
	l := loader{t: t, prefix: prefix, precision: opts.Precision}
	m.wordEmb = l.get("embeddings.word_embeddings.weight", cfg.VocabSize, H)
	m.posEmb = l.get("embeddings.position_embeddings.weight", cfg.MaxPositionEmbeddings, H)
	typ := l.get("embeddings.token_type_embeddings.weight", cfg.TypeVocabSize, H)
	if typ != nil {
		m.typeEmb0 = typ[:H]
	}
	m.embLNg, m.embLNb = l.layerNorm("embeddings.LayerNorm", H)
	scale := float32(1 / math.Sqrt(float64(H/cfg.NumAttentionHeads)))
	for i := 0; i < cfg.NumHiddenLayers; i++ {
		p := fmt.Sprintf("encoder.layer.%d.", i)
		var ly layer
		q := l.get(p+"attention.self.query.weight", H, H)
		k := l.get(p+"attention.self.key.weight", H, H)
		v := l.get(p+"attention.self.value.weight", H, H)
		qb := l.get(p+"attention.self.query.bias", H)
		kb := l.get(p+"attention.self.key.bias", H)
		vb := l.get(p+"attention.self.value.bias", H)
		if l.err == nil {
			for j := range q {
				q[j] *= scale
			}
			for j := range qb {
				qb[j] *= scale
			}
			w := make([]float32, 0, 3*H*H)
			w = append(append(append(w, q...), k...), v...)
			ly.qkv = l.pack(w, 3*H, H)
			ly.qkvBias = append(append(append(make([]float32, 0, 3*H), qb...), kb...), vb...)
		}
		ly.attnOut = l.linear(p+"attention.output.dense", H, H)
		ly.attnBias = l.get(p+"attention.output.dense.bias", H)
		ly.ln1g, ly.ln1b = l.layerNorm(p+"attention.output.LayerNorm", H)
		ly.inter = l.linear(p+"intermediate.dense", I, H)
		ly.interBias = l.get(p+"intermediate.dense.bias", I)
		ly.out = l.linear(p+"output.dense", H, I)
		ly.outBias = l.get(p+"output.dense.bias", H)
		ly.ln2g, ly.ln2b = l.layerNorm(p+"output.LayerNorm", H)
		m.layers = append(m.layers, ly)
	}
	if l.err != nil {
		return nil, l.err
	}
	m.pool.New = func() any { return new(workspace) }
	return m, nil
}

// loader reads tensors, keeping the first error.
type loader struct {
	t         *tensors
	prefix    string
	precision Precision
	err       error
}

func (l *loader) get(name string, shape ...int) []float32 {
	if l.err != nil {
		return nil
	}
	v, err := l.t.float32s(l.prefix+name, shape...)
	if err != nil {
		l.err = err
	}
	return v
}

// linear packs the weight of a Linear layer (out×in).
func (l *loader) linear(name string, out, in int) weight {
	w := l.get(name+".weight", out, in)
	if w == nil {
		return weight{}
	}
	return l.pack(w, out, in)
}

// pack packs a Linear weight w (out×in) for the model's precision.
func (l *loader) pack(w []float32, out, in int) weight {
	if l.precision == Int8 {
		return weight{q: kernel.QuantizeNK(w, in, out, in)}
	}
	return weight{f: kernel.PackNK(nil, w, in, out, in)}
}

// layerNorm reads a LayerNorm's weight and bias (gamma and beta in old
// checkpoints).
func (l *loader) layerNorm(name string, n int) (g, b []float32) {
	if l.err == nil && !l.t.has(l.prefix+name+".weight") && l.t.has(l.prefix+name+".gamma") {
		return l.get(name+".gamma", n), l.get(name+".beta", n)
	}
	return l.get(name+".weight", n), l.get(name+".bias", n)
}
