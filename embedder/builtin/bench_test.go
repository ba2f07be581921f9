package builtin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragd/ragd/embedder/builtin"
	"github.com/ragd/ragd/embedder/builtin/internal/kernel"
	"github.com/ragd/ragd/internal/benchutil"
	"github.com/ragd/ragd/internal/integration"
)

// Benchmark texts: RAG_BENCH_CORPUS names a BEIR corpus.jsonl (Cranfield's,
// for scripts/bench.sh embed) and RAG_BENCH_QUERIES its queries.jsonl;
// without them, synthetic texts of Cranfield's lengths. BENCH_DOCS (128)
// documents make one operation of BenchmarkEmbedDocuments.
func benchTexts(tb testing.TB, env string, n int, words int) []string {
	tb.Helper()
	if path := os.Getenv(env); path != "" {
		f, err := os.Open(path)
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		var out []string
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() && len(out) < n {
			var rec struct{ Title, Text string }
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				tb.Fatal(err)
			}
			out = append(out, rec.Text)
		}
		return out
	}
	vocab := strings.Fields("the of a boundary layer flow wing pressure at supersonic speed shock heat transfer " +
		"theory on for with experimental results mach number turbulent laminar skin friction plate surface " +
		"and is are by an in to from buckling cylinder panel stress temperature distribution jet nozzle")
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]string, n)
	for i := range out {
		w := make([]string, words/2+r.IntN(words))
		for j := range w {
			w[j] = vocab[r.IntN(len(vocab))]
		}
		out[i] = strings.Join(w, " ")
	}
	return out
}

func benchDocs() int {
	n := 128
	fmt.Sscan(os.Getenv("BENCH_DOCS"), &n)
	return n
}

