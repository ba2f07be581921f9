package spitest

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ragd/ragd/embedder/hashing"
	"github.com/ragd/ragd/internal/benchutil"
	"github.com/ragd/ragd/spi"
)

// CranfieldVectors loads Cranfield's documents and queries and embeds them
// with the built-in hashing embedder at its default configuration (the one
// rag.yaml uses), so vector benchmarks of every store see the same vectors.
// Documents are embedded from "title. text".
func CranfieldVectors(tb testing.TB) (docs []spi.Document, queries [][]float32) {
	tb.Helper()
	dir := CranfieldDir(tb)
	var texts, qtexts []string
	readJSONL(tb, filepath.Join(dir, "corpus.jsonl"), func(r map[string]string) {
		docs = append(docs, spi.Document{ID: r["_id"], Title: r["title"], Text: r["text"],
			Metadata: spi.Strings(map[string]string{"corpus": "cranfield"})})
		texts = append(texts, r["title"]+". "+r["text"])
	})
	readJSONL(tb, filepath.Join(dir, "queries.jsonl"), func(r map[string]string) { qtexts = append(qtexts, r["text"]) })
	emb, err := hashing.New(hashing.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	vecs, err := emb.Embed(context.Background(), texts)
	if err != nil {
		tb.Fatal(err)
	}
	for i := range docs {
		docs[i].Vector = vecs[i]
	}
	if queries, err = emb.Embed(context.Background(), qtexts); err != nil {
		tb.Fatal(err)
	}
	return docs, queries
}

// exactCosine returns the ids of the k documents nearest to q by cosine
// similarity, ties by id: the reference for recall.
func exactCosine(docs []spi.Document, q []float32, k int) []string {
	refs := make([]spi.Ref, len(docs))
	for i, d := range docs {
		refs[i] = spi.Ref{ID: d.ID, Score: refScore(DistanceCosine, q, d.Vector)}
	}
	sortRefs(refs)
	out := make([]string, 0, k)
	for _, r := range refs[:min(k, len(refs))] {
		out = append(out, r.ID)
	}
	return out
}

// BenchVector benchmarks a vector store on Cranfield embedded by
// CranfieldVectors (1,400 documents, 384 dimensions, cosine):
//
//	ingest        the whole corpus in batches of 100 into an empty store;
//	              ns/op is one full ingest, plus docs/s
//	retrieve/k=N  one Retrieve per op with the 225 query vectors in turn,
//	              after one untimed warm-up pass: p50/p99 latency in µs, and
//	              recall@N against an exact scan
//	filtered/F    the same at k=10 with a typed metadata filter F (every
//	              document carries "n", an integer i mod 100, and "at", a
//	              time i mod 100 hours after 2024-01-01): range5pct (n < 5),
//	              range50pct (n < 50), in5pct (n in 0..4), time5pct (at
//	              before the 5th hour); recall against an exact scan of the
//	              matching documents
//
// open returns an empty cosine store of the given dimension.
func BenchVector(b *testing.B, open func(b *testing.B, dim int) VectorStore) {
	docs, queries := CranfieldVectors(b)
	dim := len(queries[0])
	for i := range docs {
		docs[i].Metadata["n"] = spi.Int(int64(i % 100))
		docs[i].Metadata["at"] = spi.MustTime(typedBase.Add(time.Duration(i%100) * time.Hour))
	}
	ingest := func(b *testing.B, st VectorStore) {
		for i := 0; i < len(docs); i += 100 {
			if err := st.Upsert(context.Background(), docs[i:min(i+100, len(docs))]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("ingest", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			b.StopTimer()
			st := open(b, dim)
			b.StartTimer()
			start := time.Now()
			ingest(b, st)
			total += time.Since(start)
		}
		b.ReportMetric(float64(len(docs)*b.N)/total.Seconds(), "docs/s")
	})
	for _, k := range []int{10, 100} {
		b.Run("retrieve/k="+strconv.Itoa(k), func(b *testing.B) {
			st := open(b, dim)
			ingest(b, st)
			exact := make([][]string, len(queries))
			for i, q := range queries {
				exact[i] = exactCosine(docs, q, k)
			}
			// One untimed pass over the queries warms caches and measures
			// recall; the timed loop then measures steady-state latency.
			hits, want := 0, 0
			for q, vec := range queries {
				refs, err := st.Retrieve(context.Background(), spi.VectorRequest{Vector: vec, K: k})
				if err != nil {
					b.Fatal(err)
				}
				got := map[string]bool{}
				for _, r := range refs {
					got[r.ID] = true
				}
				for _, id := range exact[q] {
					if got[id] {
						hits++
					}
				}
				want += len(exact[q])
			}
			var lat []time.Duration
			i := 0
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				_, err := st.Retrieve(context.Background(), spi.VectorRequest{Vector: queries[i%len(queries)], K: k})
				lat = append(lat, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				i++
			}
			benchutil.Percentiles(b, lat)
			b.ReportMetric(float64(hits)/float64(want), "recall")
		})
	}
	filters := []struct {
		name string
		f    spi.Filter
	}{
		{"range5pct", spi.Lt("n", spi.Int(5))},
		{"range50pct", spi.Lt("n", spi.Int(50))},
		{"in5pct", spi.In("n", spi.Int(0), spi.Int(1), spi.Int(2), spi.Int(3), spi.Float(4))},
		{"time5pct", spi.Lt("at", spi.MustTime(typedBase.Add(5*time.Hour)))},
	}
	for _, fc := range filters {
		b.Run("filtered/"+fc.name, func(b *testing.B) {
			const k = 10
			st := open(b, dim)
			ingest(b, st)
			var matching []spi.Document
			for _, d := range docs {
				if fc.f.Match(d.Metadata) {
					matching = append(matching, d)
				}
			}
			hits, want := 0, 0
			for _, vec := range queries {
				refs, err := st.Retrieve(context.Background(), spi.VectorRequest{Vector: vec, K: k, Filter: fc.f})
				if err != nil {
					b.Fatal(err)
				}
				got := map[string]bool{}
				for _, r := range refs {
					got[r.ID] = true
				}
				exact := exactCosine(matching, vec, k)
				for _, id := range exact {
					if got[id] {
						hits++
					}
				}
				want += len(exact)
			}
			var lat []time.Duration
			i := 0
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				_, err := st.Retrieve(context.Background(), spi.VectorRequest{Vector: queries[i%len(queries)], K: k, Filter: fc.f})
				lat = append(lat, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				i++
			}
			benchutil.Percentiles(b, lat)
			b.ReportMetric(float64(hits)/float64(want), "recall")
			b.ReportMetric(float64(len(matching))/float64(len(docs)), "selectivity")
		})
	}
}
