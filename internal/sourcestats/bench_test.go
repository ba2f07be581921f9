package sourcestats_test

import (
	"context"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/history"
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
			w.Observe("", st, retriever.Answer{})
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
		w.Observe("", st, retriever.Answer{})
	}
	b.ReportAllocs()
	for b.Loop() {
		w.Snapshot("")
	}
}

// answer is a retriever that answers instantly with four sources.
type answer struct{ res *retriever.Result }

func (a answer) Retrieve(context.Context, retriever.Query) (*retriever.Result, error) {
	return a.res, nil
}

// BenchmarkObservedRetrieve is what observing a query costs on the query
// path, without and with the console's 15-minute history (issue 20), with
// 8 goroutines querying at once: compare the two in one run.
func BenchmarkObservedRetrieve(b *testing.B) {
	res := &retriever.Result{Sources: map[string]retriever.SourceStatus{
		"vector": {Status: "ok", TookMS: 1.5}, "keyword": {Status: "ok", TookMS: 0.8},
		"graph": {Status: "timeout", TookMS: 800}, "graph_expand": {Status: "skipped"},
	}}
	for _, withHistory := range []bool{false, true} {
		name := "window"
		if withHistory {
			name = "window+history"
		}
		b.Run(name, func(b *testing.B) {
			w, err := sourcestats.New(sourcestats.Config{})
			if err != nil {
				b.Fatal(err)
			}
			o := sourcestats.Observed{Retriever: answer{res}, Window: w}
			if withHistory {
				o.History = history.New(history.Config{})
			}
			q := retriever.Query{Text: "x"}
			b.SetParallelism(8)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := o.Retrieve(context.Background(), q); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkSnapshotQuiet is one console poll of a server that was busy and
// went quiet: the window holds 4096 queries older than its minute. The
// snapshot counts none of them but reads them all for each source's newest
// failure (issue 30 item 6); before, it stopped at the first old query.
func BenchmarkSnapshotQuiet(b *testing.B) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	w, err := sourcestats.New(sourcestats.Config{Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	st := map[string]retriever.SourceStatus{
		"vector": {Status: "ok", TookMS: 1.5}, "keyword": {Status: "ok", TookMS: 0.8},
		"graph": {Status: "timeout", TookMS: 800, Error: "deadline of 800ms exceeded"}, "graph_expand": {Status: "skipped"},
	}
	for range sourcestats.DefaultCapacity {
		w.Observe("", st, retriever.Answer{Partial: true, Degraded: true})
	}
	now = now.Add(time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		w.Snapshot("")
	}
}

// BenchmarkSnapshotQuietHealthy is BenchmarkSnapshotQuiet without a
// failure in the window: the common case, one flag read per query.
func BenchmarkSnapshotQuietHealthy(b *testing.B) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	w, err := sourcestats.New(sourcestats.Config{Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	st := map[string]retriever.SourceStatus{
		"vector": {Status: "ok", TookMS: 1.5}, "keyword": {Status: "ok", TookMS: 0.8},
		"graph": {Status: "ok", TookMS: 3}, "graph_expand": {Status: "skipped"},
	}
	for range sourcestats.DefaultCapacity {
		w.Observe("", st, retriever.Answer{})
	}
	now = now.Add(time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		w.Snapshot("")
	}
}