// BenchmarkEmbedDocuments embeds BENCH_DOCS documents per operation with all
// GOMAXPROCS threads; docs/s is the figure to read.
func BenchmarkEmbedDocuments(b *testing.B) {
	m := openMiniLM(b)
	docs := benchTexts(b, "RAG_BENCH_CORPUS", benchDocs(), 170)
	ctx := context.Background()
	if _, err := m.Documents().Embed(ctx, docs[:4]); err != nil {
		b.Fatal(err)
	}
	b.Logf("kernel %s, %d documents", kernel.KernelName(), len(docs))
	cpu0 := benchutil.CPUTime()
	for b.Loop() {
		if _, err := m.Documents().Embed(ctx, docs); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(len(docs) * b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "docs/s")
	b.ReportMetric(float64((benchutil.CPUTime()-cpu0).Microseconds())/1000/n, "cpu-ms/doc")
}

// BenchmarkEmbedQuery embeds one short query per operation; p50 and p99
// latencies are reported beside the mean.
func BenchmarkEmbedQuery(b *testing.B) {
	m := openMiniLM(b)
	queries := benchTexts(b, "RAG_BENCH_QUERIES", 200, 12)
	ctx := context.Background()
	var lat []time.Duration
	i := 0
	for b.Loop() {
		q := queries[i%len(queries)]
		i++
		start := time.Now()
		if _, err := m.Queries().Embed(ctx, []string{q}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkEmbedQueryBatch embeds B queries per operation as one call (one
// forward pass), for B of 1, 4, 8 and 16, in each precision: CPU ms per
// query is the figure to read, how much a batch of concurrent queries saves
// over one at a time.
func BenchmarkEmbedQueryBatch(b *testing.B) {
	queries := benchTexts(b, "RAG_BENCH_QUERIES", 200, 12)
	ctx := context.Background()
	for _, prec := range []string{"fp32", "int8"} {
		m, err := builtin.Open(builtin.Config{Dir: integration.ModelDir(b), Precision: prec})
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{1, 4, 8, 16} {
			b.Run(fmt.Sprintf("%s/batch%d", prec, n), func(b *testing.B) {
				b.Logf("kernel %s, int8 kernel %s", kernel.KernelName(), kernel.QKernelName())
				i := 0
				cpu0 := benchutil.CPUTime()
				for b.Loop() {
					batch := make([]string, n)
					for j := range batch {
						batch[j] = queries[i%len(queries)]
						i++
					}
					if _, err := m.Queries().Embed(ctx, batch); err != nil {
						b.Fatal(err)
					}
				}
				q := float64(n * b.N)
				b.ReportMetric(float64((benchutil.CPUTime()-cpu0).Microseconds())/1000/q, "cpu-ms/query")
				b.ReportMetric(q/b.Elapsed().Seconds(), "queries/s")
			})
		}
		m.Close()
	}
}

// BenchmarkQueryLoad embeds queries the way a busy server does, for each
// precision (RAG_BENCH_PRECISIONS, default "int8 fp32"): C clients each
// embedding one query at a time (closed loop; C of 1, 2, 8 and 32), then
// arrivals on a fixed schedule at 80 % of that precision's best closed-loop
// rate (open loop, a goroutine per arrival). b.N queries per
// sub-benchmark; queries/s, p50 and p99 latency, CPU ms per query and the
// mean queries per forward pass are reported; "ingest/clients2" runs two
// clients while documents are embedded back to back (documents/s
// reported too).
func BenchmarkQueryLoad(b *testing.B) {
	queries := benchTexts(b, "RAG_BENCH_QUERIES", 200, 12)
	precs := strings.Fields(os.Getenv("RAG_BENCH_PRECISIONS"))
	if len(precs) == 0 {
		precs = []string{"int8", "fp32"}
	}
	ctx := context.Background()
	for _, prec := range precs {
		m, err := builtin.Open(builtin.Config{Dir: integration.ModelDir(b), Precision: prec})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Queries().Embed(ctx, queries[:1]); err != nil {
			b.Fatal(err)
		}
		report := func(b *testing.B, lat []time.Duration, cpu0 time.Duration, st0 builtin.BatchStats) {
			slices.Sort(lat)
			n := float64(len(lat))
			b.ReportMetric(n/b.Elapsed().Seconds(), "queries/s")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64((benchutil.CPUTime()-cpu0).Microseconds())/1000/n, "cpu-ms/query")
			st := m.BatchStats()
			if p := st.Passes - st0.Passes; p > 0 {
				b.ReportMetric(n/float64(p), "queries/pass")
			}
		}
		capacity := 0.0
		for _, clients := range []int{1, 2, 8, 32} {
			b.Run(fmt.Sprintf("%s/closed/clients%d", prec, clients), func(b *testing.B) {
				lat := make([]time.Duration, b.N)
				var next atomic.Int64
				st0, cpu0 := m.BatchStats(), benchutil.CPUTime()
				b.ResetTimer()
				var wg sync.WaitGroup
				for range clients {
					wg.Go(func() {
						for {
							i := int(next.Add(1) - 1)
							if i >= b.N {
								return
							}
							start := time.Now()
							if _, err := m.Queries().Embed(ctx, []string{queries[i%len(queries)]}); err != nil {
								b.Error(err)
								return
							}
							lat[i] = time.Since(start)
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				report(b, lat, cpu0, st0)
				if b.N >= 100 { // not the framework's first run of one query: its rate is one query's
					capacity = max(capacity, float64(b.N)/b.Elapsed().Seconds())
				}
			})
		}
		b.Run(prec+"/ingest/clients2", func(b *testing.B) {
			// Two query clients while documents are embedded back to back
			// (a bulk ingest): what a query waits behind document chunks.
			docs := benchTexts(b, "RAG_BENCH_CORPUS", 64, 170)
			stop := make(chan struct{})
			var ndocs atomic.Int64
			var ingest sync.WaitGroup
			ingest.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := m.Documents().Embed(ctx, docs); err != nil {
						b.Error(err)
						return
					}
					ndocs.Add(int64(len(docs)))
				}
			})
			lat := make([]time.Duration, b.N)
			var next atomic.Int64
			st0, cpu0 := m.BatchStats(), benchutil.CPUTime()
			b.ResetTimer()
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					for {
						i := int(next.Add(1) - 1)
						if i >= b.N {
							return
						}
						start := time.Now()
						if _, err := m.Queries().Embed(ctx, []string{queries[i%len(queries)]}); err != nil {
							b.Error(err)
							return
						}
						lat[i] = time.Since(start)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			d := ndocs.Load()
			close(stop)
			ingest.Wait()
			report(b, lat, cpu0, st0)
			b.ReportMetric(0, "queries/pass") // passes of documents too: not meaningful
			b.ReportMetric(float64(d)/b.Elapsed().Seconds(), "docs/s")
		})
		b.Run(prec+"/open/80pct", func(b *testing.B) {
			if capacity == 0 {
				b.Skip("no closed-loop run to take the capacity from")
			}
			rate := 0.8 * capacity
			lat := make([]time.Duration, b.N)
			st0, cpu0 := m.BatchStats(), benchutil.CPUTime()
			b.ResetTimer()
			t0 := time.Now()
			var wg sync.WaitGroup
			for i := range b.N {
				at := t0.Add(time.Duration(float64(i) / rate * float64(time.Second)))
				time.Sleep(time.Until(at))
				wg.Go(func() {
					if _, err := m.Queries().Embed(ctx, []string{queries[i%len(queries)]}); err != nil {
						b.Error(err)
						return
					}
					lat[i] = time.Since(at) // from the scheduled arrival: a late send counts
				})
			}
			wg.Wait()
			b.StopTimer()
			report(b, lat, cpu0, st0)
			b.ReportMetric(rate, "offered/s")
		})
		m.Close()
	}
}

// BenchmarkPrecision is BenchmarkEmbedDocuments and BenchmarkEmbedQueryBatch
// (batch 1, with its p50 and p99 latency, and 16) for each precision of the
// linear layers.
func BenchmarkPrecision(b *testing.B) {
	docs := benchTexts(b, "RAG_BENCH_CORPUS", benchDocs(), 170)
	queries := benchTexts(b, "RAG_BENCH_QUERIES", 200, 12)
	ctx := context.Background()
	for _, prec := range []string{"fp32", "int8"} {
		m, err := builtin.Open(builtin.Config{Dir: integration.ModelDir(b), Precision: prec})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(prec+"/documents", func(b *testing.B) {
			cpu0 := benchutil.CPUTime()
			for b.Loop() {
				if _, err := m.Documents().Embed(ctx, docs); err != nil {
					b.Fatal(err)
				}
			}
			n := float64(len(docs) * b.N)
			b.ReportMetric(n/b.Elapsed().Seconds(), "docs/s")
			b.ReportMetric(float64((benchutil.CPUTime()-cpu0).Microseconds())/1000/n, "cpu-ms/doc")
		})
		for _, batch := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/queries%d", prec, batch), func(b *testing.B) {
				i := 0
				var lat []time.Duration
				cpu0 := benchutil.CPUTime()
				for b.Loop() {
					qs := make([]string, batch)
					for j := range qs {
						qs[j] = queries[i%len(queries)]
						i++
					}
					start := time.Now()
					if _, err := m.Queries().Embed(ctx, qs); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
				b.ReportMetric(float64((benchutil.CPUTime()-cpu0).Microseconds())/1000/float64(batch*b.N), "cpu-ms/query")
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			})
		}
		m.Close()
	}
}
