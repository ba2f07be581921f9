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
	"syscall"
	"testing"
	"time"

	"github.com/ragd/ragd/embedder/builtin/internal/kernel"
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
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := m.Documents().Embed(ctx, docs); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(len(docs) * b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "docs/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/n, "cpu-ms/doc")
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

// cpuTime is the process's user and system CPU time. On a busy machine the
// CPU time a document costs varies less than the wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
