package keyword_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/internal/benchutil"
	"github.com/ragd/ragd/spi"
)

// BenchmarkCranfieldIngest indexes the 1,400 Cranfield documents into a
// fresh index per iteration with the default batch size (each batch is
// durable when Upsert returns), a full index and a lean one
// (Config.Lean); "replace" then writes every document again with its
// text reversed, so each write first finds the replaced document's terms
// (stored text analysed again, or stored term hashes resolved).
func BenchmarkCranfieldIngest(b *testing.B) {
	c := loadCranfield(b)
	ctx := context.Background()
	again := make([]spi.Document, len(c.Corpus))
	for i, d := range c.Corpus {
		w := strings.Fields(d.Text)
		slices.Reverse(w)
		d.Text = strings.Join(w, " ") + " again"
		again[i] = d
	}
	for _, lean := range []bool{false, true} {
		name := "full"
		if lean {
			name = "lean"
		}
		for _, replace := range []bool{false, true} {
			bname := name
			if replace {
				bname += "/replace"
			}
			b.Run(bname, func(b *testing.B) {
				var cpu time.Duration
				for b.Loop() {
					b.StopTimer()
					be, err := keyword.Open(keyword.Config{Dir: b.TempDir(), Lean: lean})
					if err != nil {
						b.Fatal(err)
					}
					if replace {
						if err := be.Upsert(ctx, c.Corpus); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
					start := benchutil.CPUTime()
					docs := c.Corpus
					if replace {
						docs = again
					}
					if err := be.Upsert(ctx, docs); err != nil {
						b.Fatal(err)
					}
					if err := be.Close(); err != nil { // scorch's persisting and merging included
						b.Fatal(err)
					}
					cpu += benchutil.CPUTime() - start
				}
				b.ReportMetric(float64(len(c.Corpus))*float64(b.N)/b.Elapsed().Seconds(), "docs/s")
				b.ReportMetric(float64(cpu.Microseconds())/float64(len(c.Corpus)*b.N), "cpu-µs/doc")
			})
		}
	}
}

// BenchmarkCranfieldRetrieve runs the 225 Cranfield queries round-robin and
// reports latency percentiles per query.
func BenchmarkCranfieldRetrieve(b *testing.B) {
	c := loadCranfield(b)
	be := openCranfield(b, c, keyword.Config{})
	ctx := context.Background()
	for _, k := range []int{10, 100} {
		b.Run("k="+strconv.Itoa(k), func(b *testing.B) {
			var lat []time.Duration
			i := 0
			for b.Loop() {
				q := c.Queries[i%len(c.Queries)]
				i++
				start := time.Now()
				if _, err := be.Retrieve(ctx, spi.KeywordRequest{Text: q.Text, K: k}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			benchutil.Percentiles(b, lat)
		})
	}
}

// BenchmarkTenantScoring: Retrieve latency with and without a tenant, on
// Cranfield and, when RAG_BENCH_KEYWORD_CORPUS names a JSONL corpus (e.g.
// 100k documents from ../shared/tools/synth_corpus.py), on it too. In
// "3tenants" document i belongs to tenant t(i mod 3) and queries ask for
// t1 or for every tenant; in "1tenant" every document and query is
// tenant acme (a single-tenant deployment).
func BenchmarkTenantScoring(b *testing.B) {
	c := loadCranfield(b)
	corpora := []struct {
		name string
		docs []spi.Document
	}{{"cranfield", c.Corpus}}
	if path := os.Getenv("RAG_BENCH_KEYWORD_CORPUS"); path != "" {
		docs := readJSONL(b, path)
		corpora = append(corpora, struct {
			name string
			docs []spi.Document
		}{fmt.Sprintf("synth%dk", len(docs)/1000), docs})
	}
	for _, corp := range corpora {
		for _, layout := range []string{"3tenants", "1tenant"} {
			docs := make([]spi.Document, len(corp.docs))
			for i, d := range corp.docs {
				d.Tenant = "acme"
				if layout == "3tenants" {
					d.Tenant = fmt.Sprint("t", i%3)
				}
				docs[i] = d
			}
			be := mustOpen(b, keyword.Config{})
			if err := be.Upsert(context.Background(), docs); err != nil {
				b.Fatal(err)
			}
			tenants := []string{"acme"}
			if layout == "3tenants" {
				tenants = []string{"t1", ""}
			}
			for _, tenant := range tenants {
				for _, k := range []int{10, 100} {
					name := fmt.Sprintf("%s/%s/tenant=%s/k=%d", corp.name, layout, cmp.Or(tenant, "any"), k)
					b.Run(name, func(b *testing.B) {
						var lat []time.Duration
						i := 0
						cpu0 := benchutil.CPUTime()
						for b.Loop() {
							q := c.Queries[i%len(c.Queries)]
							i++
							start := time.Now()
							if _, err := be.Retrieve(context.Background(), spi.KeywordRequest{Text: q.Text, K: k, Tenant: tenant}); err != nil {
								b.Fatal(err)
							}
							lat = append(lat, time.Since(start))
						}
						b.ReportMetric(float64((benchutil.CPUTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
						benchutil.Percentiles(b, lat)
					})
				}
			}
		}
	}
}

// readJSONL reads a corpus of ragd documents, one JSON object a line.
func readJSONL(tb testing.TB, path string) []spi.Document {
	tb.Helper()
	var docs []spi.Document
	benchutil.EachDocument(tb, path, -1, func(d spi.Document) { docs = append(docs, d) })
	return docs
}

// BenchmarkApplyDeletes: the change-log apply rate of deletes. n documents
// (RAG_BENCH_DELETES, default 100,000) are applied through the log, then
// deleted through it in batches of 256 (the applier's batch), each batch
// with its checkpoint; reported: the delete rate over the first and the
// last tenth of the deletes, and overall. Run with -benchtime 1x. It stops
// early (and says so) after RAG_BENCH_DELETES_BUDGET (default 10m).
func BenchmarkApplyDeletes(b *testing.B) {
	n := 100_000
	if v := os.Getenv("RAG_BENCH_DELETES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 2560 {
			b.Fatalf("RAG_BENCH_DELETES=%q: want a number of at least 2560", v)
		}
	}
	budget := 10 * time.Minute
	if v := os.Getenv("RAG_BENCH_DELETES_BUDGET"); v != "" {
		var err error
		if budget, err = time.ParseDuration(v); err != nil {
			b.Fatal(err)
		}
	}
	const batch = 256
	ctx := context.Background()
	for b.Loop() {
		be := mustOpen(b, keyword.Config{})
		seq := uint64(0)
		changes := make([]spi.Change, 0, batch)
		for i := range n {
			seq++
			d := spi.Document{ID: fmt.Sprintf("doc-%07d", i), Title: fmt.Sprint("title ", i%97),
				Text: fmt.Sprintf("word%d word%d word%d common text", i%1000, i%313, i%71)}
			changes = append(changes, spi.Change{Seq: seq, Op: spi.OpUpsert, ID: d.ID, Doc: &d, Version: seq})
			if len(changes) == batch || i == n-1 {
				if err := be.ApplyChanges(ctx, "bench", changes, seq); err != nil {
					b.Fatal(err)
				}
				changes = changes[:0]
			}
		}
		// rate is the delete rate over the last w batches before batch i.
		var ends []time.Time
		rate := func(from, to int) float64 {
			return float64((to-from)*batch) / ends[to-1].Sub(ends[from-1]).Seconds()
		}
		ends = append(ends, time.Now())
		for i := 0; i < n; i += batch {
			for j := i; j < min(i+batch, n); j++ {
				seq++
				changes = append(changes, spi.Change{Seq: seq, Op: spi.OpDelete, ID: fmt.Sprintf("doc-%07d", j), Version: seq})
			}
			if err := be.ApplyChanges(ctx, "bench", changes, seq); err != nil {
				b.Fatal(err)
			}
			changes = changes[:0]
			ends = append(ends, time.Now())
			if ends[len(ends)-1].Sub(ends[0]) > budget {
				b.Logf("stopped after %d of %d deletes (budget %v)", i+batch, n, budget)
				break
			}
		}
		k := len(ends) - 1 // batches done
		tenth := max(1, k/10)
		b.ReportMetric(rate(1, k+1), "deletes/s")
		b.ReportMetric(rate(1, tenth+1), "first10%-deletes/s")
		b.ReportMetric(rate(k+1-tenth, k+1), "last10%-deletes/s")
		b.ReportMetric(float64(k*batch), "deletes")
	}
}

// BenchmarkBackendHeap: the Go heap of a whole keyword backend (bleve and
// the in-memory postings) per document, after upserting the first
// RAG_BENCH_KEYWORD_DOCS documents (default 100,000) of the JSONL corpus
// RAG_BENCH_KEYWORD_CORPUS and a GC, less the heap before it was opened.
// Run with -benchtime 1x.
func BenchmarkBackendHeap(b *testing.B) {
	path := os.Getenv("RAG_BENCH_KEYWORD_CORPUS")
	if path == "" {
		b.Skip("RAG_BENCH_KEYWORD_CORPUS names no corpus")
	}
	n := benchutil.EnvInt(b, "RAG_BENCH_KEYWORD_DOCS", 100_000)
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		docs := readJSONL(b, path)
		docs = docs[:min(n, len(docs))]
		be := mustOpen(b, keyword.Config{})
		if err := be.Upsert(context.Background(), docs); err != nil {
			b.Fatal(err)
		}
		keyword.WaitRebuild(be) // a rebuild's copy is not the index
		count := len(docs)
		docs = nil
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(count), "heap-B/doc")
		runtime.KeepAlive(be)
	}
}
