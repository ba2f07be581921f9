package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/graph/embedded"
	"github.com/ragd/ragd/ingest/keyphrase"
	"github.com/ragd/ragd/internal/benchutil"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

// BenchmarkCranfield: go test -run '^$' -bench Cranfield ./backends/graph/embedded/
// The store runs with its defaults (fsync on every commit).
func BenchmarkCranfield(b *testing.B) {
	spitest.BenchGraph(b, func(b *testing.B) spitest.GraphStore {
		s, err := embedded.Open(context.Background(), embedded.Config{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}, "")
}

// BenchmarkMatchEntitiesLargeGraph: MatchEntities on a graph of 50,000
// documents and 200,000 entities, for a query that touches one entity:
// the per-call cost that does not depend on the query.
func BenchmarkMatchEntitiesLargeGraph(b *testing.B) {
	ctx := context.Background()
	s, err := embedded.Open(ctx, embedded.Config{Dir: b.TempDir(), NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	const n = 50_000
	batch := make([]spi.Document, 0, 1000)
	for i := range n {
		batch = append(batch, spi.Document{ID: fmt.Sprintf("d%05d", i), Text: "x",
			Entities: []string{fmt.Sprintf("alpha%d", i), fmt.Sprintf("beta%d", i), fmt.Sprintf("gamma%d", i), fmt.Sprintf("delta%d", i)}})
		if len(batch) == cap(batch) {
			if err := s.Upsert(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	i := 0
	for b.Loop() {
		refs, err := s.MatchEntities(ctx, spi.KeywordRequest{Text: fmt.Sprintf("alpha%d", i%n), K: 10})
		if err != nil || len(refs) != 1 {
			b.Fatalf("MatchEntities = %v, %v", refs, err)
		}
		i++
	}
}

// BenchmarkBuildScale applies RAG_BENCH_GRAPH_DOCS documents of the
// JSONL corpus RAG_BENCH_GRAPH_CORPUS (the scale benchmark's
// synth-N.jsonl: {"id", "title", "text"} lines) to a fresh store in
// batches of ApplyBatch changes (RAG_BENCH_GRAPH_BATCH to change it), as
// the change log's applier does when the graph is woken, with the
// entities ragd's keyphrase extractor gives them
// (extracted outside the timed applies), and the store's defaults (fsync
// on every commit). It logs each 50,000's apply time and CPU, and reports
// the time and CPU of the applies per document (ns/op counts the reading
// and extraction too) and the Go heap held after the build per document;
// with RAG_BENCH_GRAPH_QUERIES (a JSONL file of {"text"} lines, the scale
// benchmark's queries-mixed.jsonl) also the graph source's first stage
// on the built graph: MatchEntities of each query, k = 100 (the
// retriever's window), its CPU and p50 / p99. Skipped without the corpus:
//
//	RAG_BENCH_GRAPH_CORPUS=../bench/synth-1000000.jsonl RAG_BENCH_GRAPH_DOCS=200000 \
//	  go test -run '^$' -bench BuildScale -benchtime 1x ./backends/graph/embedded/
//
// Under a GOMEMLIMIT just above the heap it ends with, the same build
// shows what a soft limit the live heap outgrows costs (docs/graph.md,
// "Memory and build time").
func BenchmarkBuildScale(b *testing.B) {
	path := os.Getenv("RAG_BENCH_GRAPH_CORPUS")
	if path == "" {
		b.Skip("RAG_BENCH_GRAPH_CORPUS not set")
	}
	limit := benchutil.EnvInt(b, "RAG_BENCH_GRAPH_DOCS", 100_000)
	const chunk = 50_000
	// As ragd's change-log applier hands them.
	batch := benchutil.EnvInt(b, "RAG_BENCH_GRAPH_BATCH", embedded.ApplyBatch)
	ctx := context.Background()
	x, err := keyphrase.New(keyphrase.Config{})
	if err != nil {
		b.Fatal(err)
	}
	var queries []string
	if q := os.Getenv("RAG_BENCH_GRAPH_QUERIES"); q != "" {
		queries = benchutil.Texts(b, q)
	}
	for b.Loop() {
		s, err := embedded.Open(ctx, embedded.Config{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		var changes []spi.Change
		var wall, cpu, wallAll, cpuAll time.Duration
		n := 0
		apply := func() {
			w0, c0 := time.Now(), benchutil.CPUTime()
			if err := s.ApplyChanges(ctx, "log", changes, uint64(n)); err != nil {
				b.Fatal(err)
			}
			wall, cpu = wall+time.Since(w0), cpu+benchutil.CPUTime()-c0
			changes = changes[:0]
		}
		benchutil.EachDocument(b, path, limit, func(d spi.Document) {
			var err error
			if d.Entities, err = x.Extract(ctx, d); err != nil {
				b.Fatal(err)
			}
			n++
			changes = append(changes, spi.Change{Seq: uint64(n), Op: spi.OpUpsert, ID: d.ID, Doc: &d, Version: uint64(n)})
			if len(changes) == batch {
				apply()
			}
			if n%chunk == 0 || n == limit {
				if len(changes) > 0 {
					apply()
				}
				b.Logf("%d documents: the last %d applied in %v, %v of CPU", n, (n-1)%chunk+1, wall.Round(time.Millisecond), cpu.Round(time.Millisecond))
				wallAll, cpuAll, wall, cpu = wallAll+wall, cpuAll+cpu, 0, 0
			}
		})
		if len(changes) > 0 {
			apply()
			wallAll, cpuAll = wallAll+wall, cpuAll+cpu
		}
		runtime.GC()
		runtime.GC() // and bbolt's pooled pages, kept through one collection
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(cpuAll.Microseconds())/float64(n), "cpu-µs/doc")
		b.ReportMetric(float64(wallAll.Microseconds())/float64(n), "µs/doc")
		b.ReportMetric((float64(after.HeapAlloc)-float64(before.HeapAlloc))/float64(n), "heap-B/doc")
		if len(queries) > 0 {
			matchQueries(b, s, queries)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// matchQueries runs MatchEntities for each query once, k = 100, and
// reports its CPU per query and its latency percentiles.
func matchQueries(b *testing.B, s *embedded.Store, queries []string) {
	ctx := context.Background()
	lat := make([]time.Duration, 0, len(queries))
	cpu0 := benchutil.CPUTime()
	for _, q := range queries {
		start := time.Now()
		if _, err := s.MatchEntities(ctx, spi.KeywordRequest{Text: q, K: 100}); err != nil && !errors.Is(err, spi.ErrNothingToSearch) {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.ReportMetric(float64((benchutil.CPUTime()-cpu0).Microseconds())/float64(len(queries)), "match-cpu-µs/query")
	benchutil.Percentiles(b, lat)
}
