package embedded

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/benchutil"
	"github.com/ragd/ragd/spi"
)

// BenchmarkANNTune measures the IVF of an index alone (no file: the
// candidates are rescored from the generated vectors) at one size,
// RAG_BENCH_ANN_N rows (100,000 by default) of Synth points, for a sweep
// of probe settings (RAG_BENCH_ANN_PROBES, multiples of the default) and
// list counts (RAG_BENCH_ANN_LISTS, multiples of √n): recall@k against
// the exact search of the same index, the CPU time of choosing the
// candidates, the eligible rows visited and the candidates rescored, per
// query, unfiltered, per tenant and with filters of several
// selectivities. It is how annParams' defaults were chosen
// (docs/vector.md, "Approximate search").
func BenchmarkANNTune(b *testing.B) {
	s := LoadSynth(b)
	n := benchutil.EnvInt(b, "RAG_BENCH_ANN_N", 100_000)
	ix := newIndex(s.Dim, true)
	ix.reserve(n)
	vec := make([]float32, s.Dim)
	for i := range n {
		top := s.Point(i, vec)
		ten, md := SynthMeta(i, top)
		ix.put(synthID(i), ten, md, vec, 0)
	}
	queries := s.Queries
	if m := benchutil.EnvInt(b, "RAG_BENCH_ANN_QUERIES", 400); m < len(queries) {
		queries = queries[:m]
	}
	type tcase struct {
		name   string
		tenant string
		filter spi.Filter
	}
	cases := []tcase{
		{"all", "", spi.Filter{}},
		{"tenant50", "t0", spi.Filter{}},
		{"tenant15", "t2", spi.Filter{}},
		{"tenant1", "t4", spi.Filter{}},
		{"lang10", "", spi.StringFilter(map[string][]string{"lang": {"de"}})},
		{"rare5", "", spi.StringFilter(map[string][]string{"rare": {"yes"}})},
		{"topic5", "", spi.StringFilter(map[string][]string{"topic": {"k3"}})},
		{"vrare0.5", "", spi.StringFilter(map[string][]string{"vrare": {"yes"}})},
		{"tenant30+lang10", "t1", spi.StringFilter(map[string][]string{"lang": {"de"}})},
	}
	var ks []int
	for _, k := range envFloats(b, "RAG_BENCH_ANN_KS", []float64{10, 100}) {
		ks = append(ks, int(k))
	}
	// The exact answers.
	truth := map[string][][]string{}
	for _, c := range cases {
		for _, k := range ks {
			key := fmt.Sprint(c.name, k)
			for _, qv := range queries {
				q := tuneTenant(ix, tuneQuery(qv, k, c.tenant, c.filter))
				ids, _, _, err := ix.candidates(context.Background(), q, 1)
				if err != nil {
					b.Fatal(err)
				}
				truth[key] = append(truth[key], synthRescore(s, q, ids))
			}
		}
	}
	listsSweep := envFloats(b, "RAG_BENCH_ANN_LISTS", []float64{1})
	probeSweep := envFloats(b, "RAG_BENCH_ANN_PROBES", []float64{0.5, 1, 2})
	base := ix.ann
	for _, lm := range listsSweep {
		ix.ann = base
		ix.ann.listsPerSqrt = base.listsPerSqrt * lm
		ix.ivf = nil
		start, cpu0 := time.Now(), benchutil.CPUTime()
		if err := ix.buildIVF(context.Background(), true); err != nil {
			b.Fatal(err)
		}
		b.Logf("n=%d lists=%d: built in %v (%v CPU)", n, ix.ivf.nlist(), time.Since(start), benchutil.CPUTime()-cpu0)
		for _, pm := range probeSweep {
			ix.ann.probeLists = base.probeLists * pm
			for _, c := range cases {
				for _, k := range ks {
					name := fmt.Sprintf("n=%d/lists=%d/probe=%.2f/%s/k=%d", n, ix.ivf.nlist(), ix.ann.probeLists, c.name, k)
					want := truth[fmt.Sprint(c.name, k)]
					b.Run(name, func(b *testing.B) {
						var hits, total, cands, exact int
						var cpu time.Duration
						var lat []time.Duration
						i := 0
						for b.Loop() {
							qi := i % len(queries)
							q := tuneTenant(ix, tuneQuery(queries[qi], k, c.tenant, c.filter))
							c0, t0 := benchutil.CPUTime(), time.Now()
							ids, _, _, err := ix.candidates(context.Background(), q, 1)
							lat = append(lat, time.Since(t0))
							cpu += benchutil.CPUTime() - c0
							if err != nil {
								b.Fatal(err)
							}
							got := synthRescore(s, q, ids)
							cands += len(ids)
							for _, id := range got {
								if slices.Contains(want[qi], id) {
									hits++
								}
							}
							total += len(want[qi])
							if ix.ann.exact(ix.len(), ix.ivf.nlist(), tuneEligible(ix, q), k) {
								exact++
							}
							i++
						}
						b.ReportMetric(float64(hits)/float64(max(total, 1)), "recall")
						b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
						b.ReportMetric(float64(cands)/float64(b.N), "cands/op")
						b.ReportMetric(float64(exact)/float64(b.N), "exact/op")
						benchutil.Percentiles(b, lat)
					})
				}
			}
		}
	}
}

func tuneQuery(v []float32, k int, tenant string, f spi.Filter) query {
	q := query{vec: append([]float32(nil), v...), k: k, filter: f, anyTen: tenant == "", tenantName: tenant}
	normalizeInPlace(q.vec)
	return q
}

// tuneTenant sets q's interned tenant, as Store.candidates does.
func tuneTenant(ix *index, q query) query {
	q.tenant = ix.tenantIDs[q.tenantName]
	return q
}

func tuneEligible(ix *index, q query) int {
	e := q.eligibleExpr()
	if e == nil {
		return ix.len()
	}
	return popcount(ix.post.rows(e, ix.len()))
}

// synthRescore scores ids in float32 from their generated vectors and
// returns the best q.k, as rescore does from the file.
func synthRescore(s *Synth, q query, ids []string) []string {
	type scored struct {
		id  string
		key float32
	}
	vec := make([]float32, s.Dim)
	var all []scored
	for _, id := range ids {
		i, err := strconv.Atoi(id[1:])
		if err != nil {
			panic(err)
		}
		s.Point(i, vec)
		all = append(all, scored{id, dot(q.vec, vec)})
	}
	slices.SortFunc(all, func(a, b scored) int {
		if c := cmp.Compare(b.key, a.key); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	var out []string
	for _, x := range all[:min(q.k, len(all))] {
		out = append(out, x.id)
	}
	return out
}

func synthID(i int) string { return fmt.Sprintf("d%07d", i) }

func envFloats(tb testing.TB, name string, def []float64) []float64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []float64
	for _, f := range strings.Split(v, ",") {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		out = append(out, x)
	}
	return out
}
