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
	// A limit pages forward from after: oldest first, never a gap.
	cases := []struct {
		after         uint64
		limit         int
		want          []uint64
		dropped, more bool
	}{
		{0, 0, []uint64{3, 4, 5, 6}, true, false},
		{2, 0, []uint64{3, 4, 5, 6}, false, false},
		{4, 0, []uint64{5, 6}, false, false},
		{6, 0, []uint64{}, false, false},
		{9, 0, []uint64{}, false, false},
		{2, 3, []uint64{3, 4, 5}, false, true},
		{4, 2, []uint64{5, 6}, false, false},
		{1, 1, []uint64{3}, true, true},
		{0, 2, []uint64{3, 4}, true, true},
	}
	for _, c := range cases {
		p := r.Since(c.after, c.limit)
		if !equal(seqs(p), c.want) || p.Dropped != c.dropped || p.More != c.more || p.Last != 6 {
			t.Errorf("Since(%d, %d) = %v dropped=%v more=%v last=%d; want %v dropped=%v more=%v last=6",
				c.after, c.limit, seqs(p), p.Dropped, p.More, p.Last, c.want, c.dropped, c.more)
		}
	}
}

// TestPagingIsGapFree: a reader that pages with a small limit while events
// keep coming sees every event once, in order.
func TestPagingIsGapFree(t *testing.T) {
	r := events.NewRing(100, nil)
	var seen []uint64
	var after uint64
	for i := range 60 {
		for range i % 4 {
			r.Publish(events.Event{Kind: events.KindBurst})
		}
		p := r.Since(after, 3)
		seen = append(seen, seqs(p)...)
		if n := len(p.Events); n > 0 {
			after = p.Events[n-1].Seq
		}
	}
	for p := r.Since(after, 3); len(p.Events) > 0; p = r.Since(after, 3) {
		seen = append(seen, seqs(p)...)
		after = p.Events[len(p.Events)-1].Seq
	}
	for i, s := range seen {
		if s != uint64(i+1) {
			t.Fatalf("event %d seen as seq %d: %v", i+1, s, seen)
		}
	}
	if uint64(len(seen)) != r.Since(0, 0).Last {
		t.Fatalf("saw %d of %d events", len(seen), r.Since(0, 0).Last)
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
		`"breaker":{"from":"closed","to":"open","reason":"failure_threshold","failures":5,"opened_total":2,"open_for_ms":30000,"lasted_ms":0}}`
	if string(b) != want {
		t.Fatalf("JSON:\n got %s\nwant %s", b, want)
	}
	if strings.Contains(string(b), "burst") {
		t.Fatal("breaker event carries a burst payload")
	}
}

func TestFromTransitionManual(t *testing.T) {
	e := events.FromTransition(breaker.Transition{
		Name: "graph", From: breaker.Open, To: breaker.Closed, Reason: breaker.ReasonForced,
		Lasted: 90 * time.Second, Outage: 95 * time.Second, By: "ops-key", Note: "done",
		Released: &breaker.Hold{By: "other-key"},
	})
	b := e.Breaker
	if b.By != "ops-key" || b.Note != "done" || b.LastedMS != 90000 || b.OutageMS != 95000 || b.ReleasedHoldOf != "other-key" {
		t.Fatalf("manual close: %+v", b)
	}
}

// TestFromTransitionRestoredHold: a hold restored after a restart says so
// and when the hold began.
func TestFromTransitionRestoredHold(t *testing.T) {
	placed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := events.FromTransition(breaker.Transition{
		Name: "keyword", From: breaker.Closed, To: breaker.Open, Reason: breaker.ReasonHeld, By: "ops", Note: "reindex",
		At: placed.Add(time.Minute), Restored: &breaker.Hold{By: "ops", Reason: "reindex", Since: placed},
	})
	if b := e.Breaker; !b.Restored || b.HeldSince == nil || !b.HeldSince.Equal(placed) || b.OpenedTotal != 0 {
		t.Fatalf("restored hold: %+v", b)
	}
	if e := events.FromTransition(breaker.Transition{Name: "keyword", To: breaker.Open, Reason: breaker.ReasonHeld}); e.Breaker.Restored || e.Breaker.HeldSince != nil {
		t.Fatalf("a new hold reads restored: %+v", e.Breaker)
	}
}
