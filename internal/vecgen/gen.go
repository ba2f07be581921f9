package vecgen

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Pool is the real vectors with their texts. Invariants (NewPool): Vecs
// and Texts have the same length, every vector has length Dim and unit
// norm, and byDoc and mix list exactly the indexes of the texts that are
// not held, byDoc under their Doc.
type Pool struct {
	Dim   int
	Vecs  [][]float32
	Texts []Text
	byDoc map[string][]int
	mix   []int
}

// NewPool checks the vectors (one per text, one dimension) and
// normalises them.
func NewPool(texts []Text, vecs [][]float32) (*Pool, error) {
	if len(texts) != len(vecs) {
		return nil, fmt.Errorf("vecgen: %d texts but %d vectors", len(texts), len(vecs))
	}
	if len(vecs) == 0 {
		return nil, errors.New("vecgen: an empty pool")
	}
	p := &Pool{Dim: len(vecs[0]), Texts: texts, byDoc: map[string][]int{}}
	for i, v := range vecs {
		if len(v) != p.Dim {
			return nil, fmt.Errorf("vecgen: vector %d has dimension %d, not %d", i, len(v), p.Dim)
		}
		u, ok := unit(v)
		if !ok {
			return nil, fmt.Errorf("vecgen: vector %d is zero", i)
		}
		p.Vecs = append(p.Vecs, u)
		if !texts[i].Held {
			p.mix = append(p.mix, i)
			p.byDoc[texts[i].Doc] = append(p.byDoc[texts[i].Doc], i)
		}
	}
	if len(p.mix) == 0 {
		return nil, errors.New("vecgen: every pool text is held out")
	}
	return p, nil
}

// Mixable returns the indexes of the vectors documents are mixed from.
func (p *Pool) Mixable() []int { return p.mix }

func unit(v []float32) ([]float32, bool) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return nil, false
	}
	n := math.Sqrt(s)
	u := make([]float32, len(v))
	for i, x := range v {
		u[i] = float32(float64(x) / n)
	}
	return u, true
}

// Params shape the mixtures. Zero values take the defaults.
type Params struct {
	Seed uint64
	// HomeMin and HomeMax bound the weight of the home vector (0.5, 0.8);
	// the rest is split at random among the others.
	HomeMin, HomeMax float64
	// SameSource is the probability that the second vector comes from the
	// document's own source (0.5); otherwise, and always for the third,
	// from the whole pool.
	SameSource float64
	// Three is the share of documents mixed from three vectors, not two
	// (0.5).
	Three float64
	// Noise is the standard deviation of the Gaussian noise per dimension
	// added before normalising (0.01; a unit vector's coordinates have
	// about 1/sqrt(dim), 0.051 at 384). Chosen by measure (ragd-vectors
	// make -stats, 20,000 documents of Cranfield's pool of all-MiniLM-L6-v2
	// vectors): at 0.01 the spectrum matches the real pool's (participation
	// ratio 78 against 73, 90 % of the variance in 187 components against
	// 161) and no document's nearest is a near-copy; 0.02 spreads the
	// variance over 250 components, 0.005 makes 1.8 % near-copies.
	Noise float64
}

// DefaultParams are the mixture's defaults (see Params).
var DefaultParams = Params{HomeMin: 0.5, HomeMax: 0.8, SameSource: 0.5, Three: 0.5, Noise: 0.01}

func (p Params) withDefaults() Params {
	d := DefaultParams
	if p.HomeMin == 0 && p.HomeMax == 0 {
		p.HomeMin, p.HomeMax = d.HomeMin, d.HomeMax
	}
	if p.SameSource == 0 {
		p.SameSource = d.SameSource
	}
	if p.Three == 0 {
		p.Three = d.Three
	}
	if p.Noise == 0 {
		p.Noise = d.Noise
	}
	return p
}

// Generator makes document vectors from a pool.
type Generator struct {
	pool *Pool
	p    Params
}

// NewGenerator returns a generator over pool with params p.
func NewGenerator(pool *Pool, p Params) *Generator {
	return &Generator{pool: pool, p: p.withDefaults()}
}

// Params returns the parameters in force (defaults filled in).
func (g *Generator) Params() Params { return g.p }

// Doc returns the unit vector of document i whose text comes from the
// collection document source (any pool vector is its home when the pool
// has none of source). It depends on (Seed, i, source) only.
func (g *Generator) Doc(i int, source string) []float32 {
	rnd := rand.New(rand.NewPCG(g.p.Seed, uint64(i)))
	home := g.pool.byDoc[source]
	if len(home) == 0 {
		home = g.pool.mix
	}
	pick := func(from []int) []float32 { return g.pool.Vecs[from[rnd.IntN(len(from))]] }
	comps := [3][]float32{pick(home)}
	n := 2
	if rnd.Float64() < g.p.Three {
		n = 3
	}
	if rnd.Float64() < g.p.SameSource {
		comps[1] = pick(home)
	} else {
		comps[1] = pick(g.pool.mix)
	}
	comps[2] = pick(g.pool.mix)
	w1 := g.p.HomeMin + (g.p.HomeMax-g.p.HomeMin)*rnd.Float64()
	ws := [3]float64{w1, 1 - w1, 0}
	if n == 3 {
		u := rnd.Float64()
		ws[1], ws[2] = (1-w1)*u, (1-w1)*(1-u)
	}
	v := make([]float64, g.pool.Dim)
	for j := range n {
		for d, x := range comps[j] {
			v[d] += ws[j] * float64(x)
		}
	}
	for d := range v {
		v[d] += g.p.Noise * rnd.NormFloat64()
	}
	return Unit(v)
}

// Unit returns v scaled to unit length, as float32.
func Unit(v []float64) []float32 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	n := math.Sqrt(s)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x / n)
	}
	return out
}

// Query is one benchmark query: a text and its real vector, neither mixed
// into any document.
type Query struct {
	Text   string    `json:"text"`
	Vector []float32 `json:"vector"`
	// Kind is KindQuery (the collection's query) or KindSentence (a
	// sentence held out of the pool).
	Kind string `json:"kind"`
}

// Queries returns the held texts of the pool as queries, in an order
// shuffled by the seed (so any prefix mixes both kinds).
func (g *Generator) Queries() []Query {
	var qs []Query
	for i, t := range g.pool.Texts {
		if t.Held {
			qs = append(qs, Query{Text: t.Text, Vector: g.pool.Vecs[i], Kind: t.Kind})
		}
	}
	rnd := rand.New(rand.NewPCG(g.p.Seed, 0x71756572)) // "quer"
	rnd.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
	return qs
}
