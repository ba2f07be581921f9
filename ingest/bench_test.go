package ingest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ragd/ragd/embedder/hashing"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/ingest/keyphrase"
	"github.com/ragd/ragd/spi"
)

// BenchmarkUpsert measures the pipeline's own cost per 64-document batch
// (validation, hashing embedder, keyphrase extraction, bookkeeping) with
// an in-memory record, so store latency is excluded.
func BenchmarkUpsert(b *testing.B) {
	emb, err := hashing.New(hashing.Config{})
	if err != nil {
		b.Fatal(err)
	}
	kp, _ := keyphrase.New(keyphrase.Config{})
	p, err := ingest.New(ingest.Config{
		Record:    newStore(),
		Embedder:  emb,
		Extractor: kp,
	})
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("the boundary layer on a flat plate in supersonic flow was measured . ", 12) // ~150 words
	docs := make([]spi.Document, 64)
	for i := range docs {
		docs[i] = spi.Document{ID: fmt.Sprint("d", i), Title: "boundary layer transition", Text: text}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range p.Upsert(context.Background(), docs, ingest.WriteOptions{}) {
			if r.Status != ingest.StatusOK {
				b.Fatal(r)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(docs)), "ns/doc")
}
