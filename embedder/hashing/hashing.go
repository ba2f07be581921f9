// Package hashing is ragd's built-in offline embedder: a feature-hashing
// vectoriser that needs no model download and no network.
//
// A text is lowercased and split into tokens (runs of letters and digits).
// English stop words are dropped and plurals folded (Harman's S stemmer).
// Three feature families are hashed into Dimension signed buckets:
//
//   - word unigrams (stemmed),
//   - word bigrams of adjacent kept words (stemmed),
//   - character n-grams (default 3 to 5 runes) of each kept word wrapped in
//     '<' and '>' boundary markers, as in fastText.
//
// Each feature's weight is the family weight times 1 + ln(tf) (sublinear term
// frequency). The hash is 64-bit FNV-1a with a murmur3 finaliser; one hash bit
// chooses the sign of the contribution so that collisions cancel in
// expectation instead of piling up (Weinberger et al., 2009). The vector is
// L2-normalised, so cosine similarity is a dot product.
//
// This is a lexical-semantic baseline: it captures shared words, phrases and
// morphology ("aerodynamic" and "aerodynamics" are close), not meaning
// ("car" and "automobile" are unrelated). Use an OpenAI-compatible model
// server (package openai) for semantic embeddings.
//
// The output is a pure function of the text and the Config: identical across
// runs, processes and platforms (no randomness, no map iteration order, no
// platform math functions, no fused multiply-add).
package hashing

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/ragd/ragd/internal/analysis"
	"github.com/ragd/ragd/spi"
)

var _ spi.Embedder = (*Embedder)(nil)

// Feature families, stored in the two low bits of a feature key.
const (
	classWord = iota
	classBigram
	classChar
)

// Embedder implements spi.Embedder with feature hashing. It is safe for
// concurrent use.
type Embedder struct {
	cfg     Config
	weights [3]float64
	pool    sync.Pool // *scratch
}

// New returns an Embedder for cfg (zero fields take defaults).
func New(cfg Config) (*Embedder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	e := &Embedder{cfg: cfg}
	e.weights[classWord] = cfg.WordWeight
	e.weights[classBigram] = cfg.BigramWeight
	e.weights[classChar] = cfg.CharWeight
	e.pool.New = func() any { return &scratch{acc: make([]float64, cfg.Dimension)} }
	return e, nil
}

// Dimension implements spi.Embedder.
func (e *Embedder) Dimension() int { return e.cfg.Dimension }

// Config returns the effective configuration, defaults applied.
func (e *Embedder) Config() Config { return e.cfg }

// Fingerprint names the feature space, for example
// "hashing-v1/d384/n3-5/w1,b0.5,c0.3". Two embedders with the same
// fingerprint produce identical vectors; a store built with one fingerprint
// must be re-embedded before it is queried with another.
func (e *Embedder) Fingerprint() string {
	c := e.cfg
	b, ch := c.BigramWeight, c.CharWeight
	if c.DisableBigrams {
		b = 0
	}
	if c.DisableCharNGrams {
		ch = 0
	}
	return fmt.Sprintf("hashing-v1/d%d/n%d-%d/w%g,b%g,c%g", c.Dimension, c.MinN, c.MaxN, c.WordWeight, b, ch)
}

// Embed implements spi.Embedder. It never fails except when ctx is done. A
// text with no features (empty, punctuation only, or only stop words) maps to
// a fixed unit vector: one signed component at the bucket of a reserved
// feature, so every returned vector has norm 1 and cosine similarity against
// it is always defined.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	d := e.cfg.Dimension
	flat := make([]float32, len(texts)*d)
	out := make([][]float32, len(texts))
	s := e.pool.Get().(*scratch)
	defer e.pool.Put(s)
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("hashing: embed: %w", context.Cause(ctx))
		}
		v := flat[i*d : (i+1)*d : (i+1)*d]
		e.embed(s, t, v)
		out[i] = v
	}
	return out, nil
}

// scratch holds the per-call buffers, reused through a sync.Pool.
type scratch struct {
	buf   []byte
	spans []analysis.Span
	keys  []uint64
	word  []byte
	offs  []int
	tab   []uint64
	cnt   []int32
	acc   []float64
}

