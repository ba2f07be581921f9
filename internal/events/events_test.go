package events_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/internal/events"
)

func seqs(p events.Page) []uint64 {
	out := make([]uint64, len(p.Events))
	for i, e := range p.Events {
		out[i] = e.Seq
	}
	return out
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRingSince(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := events.NewRing(4, func() time.Time { return at })
	if p := r.Since(0, 0); len(p.Events) != 0 || p.Last != 0 || p.Dropped {
		t.Fatalf("empty ring: %+v", p)
	}
	for i := 0; i < 6; i++ {
		e := r.Publish(events.Event{Kind: events.KindBurst, Source: "graph"})
		if e.Seq != uint64(i+1) || !e.At.Equal(at) {
			t.Fatalf("publish %d: %+v", i, e)
		}
	}
	// Capacity 4: events 1 and 2 are forgotten.
	cases := []struct {
		after   uint64
		limit   int
		want    []uint64
		dropped bool
	}{
		{0, 0, []uint64{3, 4, 5, 6}, true},
		{2, 0, []uint64{3, 4, 5, 6}, false},
		{4, 0, []uint64{5, 6}, false},
		{6, 0, []uint64{}, false},
		{9, 0, []uint64{}, false},
		{2, 3, []uint64{4, 5, 6}, true},
		{4, 2, []uint64{5, 6}, false},
		{1, 1, []uint64{6}, true},
	}
	for _, c := range cases {
		p := r.Since(c.after, c.limit)
		if !equal(seqs(p), c.want) || p.Dropped != c.dropped || p.Last != 6 {
			t.Errorf("Since(%d, %d) = %v dropped=%v last=%d; want %v dropped=%v last=6",
				c.after, c.limit, seqs(p), p.Dropped, p.Last, c.want, c.dropped)
		}
	}
}

func TestRingKeepsGivenTime(t *testing.T) {
	r := events.NewRing(0, nil)
	at := time.Date(2025, 5, 6, 7, 8, 9, 0, time.UTC)
	if e := r.Publish(events.Event{At: at}); !e.At.Equal(at) {
		t.Fatalf("At = %v, want %v", e.At, at)
	}
}

func TestRingConcurrentPublish(t *testing.T) {
	r := events.NewRing(64, nil)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				r.Publish(events.Event{Kind: events.KindBreaker})
				r.Since(uint64(i), 10)
			}
		}()
	}
	wg.Wait()
	p := r.Since(0, 0)
	if p.Last != 800 || len(p.Events) != 64 || p.Events[0].Seq != 737 || p.Events[63].Seq != 800 {
		t.Fatalf("after 800 publishes: last=%d len=%d first=%d", p.Last, len(p.Events), p.Events[0].Seq)
	}
}

func TestFromTransition(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := events.FromTransition(breaker.Transition{
		Name: "graph", From: breaker.Closed, To: breaker.Open, Reason: breaker.ReasonFailureThreshold,
		Failures: 5, OpenedTotal: 2, OpenFor: 30 * time.Second, At: at,
	})
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"seq":0,"at":"2026-01-01T00:00:00Z","kind":"breaker","source":"graph",` +
		`"breaker":{"from":"closed","to":"open","reason":"failure_threshold","failures":5,"opened_total":2,"open_for_ms":30000}}`
	if string(b) != want {
		t.Fatalf("JSON:\n got %s\nwant %s", b, want)
	}
	if strings.Contains(string(b), "burst") {
		t.Fatal("breaker event carries a burst payload")
	}
}
