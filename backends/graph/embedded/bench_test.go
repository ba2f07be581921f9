package embedded_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ragd/ragd/backends/graph/embedded"
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
