package embedded

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/ragd/ragd/internal/vecgen"
	"github.com/ragd/ragd/spi"
)

// Synth makes vectors with the structure of real embeddings for the
// benchmarks, a pure function of the point's number i, so a benchmark
// regenerates any vector instead of holding them all. Queries are real
// vectors of texts no point is mixed from.
//
// With RAG_BENCH_POOL and RAG_BENCH_POOL_VECTORS (the pool scripts/bench.sh
// scale makes: `ragd-vectors texts` and its texts' vectors by `ragd
// embed`, cached as pool-texts.jsonl and pool-vectors.jsonl), the points
// are internal/vecgen's documents (the generator of every scale figure):
// point i's text comes from a collection document chosen by i, and its
// vector is vecgen's mixture for it; the queries are vecgen's (held-out
// sentences and the collection's queries).
//
// Otherwise RAG_BENCH_BASE_VECTORS and RAG_BENCH_QUERY_VECTORS name two
// files of vectors (one JSON array per line, the output of `ragd embed`),
// and point i is a convex mixture of 2 or 3 base vectors plus gaussian
// noise, normalised. Benchmarks that need one of the two skip without.
// docs/vector.md ("Measuring") says how to make them.
type Synth struct {
	Base    [][]float32
	Queries [][]float32
	Dim     int
	Noise   float64 // standard deviation per dimension

	gen     *vecgen.Generator // with the pool
	sources []string          // the collection's documents, sorted
}

// LoadSynth reads the files the environment names, or skips tb.
func LoadSynth(tb testing.TB) *Synth {
	tb.Helper()
	if pt, pv := os.Getenv("RAG_BENCH_POOL"), os.Getenv("RAG_BENCH_POOL_VECTORS"); pt != "" && pv != "" {
		return loadPool(tb, pt, pv)
	}
	bp, qp := os.Getenv("RAG_BENCH_BASE_VECTORS"), os.Getenv("RAG_BENCH_QUERY_VECTORS")
	if bp == "" || qp == "" {
		tb.Skip("neither RAG_BENCH_POOL and RAG_BENCH_POOL_VECTORS nor RAG_BENCH_BASE_VECTORS and RAG_BENCH_QUERY_VECTORS are set (docs/vector.md, \"Measuring\")")
	}
	s := &Synth{Base: readVectors(tb, bp), Queries: readVectors(tb, qp)}
	s.Dim = len(s.Base[0])
	s.Noise = 0.05 / math.Sqrt(float64(s.Dim)) // noise of norm about 0.05
	if v := os.Getenv("RAG_BENCH_SYNTH_NOISE"); v != "" {
		if _, err := fmt.Sscan(v, &s.Noise); err != nil {
			tb.Fatalf("RAG_BENCH_SYNTH_NOISE: %v", err)
		}
	}
	return s
}

// loadPool makes a Synth of internal/vecgen's generator over the pool of
// texts (texts) and their vectors (vectors).
func loadPool(tb testing.TB, texts, vectors string) *Synth {
	tb.Helper()
	f, err := os.Open(texts)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var ts []vecgen.Text
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var t vecgen.Text
		if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
			tb.Fatalf("%s: line %d: %v", texts, len(ts)+1, err)
		}
		ts = append(ts, t)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	pool, err := vecgen.NewPool(ts, readVectors(tb, vectors))
	if err != nil {
		tb.Fatal(err)
	}
	g := vecgen.NewGenerator(pool, vecgen.Params{Seed: 1})
	s := &Synth{Dim: pool.Dim, gen: g, Noise: g.Params().Noise}
	seen := map[string]bool{}
	for _, i := range pool.Mixable() {
		if d := pool.Texts[i].Doc; d != "" && !seen[d] {
			seen[d] = true
			s.sources = append(s.sources, d)
		}
	}
	slices.Sort(s.sources)
	for _, q := range g.Queries() {
		s.Queries = append(s.Queries, q.Vector)
	}
	return s
}

// Kind names the generator: "vecgen" with the pool, "mix" otherwise.
func (s *Synth) Kind() string {
	if s.gen != nil {
		return "vecgen"
	}
	return "mix"
}

func readVectors(tb testing.TB, path string) [][]float32 {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out [][]float32
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var v []float32
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			tb.Fatalf("%s: line %d: %v", path, len(out)+1, err)
		}
		if len(out) > 0 && len(v) != len(out[0]) {
			tb.Fatalf("%s: line %d has %d dimensions, the first %d", path, len(out)+1, len(v), len(out[0]))
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	if len(out) == 0 {
		tb.Fatalf("%s holds no vector", path)
	}
	return out
}

// Point writes point i into dst (Dim long) and returns the base vector
// of its largest weight (with the pool: the number of the collection
// document its text comes from).
func (s *Synth) Point(i int, dst []float32) int {
	if s.gen != nil {
		h := uint64(i)*0xbf58476d1ce4e5b9 + 7
		h ^= h >> 31
		src := int(h % uint64(len(s.sources)))
		copy(dst, s.gen.Doc(i, s.sources[src]))
		return src
	}
	r := rand.New(rand.NewPCG(uint64(i), 0x5eed))
	m := 2 + r.IntN(2)
	var w [3]float64
	var idx [3]int
	sum := 0.0
	for j := range m {
		idx[j] = r.IntN(len(s.Base))
		w[j] = 0.05 + r.Float64()
		sum += w[j]
	}
	top := 0
	for j := range m {
		if w[j] > w[top] {
			top = j
		}
	}
	for d := range dst {
		x := 0.0
		for j := range m {
			x += w[j] / sum * float64(s.Base[idx[j]][d])
		}
		dst[d] = float32(x + s.Noise*r.NormFloat64())
	}
	normalizeInPlace(dst)
	return idx[top]
}

// SynthMeta is the tenant and metadata of point i: tenants of 50, 30, 14,
// 5 and 1% of the points; half=yes on 50% (no on the rest), lang=de on
// 10%, rare=yes on 5%, vrare=yes on 0.5%, independent of the vector;
// topic (20 values, 5% each) from Point's top, so correlated with the
// vector.
func SynthMeta(i, top int) (string, spi.Metadata) {
	h := uint64(i)*0x9e3779b97f4a7c15 + 1
	h ^= h >> 29
	pct := int(h % 1000)
	var tenant string
	switch {
	case pct < 500:
		tenant = "t0"
	case pct < 800:
		tenant = "t1"
	case pct < 940:
		tenant = "t2"
	case pct < 990:
		tenant = "t3"
	default:
		tenant = "t4"
	}
	u := int((h >> 12) % 1000)
	md := map[string]string{"lang": "en", "topic": fmt.Sprint("k", top%20), "half": "no"}
	if (h>>50)%2 == 0 {
		md["half"] = "yes"
	}
	if u < 100 {
		md["lang"] = "de"
	}
	if (h>>40)%20 == 0 {
		md["rare"] = "yes"
	}
	if (h>>24)%200 == 0 {
		md["vrare"] = "yes"
	}
	return tenant, spi.Strings(md)
}