func (e *Embedder) embed(s *scratch, text string, out []float32) {
	s.buf, s.spans = analysis.Tokenize(text, s.buf[:0], s.spans[:0])
	keys := s.keys[:0]
	prevBase, prevSuffix, havePrev := []byte(nil), "", false
	for _, sp := range s.spans {
		w := s.buf[sp.Start:sp.End]
		if analysis.IsStopBytes(w) {
			havePrev = false // a stop word breaks a bigram
			continue
		}
		base, suffix := analysis.StemBytes(w)
		h := newHash(classWord).bytes(base).str(suffix)
		keys = append(keys, h.key(classWord))
		if havePrev && !e.cfg.DisableBigrams {
			h := newHash(classBigram).bytes(prevBase).str(prevSuffix).byte(' ').bytes(base).str(suffix)
			keys = append(keys, h.key(classBigram))
		}
		prevBase, prevSuffix, havePrev = base, suffix, true
		if !e.cfg.DisableCharNGrams && sp.Runes <= MaxWordRunes {
			keys = e.charNGrams(s, w, keys)
		}
	}
	s.keys = keys
	if len(keys) == 0 {
		keys = append(keys, emptyKey)
	}
	// Count each feature's occurrences in an open-addressing table (linear
	// probing). Slots hold key+1 so that zero marks an empty slot; no key is
	// all ones because the family bits are at most 2. Visiting the slots in
	// order is deterministic: it depends only on the keys and their order.
	size := 64
	for size < 2*len(keys) {
		size <<= 1
	}
	if cap(s.tab) < size {
		s.tab, s.cnt = make([]uint64, size), make([]int32, size)
	}
	tab, cnt := s.tab[:size], s.cnt[:size]
	clear(tab)
	mask := uint64(size - 1)
	for _, k := range keys {
		i := (k >> 32) & mask
		for tab[i] != 0 && tab[i] != k+1 {
			i = (i + 1) & mask
		}
		if tab[i] == 0 {
			tab[i], cnt[i] = k+1, 0
		}
		cnt[i]++
	}

	acc := s.acc
	clear(acc)
	d := uint64(len(acc))
	for i, slot := range tab {
		if slot == 0 {
			continue
		}
		k := slot - 1
		tf := min(int(cnt[i]), len(logTF)-1)
		// The explicit float64 conversions forbid fused multiply-add, whose
		// use differs between platforms.
		w := float64(e.weights[k&3] * logTF[tf])
		b := (k >> 2) % d
		if k>>63 == 1 {
			acc[b] -= w
		} else {
			acc[b] += w
		}
	}
	var sum float64
	for _, x := range acc {
		sum += float64(x * x)
	}
	if sum == 0 { // every contribution cancelled: fall back to the empty vector
		clear(acc)
		acc[(emptyKey>>2)%d] = 1 - 2*float64(emptyKey>>63) // same sign as the regular path
		sum = 1
	}
	norm := math.Sqrt(sum)
	for i, x := range acc {
		out[i] = float32(x / norm)
	}
}

// charNGrams appends the keys of the character n-grams of "<w>".
func (e *Embedder) charNGrams(s *scratch, w []byte, keys []uint64) []uint64 {
	word := append(s.word[:0], '<')
	word = append(word, w...)
	word = append(word, '>')
	offs := s.offs[:0]
	for i := 0; i < len(word); {
		offs = append(offs, i)
		if word[i] < 0x80 {
			i++
			continue
		}
		i++
		for i < len(word) && word[i]&0xC0 == 0x80 {
			i++
		}
	}
	nr := len(offs)
	offs = append(offs, len(word))
	for n := e.cfg.MinN; n <= e.cfg.MaxN && n <= nr; n++ {
		for i := 0; i+n <= nr; i++ {
			h := newHash(classChar).bytes(word[offs[i]:offs[i+n]])
			keys = append(keys, h.key(classChar))
		}
	}
	s.word, s.offs = word, offs
	return keys
}

// emptyKey is the reserved feature of a text without features. No token can
// produce it: tokens never contain a NUL byte.
var emptyKey = newHash(classWord).str("\x00empty").key(classWord)

// fnv is a 64-bit FNV-1a state.
type fnv uint64

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func newHash(class byte) fnv { return fnv(fnvOffset).byte(class) }

func (h fnv) byte(c byte) fnv { return (h ^ fnv(c)) * fnvPrime }

func (h fnv) bytes(b []byte) fnv {
	for _, c := range b {
		h = (h ^ fnv(c)) * fnvPrime
	}
	return h
}

func (h fnv) str(s string) fnv {
	for i := 0; i < len(s); i++ {
		h = (h ^ fnv(s[i])) * fnvPrime
	}
	return h
}

// key finalises the hash (murmur3 fmix64, so every bit depends on every input
// byte) and stores the feature family in the two low bits. Bits 2.. choose
// the bucket, bit 63 the sign.
func (h fnv) key(class uint64) uint64 {
	x := uint64(h)
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x&^3 | class
}
