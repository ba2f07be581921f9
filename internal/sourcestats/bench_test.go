package sourcestats_test

import (
	"testing"

	"github.com/ragd/ragd/internal/sourcestats"
	"github.com/ragd/ragd/retriever"
)

// BenchmarkObserveParallel is the cost the window adds to every query, with
// 8 goroutines observing at once (run with -cpu to vary the cores).
func BenchmarkObserveParallel(b *testing.B) {
	w, err := sourcestats.New(sourcestats.Config{})
	if err != nil {
		b.Fatal(err)
	}
	st := map[string]retriever.SourceStatus{
		"vector": {Status: "ok", TookMS: 1.5}, "keyword": {Status: "ok", TookMS: 0.8},
		"graph": {Status: "timeout", TookMS: 800}, "graph_expand": {Status: "skipped"},
	}
	b.SetParallelism(8)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.Observe("", st)
		}
	})
}

// BenchmarkSnapshotFull is one console poll over a full window.
func BenchmarkSnapshotFull(b *testing.B) {
	w, err := sourcestats.New(sourcestats.Config{})
	if err != nil {
		b.Fatal(err)
	}
	st := map[string]retriever.SourceStatus{
		"vector": {Status: "ok", TookMS: 1.5}, "keyword": {Status: "ok", TookMS: 0.8},
		"graph": {Status: "ok", TookMS: 3}, "graph_expand": {Status: "ok", TookMS: 2},
	}
	for range sourcestats.DefaultCapacity {
		w.Observe("", st)
	}
	b.ReportAllocs()
	for b.Loop() {
		w.Snapshot("")
	}
}
