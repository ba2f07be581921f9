package graph_test

import (
	"testing"

	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/spi/spitest"
)

// BenchmarkCranfield needs a Neo4j (RAG_TEST_NEO4J_URI):
// go test -run '^$' -bench Cranfield ./backends/graph/
// Ids and the tenant carry a per-run prefix; the run's documents are
// deleted afterwards.
func BenchmarkCranfield(b *testing.B) {
	conn := testenv.Neo4j(b)
	spitest.BenchGraph(b, func(b *testing.B) spitest.GraphStore { return openBackend(b, conn, nil) }, uniq(b)+"-")
}
