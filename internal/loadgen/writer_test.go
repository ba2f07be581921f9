package loadgen_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/internal/loadgen"
	"github.com/ragd/ragd/spi"
)

// fakeClock advances only when the writer sleeps or a fake upsert takes
// its time.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }
func (c *fakeClock) sleep(_ context.Context, d time.Duration) error {
	c.t = c.t.Add(d)
	return nil
}

func docs(n int) []spi.Document {
	out := make([]spi.Document, n)
	for i := range out {
		out[i] = spi.Document{ID: fmt.Sprint("d", i), Text: "text"}
	}
	return out
}

// 200 documents a second in batches of 50 for 2 s: batches due at 0,
// 0.25, ..., 1.75 s, 400 documents; the corpus of 150 is cycled, every
// pass marking its texts.
func TestWriteKeepsTheRate(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	var sent []spi.Document
	var at []time.Duration
	r, err := loadgen.Write(context.Background(), loadgen.WriteConfig{
		Docs: docs(150), Rate: 200, Batch: 50, Duration: 2 * time.Second,
		Now: clk.now, Sleep: clk.sleep,
		Upsert: func(_ context.Context, b []spi.Document) (int, int, error) {
			at = append(at, clk.t.Sub(time.Unix(0, 0)))
			sent = append(sent, b...)
			clk.t = clk.t.Add(10 * time.Millisecond)
			return len(b), 0, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Batches != 8 || r.Docs != 400 || r.OK != 400 || len(sent) != 400 || r.Late != 0 {
		t.Fatalf("batches %d docs %d ok %d sent %d late %d; want 8, 400, 400, 400, 0", r.Batches, r.Docs, r.OK, len(sent), r.Late)
	}
	for k, d := range at {
		if want := time.Duration(k) * 250 * time.Millisecond; d != want {
			t.Fatalf("batch %d sent at %s, want %s", k, d, want)
		}
	}
	for i, d := range sent {
		want := fmt.Sprintf("text rev %d", i/150+1)
		if d.ID != fmt.Sprint("d", i%150) || d.Text != want {
			t.Fatalf("document %d: %s %q, want d%d %q", i, d.ID, d.Text, i%150, want)
		}
	}
	// 400 documents over the 2 s run (the last answer came at 1.76 s).
	if r.DocsPerSec != 200 {
		t.Fatalf("docs/s %.1f, want 400 / 2 s", r.DocsPerSec)
	}
}

// A server slower than the schedule: each batch takes 0.6 s, so every
// batch after the first is late and only four fit in 2 s; refused
// documents and failed requests count as failed.
func TestWriteFallsBehind(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	n := 0
	r, err := loadgen.Write(context.Background(), loadgen.WriteConfig{
		Docs: docs(10), Rate: 200, Batch: 50, Duration: 2 * time.Second,
		Now: clk.now, Sleep: clk.sleep,
		Upsert: func(_ context.Context, b []spi.Document) (int, int, error) {
			clk.t = clk.t.Add(600 * time.Millisecond)
			n++
			if n == 2 {
				return 0, 0, errors.New("connection reset")
			}
			return len(b) - 1, 1, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Batches != 4 || r.Late != 3 || r.OK != 147 || r.Failed != 53 || r.Errors != 1 {
		t.Fatalf("batches %d late %d ok %d failed %d errors %d; want 4, 3, 147, 53, 1", r.Batches, r.Late, r.OK, r.Failed, r.Errors)
	}
	if r.P50 != 600*time.Millisecond {
		t.Fatalf("batch p50 %s, want 600ms", r.P50)
	}
	// The last answer came at 2.4 s, after the run's 2 s.
	if r.DocsPerSec != 147/2.4 {
		t.Fatalf("docs/s %.2f, want 147 / 2.4 s", r.DocsPerSec)
	}
}

func TestWriteValidates(t *testing.T) {
	up := func(context.Context, []spi.Document) (int, int, error) { return 0, 0, nil }
	for _, c := range []loadgen.WriteConfig{
		{Rate: 1, Batch: 1, Duration: time.Second, Upsert: up},
		{Docs: docs(1), Batch: 1, Duration: time.Second, Upsert: up},
		{Docs: docs(1), Rate: 1, Duration: time.Second, Upsert: up},
		{Docs: docs(1), Rate: 1, Batch: 1, Upsert: up},
		{Docs: docs(1), Rate: 1, Batch: 1, Duration: time.Second},
	} {
		if _, err := loadgen.Write(context.Background(), c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// Dormant stores are left out; max and median per store; failed readings
// counted apart.
func TestSummariseLag(t *testing.T) {
	var s []loadgen.LagSample
	for i, b := range []uint64{5, 0, 40, 10, 20} {
		s = append(s, loadgen.LagSample{Stores: []ingest.StoreLag{
			{Store: "keyword", Behind: b, LagSeconds: float64(b) / 10},
			{Store: "graph", Behind: 1000, Dormant: true},
			{Store: "neo4j", Behind: uint64(i), Error: map[bool]string{true: "down"}[i == 4]},
		}})
	}
	s = append(s, loadgen.LagSample{Err: errors.New("timeout")})
	got, failed := loadgen.SummariseLag(s)
	if failed != 1 || len(got) != 2 {
		t.Fatalf("failed %d, stores %+v; want 1 failed, keyword and neo4j", failed, got)
	}
	kw, neo := got[0], got[1]
	if kw.Store != "keyword" || kw.Readings != 5 || kw.MaxBehind != 40 || kw.P50Behind != 10 || kw.MaxSeconds != 4 || kw.P50Seconds != 1 {
		t.Fatalf("keyword %+v", kw)
	}
	if neo.Store != "neo4j" || neo.MaxBehind != 4 || neo.P50Behind != 2 || neo.Errors != 1 {
		t.Fatalf("neo4j %+v", neo)
	}
	if !loadgen.Current(&ingest.LogStatus{Stores: []ingest.StoreLag{{Store: "graph", Behind: 9, Dormant: true}, {Store: "keyword"}}}) ||
		loadgen.Current(&ingest.LogStatus{Stores: []ingest.StoreLag{{Store: "keyword", Behind: 1}}}) {
		t.Fatal("Current: dormant stores must not count, a store behind must")
	}
}

// Two replicas' runs as one: answers added up over the longer run, CPU
// per query weighted by requests.
func TestCombine(t *testing.T) {
	ok := func(ms int, partial bool) loadgen.Sample {
		return loadgen.Sample{Status: 200, Latency: time.Duration(ms) * time.Millisecond, Partial: partial}
	}
	a := &loadgen.Report{Requests: 3, Elapsed: 2 * time.Second, CPUPerQuery: 2 * time.Millisecond,
		Samples: []loadgen.Sample{ok(1, false), ok(2, true), ok(3, false)}, Transitions: map[string]int{"graph closed→open": 1}}
	b := &loadgen.Report{Requests: 1, Elapsed: 1 * time.Second, CPUPerQuery: 6 * time.Millisecond,
		Samples: []loadgen.Sample{{Status: 503, Latency: 9 * time.Millisecond}}, Transitions: map[string]int{"graph closed→open": 2}}
	c := loadgen.Combine("all", a, b)
	if c.Label != "all" || c.Requests != 4 || c.Partial != 1 || c.Non200 != 1 || c.ReqPerSec != 2 ||
		c.CPUPerQuery != 3*time.Millisecond || c.P50 != 2*time.Millisecond || c.Max != 9*time.Millisecond || c.Transitions["graph closed→open"] != 3 {
		t.Fatalf("%+v", c)
	}
	b.CPUPerQuery = 0
	if c := loadgen.Combine("all", a, b); c.CPUPerQuery != 0 {
		t.Fatalf("CPU per query %s with one run unmeasured, want none", c.CPUPerQuery)
	}
}
