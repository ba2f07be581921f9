package keyword_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/spi"
)

// BenchmarkCranfieldIngest indexes the 1,400 Cranfield documents into a
// fresh index per iteration with the default batch size (each batch is
// durable when Upsert returns).
func BenchmarkCranfieldIngest(b *testing.B) {
	c := loadCranfield(b)
	ctx := context.Background()
	for b.Loop() {
		be, err := keyword.Open(keyword.Config{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		if err := be.Upsert(ctx, c.Corpus); err != nil {
			b.Fatal(err)
		}
		if err := be.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(c.Corpus))*float64(b.N)/b.Elapsed().Seconds(), "docs/s")
}

// BenchmarkCranfieldRetrieve runs the 225 Cranfield queries round-robin and
// reports latency percentiles per query.
func BenchmarkCranfieldRetrieve(b *testing.B) {
	c := loadCranfield(b)
	be := openCranfield(b, c, keyword.Config{})
	ctx := context.Background()
	for _, k := range []int{10, 100} {
		b.Run("k="+strconv.Itoa(k), func(b *testing.B) {
			var lat []time.Duration
			i := 0
			for b.Loop() {
				q := c.Queries[i%len(c.Queries)]
				i++
				start := time.Now()
				if _, err := be.Retrieve(ctx, spi.KeywordRequest{Text: q.Text, K: k}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}
