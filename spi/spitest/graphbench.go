package spitest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/graph/graphspec"
	"github.com/ragd/ragd/spi"
)

// CranfieldDir finds the shared Cranfield corpus: $RAG_CRANFIELD_DIR, else
// shared/data/cranfield in the working directory or one of its parents
// (../shared beside a clone included). It skips tb when none is found.
func CranfieldDir(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv("RAG_CRANFIELD_DIR"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		for _, c := range []string{filepath.Join(dir, "shared", "data", "cranfield"), filepath.Join(dir, "..", "shared", "data", "cranfield")} {
			if _, err := os.Stat(filepath.Join(c, "corpus.jsonl")); err == nil {
				return c
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Skip("Cranfield corpus not found; set RAG_CRANFIELD_DIR")
		}
		dir = parent
	}
}

// graphStopWords are left out of the derived title entities.
var graphStopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be by for from has have how in into is it its of on or
		that the their this to was were what when which with within without under upon using use used`) {
		graphStopWords[w] = true
	}
}

// TitleBigrams is the deterministic entity extraction the graph benchmarks
// use on Cranfield, which has no entities: the bigrams of consecutive title
// terms once stop words and one-letter terms are removed.
func TitleBigrams(title string) []string {
	var ws []string
	for _, t := range graphspec.Tokens(title) {
		if len(t) > 1 && !graphStopWords[t] {
			ws = append(ws, t)
		}
	}
	var out []string
	for i := 0; i+1 < len(ws); i++ {
		out = append(out, ws[i]+" "+ws[i+1])
	}
	return out
}

// CranfieldGraph loads Cranfield's documents with TitleBigrams entities,
// all in tenant, and its query texts in file order.
func CranfieldGraph(tb testing.TB, dir, tenant string) (docs []spi.Document, queries []string) {
	tb.Helper()
	readJSONL(tb, filepath.Join(dir, "corpus.jsonl"), func(r map[string]string) {
		docs = append(docs, spi.Document{ID: r["_id"], Tenant: tenant, Title: r["title"], Text: r["text"], Entities: TitleBigrams(r["title"])})
	})
	readJSONL(tb, filepath.Join(dir, "queries.jsonl"), func(r map[string]string) { queries = append(queries, r["text"]) })
	return docs, queries
}

func readJSONL(tb testing.TB, path string, fn func(map[string]string)) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var raw map[string]any
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		r := map[string]string{}
		for k, v := range raw {
			if s, ok := v.(string); ok {
				r[k] = s
			}
		}
		fn(r)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
}

// BenchGraph benchmarks a graph store on Cranfield: ingest of the whole
// corpus (batches of 200, ns/op = one full ingest), Expand at hops 1 and 2
// with limit 10 and 100 from single seeds (and, at limit 100, with a
// metadata filter every third document passes), and MatchEntities at k 10 and
// 100 with the Cranfield query texts. Latency benchmarks report p50 and p99
// in ms as custom metrics, measured after an untimed warm-up. open returns an empty store (or one isolated by
// prefix); prefix namespaces ids and the tenant so a shared server can hold
// several runs, and the run's documents are deleted at the end.
func BenchGraph(b *testing.B, open func(b *testing.B) GraphStore, prefix string) {
	dir := CranfieldDir(b)
	tenant := prefix + "cranfield"
	docs, queries := CranfieldGraph(b, dir, tenant)
	for i := range docs {
		docs[i].ID = prefix + docs[i].ID
		docs[i].Metadata = spi.Strings(map[string]string{"third": fmt.Sprint(i % 3)})
	}
	third := spi.StringFilter(map[string][]string{"third": {"0"}})
	ctx := context.Background()
	ingest := func(s GraphStore) {
		for i := 0; i < len(docs); i += 200 {
			if err := s.Upsert(ctx, docs[i:min(i+200, len(docs))]); err != nil {
				b.Fatal(err)
			}
		}
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	b.Run("ingest", func(b *testing.B) {
		// One untimed round first: server-side plan caches and JITs warm up.
		s := open(b)
		ingest(s)
		if err := s.Delete(ctx, ids); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			b.StopTimer()
			s := open(b)
			b.StartTimer()
			ingest(s)
			b.StopTimer()
			if err := s.Delete(ctx, ids); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(len(docs)), "docs/op")
	})
	s := open(b)
	ingest(s)
	b.Cleanup(func() { s.Delete(context.Background(), ids) })
	latency := func(b *testing.B, fn func(i int) int) {
		for i := range 50 { // untimed warm-up, different inputs than the timed calls
			fn(len(docs) - 1 - i)
		}
		var ds []time.Duration
		results, i := 0, 0
		for b.Loop() {
			start := time.Now()
			results += fn(i)
			ds = append(ds, time.Since(start))
			i++
		}
		sort.Slice(ds, func(a, c int) bool { return ds[a] < ds[c] })
		pct := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))]) / 1e6 }
		b.ReportMetric(pct(0.50), "p50-ms")
		b.ReportMetric(pct(0.99), "p99-ms")
		b.ReportMetric(float64(results)/float64(len(ds)), "results/op")
	}
	for _, hops := range []int{1, 2} {
		for _, c := range []struct {
			limit  int
			filter spi.Filter
			name   string
		}{{10, spi.Filter{}, ""}, {100, spi.Filter{}, ""}, {100, third, "/filter=third"}} {
			b.Run(fmt.Sprintf("expand/hops=%d/limit=%d%s", hops, c.limit, c.name), func(b *testing.B) {
				latency(b, func(i int) int {
					refs, err := s.Expand(ctx, []string{docs[(i*37)%len(docs)].ID}, spi.ExpandOptions{Hops: hops, Limit: c.limit, Tenant: tenant, Filter: c.filter})
					if err != nil {
						b.Fatal(err)
					}
					return len(refs)
				})
			})
		}
	}
	for _, k := range []int{10, 100} {
		b.Run(fmt.Sprintf("match/k=%d", k), func(b *testing.B) {
			latency(b, func(i int) int {
				refs, err := s.MatchEntities(ctx, spi.KeywordRequest{Text: queries[i%len(queries)], K: k, Tenant: tenant})
				if err != nil {
					b.Fatal(err)
				}
				return len(refs)
			})
		})
	}
}
