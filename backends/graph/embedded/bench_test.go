package embedded_test

import (
	"context"
	"testing"

	"github.com/ragd/ragd/backends/graph/embedded"
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
