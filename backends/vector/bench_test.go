package vector_test

import (
	"testing"

	"github.com/ragd/ragd/backends/vector"
	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/spi/spitest"
)

// BenchmarkCranfield: ingest and Retrieve p50/p99 at k=10 and k=100 on
// Cranfield (hashing embedder, 384 dimensions, cosine, default HNSW).
func BenchmarkCranfield(b *testing.B) {
	spitest.BenchVector(b, func(b *testing.B, dim int) spitest.VectorStore {
		return mustOpen(b, vector.Config{DSN: testenv.Postgres(b), Dimension: dim})
	})
}
