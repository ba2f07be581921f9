package keyword_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/internal/benchutil"
	"github.com/ragd/ragd/spi"
)

// BenchmarkRetrieveBesideApplies: Cranfield queries (k=10) while one
// writer applies the change log back to back: batches of 256 deletes of
// documents and the same documents again, over 20 copies of Cranfield
// (28,000 documents), so that the postings compact every few thousand
// deletes. Reported: search latency (p50, p99, max) and the apply rate.
func BenchmarkRetrieveBesideApplies(b *testing.B) {
	c := loadCranfield(b)
	ctx := context.Background()
	be := mustOpen(b, keyword.Config{})
	var docs []spi.Document
	for copyN := range 20 {
		for _, d := range c.Corpus {
			d.ID = fmt.Sprintf("%s-%02d", d.ID, copyN)
			docs = append(docs, d)
		}
	}
	seq := uint64(0)
	apply := func(cs []spi.Change) error {
		return be.ApplyChanges(ctx, "bench", cs, seq)
	}
	var cs []spi.Change
	for i := range docs {
		seq++
		cs = append(cs, spi.Change{Seq: seq, Op: spi.OpUpsert, ID: docs[i].ID, Doc: &docs[i], Version: seq})
		if len(cs) == 256 || i == len(docs)-1 {
			if err := apply(cs); err != nil {
				b.Fatal(err)
			}
			cs = cs[:0]
		}
	}
	stop, done := make(chan struct{}), make(chan int)
	go func() {
		applied := 0
		defer func() { done <- applied }()
		for i := 0; ; i = (i + 256) % len(docs) {
			for _, del := range []bool{true, false} {
				select {
				case <-stop:
					return
				default:
				}
				cs := make([]spi.Change, 0, 256)
				for j := i; j < min(i+256, len(docs)); j++ {
					seq++
					ch := spi.Change{Seq: seq, Op: spi.OpDelete, ID: docs[j].ID, Version: seq}
					if !del {
						ch.Op, ch.Doc = spi.OpUpsert, &docs[j]
					}
					cs = append(cs, ch)
				}
				if err := apply(cs); err != nil {
					b.Error(err)
					return
				}
				applied += len(cs)
			}
		}
	}()
	var lat []time.Duration
	i := 0
	for b.Loop() {
		q := c.Queries[i%len(c.Queries)]
		i++
		start := time.Now()
		if _, err := be.Retrieve(ctx, spi.KeywordRequest{Text: q.Text, K: 10}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	close(stop)
	applied := <-done
	b.ReportMetric(float64(applied)/b.Elapsed().Seconds(), "applied/s")
	benchutil.Percentiles(b, lat)
	b.ReportMetric(float64(slices.Max(lat).Microseconds()), "max-µs")
}
