package retriever_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/benchutil"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// benchRefs returns n refs d<from>..d<from+n-1> with descending scores.
func benchRefs(source string, from, n int) []spi.Ref {
	out := make([]spi.Ref, n)
	for i := range out {
		out[i] = spi.Ref{ID: fmt.Sprintf("d%04d", from+i), Score: float64(n - i), Source: source}
	}
	return out
}

// benchStack: every source answers 100 hits instantly, overlapping
// (vector 0-99, keyword 50-149, graph 25-124; expansion 150-249), and the
// system of record has every document.
func benchStack() retriever.Config {
	docs := map[string]spi.Document{}
	for i := range 250 {
		id := fmt.Sprintf("d%04d", i)
		docs[id] = spi.Document{ID: id, Title: "t", Text: "body", Vector: []float32{1, 2, 3, 4}}
	}
	return retriever.Config{
		Vector:    &fakeVector{fault: fault{Refs: benchRefs("vector", 0, 100)}},
		Keyword:   &fakeKeyword{fault: fault{Refs: benchRefs("keyword", 50, 100)}},
		Graph:     &fakeGraph{fault: fault{Refs: benchRefs("graph", 25, 100)}, expand: fault{Refs: benchRefs("graph_expand", 150, 100)}},
		Embedder:  &fakeEmbedder{dim: 4},
		Hydrators: []retriever.NamedHydrator{{Name: "sor", Hydrator: &fakeHydrator{docs: docs}}},
	}
}

// BenchmarkRetrieve measures the retriever's own overhead (fan-out, fusion,
// expansion, pagination, hydration plumbing) with sources that answer 100
// hits instantly: window 100, limit 10.
func BenchmarkRetrieve(b *testing.B) {
	for _, bc := range []struct {
		name string
		q    retriever.Query
	}{
		{"hybrid+expand", retriever.Query{Text: "q", Window: 100, Limit: 10}},
		{"hybrid", retriever.Query{Text: "q", Window: 100, Limit: 10, Expand: retriever.ExpandOptions{Enabled: ptr(false)}}},
		{"hybrid+expand+explain", retriever.Query{Text: "q", Window: 100, Limit: 10, Explain: true}},
		{"keyword_only", retriever.Query{Text: "q", Window: 100, Limit: 10, Sources: retriever.Only(spi.SourceKeyword)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := mustNew(b, benchStack())
			ctx := context.Background()
			res, err := r.Retrieve(ctx, bc.q)
			if err != nil || len(res.Hits) != 10 || res.Partial {
				b.Fatalf("warm-up: %v %+v", err, res)
			}
			b.ReportAllocs()
			cpu := benchutil.CPUTime()
			for b.Loop() {
				if _, err := r.Retrieve(ctx, bc.q); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkFuse measures the pure fusion functions on three lists of 100.
func BenchmarkFuse(b *testing.B) {
	lists := []retriever.RankedList{
		{Source: "vector", Weight: 1, Refs: benchRefs("vector", 0, 100)},
		{Source: "keyword", Weight: 1, Refs: benchRefs("keyword", 50, 100)},
		{Source: "graph", Weight: 1, Refs: benchRefs("graph", 25, 100)},
	}
	for _, mode := range []string{retriever.FusionRRF, retriever.FusionScore, retriever.FusionDBSF} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			cpu := benchutil.CPUTime()
			for b.Loop() {
				if got := retriever.Fuse(mode, lists, 60); len(got) != 150 {
					b.Fatalf("fused %d", len(got))
				}
			}
			reportCPU(b, cpu)
		})
	}
}

func reportCPU(b *testing.B, start time.Duration) {
	if b.N > 0 {
		b.ReportMetric(float64(benchutil.CPUTime()-start)/float64(b.N), "cpu-ns/op")
	}
}
