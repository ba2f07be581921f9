package keyword

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/ragd/ragd/eval"
	ingestcorpus "github.com/ragd/ragd/ingest/corpus"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

// BenchmarkImpactSearch: the in-memory postings alone (no bleve), on
// Cranfield and, when RAG_BENCH_KEYWORD_CORPUS names a JSONL corpus, on
// it: Cranfield's queries, k=100, for every tenant and for one of three
// tenants ("3tenants": document i is tenant t(i mod 3)), and for the one
// tenant of a single-tenant deployment ("1tenant").
func BenchmarkImpactSearch(b *testing.B) {
	ds, err := eval.LoadBEIR(spitest.CranfieldDir(b), "test")
	if err != nil {
		b.Fatal(err)
	}
	corpora := map[string][]spi.Document{"cranfield": ds.Corpus}
	names := []string{"cranfield"}
	if path := os.Getenv("RAG_BENCH_KEYWORD_CORPUS"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		var docs []spi.Document
		for line, err := range ingestcorpus.ReadDocuments(f, ingestcorpus.FormatJSONL) {
			if err != nil {
				b.Fatal(err)
			}
			docs = append(docs, line.Doc)
		}
		f.Close()
		name := fmt.Sprintf("synth%dk", len(docs)/1000)
		corpora[name], names = docs, append(names, name)
	}
	idx, err := createIndex(b.TempDir()+"/idx", Config{Analyzer: "en"}.withDefaults())
	if err != nil {
		b.Fatal(err)
	}
	defer idx.Close()
	an := idx.Mapping().AnalyzerNamed("en")
	queries := make([][]string, len(ds.Queries))
	for i, q := range ds.Queries {
		for _, tok := range an.Analyze([]byte(q.Text)) {
			queries[i] = append(queries[i], string(tok.Term))
		}
	}
	p := bm25Params{k1: DefaultK1, b: DefaultB, titleWeight: DefaultTitleBoost}
	for _, name := range names {
		for _, layout := range []string{"3tenants", "1tenant"} {
			x := newImpactIndex()
			for i, d := range corpora[name] {
				tenant := "acme"
				if layout == "3tenants" {
					tenant = fmt.Sprint("t", i%3)
				}
				built, lens := buildDoc(d, an)
				x.putLocked(d.ID, tenant, nil, lens, nil, freqsOf(built), nil)
			}
			tenants := []string{"acme"}
			if layout == "3tenants" {
				tenants = []string{"t1", ""}
			}
			for _, tenant := range tenants {
				b.Run(fmt.Sprintf("%s/%s/tenant=%s", name, layout, tenant), func(b *testing.B) {
					var lat []time.Duration
					i := 0
					for b.Loop() {
						start := time.Now()
						if _, err := x.search(context.Background(), queries[i%len(queries)], 100, tenant, nil, p); err != nil {
							b.Fatal(err)
						}
						lat = append(lat, time.Since(start))
						i++
					}
					slices.Sort(lat)
					b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
					b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
				})
			}
		}
	}
}
