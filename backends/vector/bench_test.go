package vector_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/vector"
	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

// BenchmarkCranfield: ingest and Retrieve p50/p99 at k=10 and k=100 on
// Cranfield (hashing embedder, 384 dimensions, cosine, default HNSW).
func BenchmarkCranfield(b *testing.B) {
	spitest.BenchVector(b, func(b *testing.B, dim int) spitest.VectorStore {
		return mustOpen(b, vector.Config{DSN: testenv.Postgres(b), Dimension: dim})
	})
}

// BenchmarkCommitWriters: 8 writers committing batches of 500 new
// documents (384-d unit vectors, ~1 KB of text, 8 entities) through
// Commit, the path of every ingest; reports docs/s. Each iteration is one
// batch, so -benchtime 80x writes 40,000 documents.
func BenchmarkCommitWriters(b *testing.B) {
	const writers, batch, dim = 8, 500, 384
	be := mustOpen(b, vector.Config{DSN: testenv.Postgres(b), Dimension: dim, MaxConns: writers})
	text := strings.Repeat("the boundary layer of a supersonic wing in a heated wind tunnel ", 16)
	ents := []string{"boundary layer", "supersonic wing", "wind tunnel", "heat transfer", "shock wave", "mach number", "skin friction", "pressure"}
	var next atomic.Int64
	mk := func(r *rand.Rand) []spi.Write {
		ws := make([]spi.Write, batch)
		for i := range ws {
			n := next.Add(1)
			v := randVec(r, dim)
			ws[i] = spi.Write{Op: spi.OpUpsert, KeepTenant: true, Doc: spi.Document{
				ID: fmt.Sprintf("d%08d", n), Tenant: fmt.Sprintf("t%d", n%3), Title: "doc " + strconv.FormatInt(n, 10), Text: text,
				Metadata: spi.Strings(map[string]string{"lang": "en"}), Entities: ents, Vector: v,
			}}
		}
		return ws
	}
	ctx := context.Background()
	var left atomic.Int64
	left.Store(int64(b.N))
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		r := rand.New(rand.NewPCG(uint64(w), 7))
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				ws := mk(r)
				out, err := be.Commit(ctx, ws)
				if err != nil {
					b.Error(err)
					return
				}
				for _, o := range out {
					if o.Err != nil {
						b.Error(o.Err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "docs/s")
}
