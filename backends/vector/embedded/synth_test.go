package embedded

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// Synth makes vectors with the structure of real embeddings for the
// benchmarks: point i is a convex mixture of 2 or 3 real sentence vectors
// (all-MiniLM-L6-v2 vectors of distinct sentences, made by `ragd embed`)
// plus a little gaussian noise, normalised; a pure function of i, so a
// benchmark regenerates any vector instead of holding them all. Queries
// are vectors of other sentences (held-out documents), not points.
//
// RAG_BENCH_BASE_VECTORS and RAG_BENCH_QUERY_VECTORS name the two files
// (one JSON array per line, the output of `ragd embed`); benchmarks that
// need them skip without. docs/vector.md ("Measuring") says how to make
// them.
type Synth struct {
	Base    [][]float32
	Queries [][]float32
	Dim     int
	Noise   float64 // standard deviation per dimension
}

// LoadSynth reads the files the environment names, or skips tb.
func LoadSynth(tb testing.TB) *Synth {
	tb.Helper()
	bp, qp := os.Getenv("RAG_BENCH_BASE_VECTORS"), os.Getenv("RAG_BENCH_QUERY_VECTORS")
	if bp == "" || qp == "" {
		tb.Skip("RAG_BENCH_BASE_VECTORS and RAG_BENCH_QUERY_VECTORS are not set (docs/vector.md, \"Measuring\")")
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
// of its largest weight.
func (s *Synth) Point(i int, dst []float32) int {
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

// SynthMeta is the tenant and metadata of point i: tenants of 50, 30, 15,
// 4 and 1% of the points; lang=de on 10%, rare=yes on 5%, vrare=yes on
// 0.5%, independent of the vector; topic (20 values, 5% each) from the
// point's heaviest sentence, so correlated with the vector.
func SynthMeta(i, top int) (string, map[string]string) {
	h := uint64(i)*0x9e3779b97f4a7c15 + 1
	h ^= h >> 29
	pct := int(h % 1000)
	var tenant string
	switch {
	case pct < 500:
		tenant = "t0"
	case pct < 800:
		tenant = "t1"
	case pct < 950:
		tenant = "t2"
	case pct < 990:
		tenant = "t3"
	default:
		tenant = "t4"
	}
	u := int((h >> 12) % 1000)
	md := map[string]string{"lang": "en", "topic": fmt.Sprint("k", top%20)}
	if u < 100 {
		md["lang"] = "de"
	}
	if (h>>40)%20 == 0 {
		md["rare"] = "yes"
	}
	if (h>>24)%200 == 0 {
		md["vrare"] = "yes"
	}
	return tenant, md
}
