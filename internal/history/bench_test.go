package history_test

import (
	"testing"
	"time"

	"github.com/ragd/ragd/internal/history"
	"github.com/ragd/ragd/retriever"
)

// BenchmarkObserveQueryParallel is what recording history adds to every
// query (its sources' outcomes and its HTTP answer), with 8 goroutines
// recording at once (run with -cpu to vary the cores).
func BenchmarkObserveQueryParallel(b *testing.B) {
	r := history.New(history.Config{})
	st := map[string]retriever.SourceStatus{
		"vector": {Status: "ok", TookMS: 1.5}, "keyword": {Status: "ok", TookMS: 0.8},
		"graph": {Status: "timeout", TookMS: 800}, "graph_expand": {Status: "skipped"},
	}
	b.SetParallelism(8)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.ObserveQuery(st, retriever.Answer{})
			r.ObserveRequest(200, 3*time.Millisecond, true)
		}
	})
}

// BenchmarkSummary is one console poll of the history over a full span.
func BenchmarkSummary(b *testing.B) {
	c := &clock{t: t0}
	r := history.New(history.Config{Now: c.Now})
	st := map[string]retriever.SourceStatus{
		"vector": {Status: "ok", TookMS: 1.5}, "keyword": {Status: "ok", TookMS: 0.8},
		"graph": {Status: "ok", TookMS: 3}, "graph_expand": {Status: "ok", TookMS: 2},
	}
	for range 90 {
		for range 100 {
			r.ObserveQuery(st, retriever.Answer{})
			r.ObserveRequest(200, 3*time.Millisecond, true)
		}
		r.Sample(history.GaugeLimit, "vector", 32)
		c.Advance(10 * time.Second)
	}
	b.ReportAllocs()
	for b.Loop() {
		r.Summary()
	}
}
