package breaker_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ragd/ragd/breaker"
)

// TestHoldKeepsOpenUntilReleased: a held breaker admits no trial however
// long it waits, says who held it and why, and only ForceClose ends it.
func TestHoldKeepsOpenUntilReleased(t *testing.T) {
	clock := newClock()
	rec := &recorder{}
	cfg := testConfig(clock, 3)
	cfg.OnStateChange = rec.record
	b := mustNew(t, "graph", cfg)
	_ = callFail(b)
	start := clock.Now()
	b.Hold(breaker.Manual{By: "ops", Note: "neo4j upgrade"})
	wantState(t, b, breaker.Open)
	s := b.Snapshot()
	if s.Hold == nil || s.Hold.By != "ops" || s.Hold.Reason != "neo4j upgrade" || !s.Hold.Since.Equal(start) ||
		s.RetryIn != 0 || s.OpenedTotal != 1 || s.FailureCount != 1 || !s.Since.Equal(start) {
		t.Fatalf("held snapshot: %+v hold %+v", s, s.Hold)
	}

	// Ten cooldowns later: still open, no trial admitted, no retry time.
	clock.Advance(10 * cfg.ResetTimeout)
	wantState(t, b, breaker.Open)
	var oe *breaker.OpenError
	if err := callOK(b); !errors.As(err, &oe) || oe.RetryAfter != 0 {
		t.Fatalf("call while held: %v, want an *OpenError with no retry time", err)
	}
	if _, err := b.Admit(); err == nil {
		t.Fatal("Admit while held admitted a call")
	}
	// Force-open does not shorten a hold into a cooldown.
	b.ForceOpenBy(breaker.Manual{By: "someone"})
	clock.Advance(2 * cfg.ResetTimeout)
	if s := b.Snapshot(); s.State != breaker.Open || s.Hold == nil || s.Hold.By != "ops" {
		t.Fatalf("after force-open of a held breaker: %+v", s)
	}

	b.ForceCloseBy(breaker.Manual{By: "ops-2"})
	wantState(t, b, breaker.Closed)
	if s := b.Snapshot(); s.Hold != nil || s.FailureCount != 0 {
		t.Fatalf("after release: %+v", s)
	}
	if err := callOK(b); err != nil {
		t.Fatalf("call after release: %v", err)
	}
	if got, want := rec.walk(), []string{"closed>open", "open>closed"}; !slices.Equal(got, want) {
		t.Fatalf("walk = %v, want %v", got, want)
	}
	ts := rec.all()
	if h := ts[0]; h.Reason != breaker.ReasonHeld || h.By != "ops" || h.Note != "neo4j upgrade" || h.OpenFor != 0 || h.OpenedTotal != 1 {
		t.Errorf("hold transition: %+v", h)
	}
	c := ts[1]
	if c.Reason != breaker.ReasonForced || c.By != "ops-2" || c.Released == nil || c.Released.By != "ops" {
		t.Errorf("release transition: %+v", c)
	}
	if c.Lasted != 12*cfg.ResetTimeout || c.Outage != 12*cfg.ResetTimeout {
		t.Errorf("release: lasted %v outage %v, want both %v", c.Lasted, c.Outage, 12*cfg.ResetTimeout)
	}
}

// TestHoldOfAnOpenBreaker keeps its trip (no second count) and stops the
// cooldown; a hold of a held breaker replaces who and why.
func TestHoldOfAnOpenBreaker(t *testing.T) {
	clock := newClock()
	rec := &recorder{}
	cfg := testConfig(clock, 2)
	cfg.OnStateChange = rec.record
	b := mustNew(t, "vector", cfg)
	trip(t, b)
	clock.Advance(cfg.ResetTimeout / 2)
	b.Hold(breaker.Manual{By: "a"})
	clock.Advance(cfg.ResetTimeout)
	b.Hold(breaker.Manual{By: "b", Note: "longer"})
	s := b.Snapshot()
	if s.State != breaker.Open || s.OpenedTotal != 1 || s.FailureCount != 2 || s.Hold == nil || s.Hold.By != "b" || s.Hold.Reason != "longer" {
		t.Fatalf("snapshot: %+v hold %+v", s, s.Hold)
	}
	ts := rec.all()
	if len(ts) != 3 || ts[1].From != breaker.Open || ts[1].To != breaker.Open || ts[1].Reason != breaker.ReasonHeld ||
		ts[1].OpenedTotal != 1 || ts[1].Failures != 2 || ts[1].Lasted != cfg.ResetTimeout/2 {
		t.Fatalf("transitions: %+v", ts)
	}
	b.ForceClose()
	if c := rec.all()[3]; c.Outage != cfg.ResetTimeout*3/2 || c.Released == nil || c.Released.By != "b" {
		t.Fatalf("release: %+v", c)
	}
}

// TestTransitionDurations: an open state lasts until its cooldown ends,
// even when the call that makes the transition comes later; the outage on
// close spans every trip since the breaker left closed.
func TestTransitionDurations(t *testing.T) {
	clock := newClock()
	rec := &recorder{}
	cfg := testConfig(clock, 1)
	cfg.OnStateChange = rec.record
	b := mustNew(t, "x", cfg)
	clock.Advance(time.Minute)
	_ = callFail(b) // closed > open after a minute closed
	clock.Advance(cfg.ResetTimeout + 5*time.Second)
	if s := b.Snapshot(); s.State != breaker.HalfOpen || !s.Since.Equal(clock.Now().Add(-5*time.Second)) {
		t.Fatalf("lazily half-open snapshot: %+v", s)
	}
	_ = callFail(b) // open > half-open (cooldown), half-open > open (trial)
	clock.Advance(cfg.ResetTimeout)
	_ = callOK(b) // open > half-open, half-open > closed
	ts := rec.all()
	want := []time.Duration{time.Minute, cfg.ResetTimeout, 5 * time.Second, cfg.ResetTimeout, 0}
	if len(ts) != len(want) {
		t.Fatalf("%d transitions: %+v", len(ts), ts)
	}
	for i, w := range want {
		if ts[i].Lasted != w {
			t.Errorf("transition %d (%v>%v) lasted %v, want %v", i, ts[i].From, ts[i].To, ts[i].Lasted, w)
		}
	}
	if got, want := ts[4].Outage, 2*cfg.ResetTimeout+5*time.Second; got != want {
		t.Errorf("outage on close %v, want %v", got, want)
	}
}

func TestSnapshotJSONWithHold(t *testing.T) {
	since := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	in := breaker.Snapshot{Name: "graph", State: breaker.Open, FailureThreshold: 5, OpenedTotal: 1,
		ResetTimeout: time.Second, Since: since, Hold: &breaker.Hold{By: "ops", Reason: "upgrade", Since: since}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"graph","state":"open","failure_count":0,"failure_threshold":5,"opened_total":1,"reset_timeout_ms":1000,"retry_in_ms":0,` +
		`"since":"2026-12-02T10:00:00Z","hold":{"by":"ops","reason":"upgrade","since":"2026-12-02T10:00:00Z"}}`
	if string(b) != want {
		t.Fatalf("JSON\n got %s\nwant %s", b, want)
	}
	var out breaker.Snapshot
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Hold == nil || *out.Hold != *in.Hold || !out.Since.Equal(since) {
		t.Fatalf("round trip: %+v", out)
	}
}

func TestRegistryHold(t *testing.T) {
	r := breaker.NewRegistry(breaker.DefaultConfig())
	if _, err := r.Hold("nope", breaker.Manual{}); !errors.Is(err, breaker.ErrUnknownBreaker) {
		t.Fatalf("Hold(unknown) = %v", err)
	}
	r.Get("vector")
	s, err := r.Hold("vector", breaker.Manual{By: "k"})
	if err != nil || s.State != breaker.Open || s.Hold == nil || s.Hold.By != "k" {
		t.Fatalf("Hold = %+v, %v", s, err)
	}
	if s, err = r.ForceCloseBy("vector", breaker.Manual{By: "k"}); err != nil || s.State != breaker.Closed || s.Hold != nil {
		t.Fatalf("ForceCloseBy = %+v, %v", s, err)
	}
}

// TestRestoredHoldKeepsItsStart is issue 30 item 6: a hold restored after
// a restart (Manual.Since) is no new trip, and the breaker's open state,
// the release's Lasted and Outage count from when the hold was placed,
// not from the restore (a 77 s hold read 15 s when restored 62 s in).
func TestRestoredHoldKeepsItsStart(t *testing.T) {
	clock := newClock()
	rec := &recorder{}
	cfg := testConfig(clock, 3)
	cfg.OnStateChange = rec.record
	b := mustNew(t, "keyword", cfg)
	placed := clock.Now().Add(-62 * time.Second)
	b.Hold(breaker.Manual{By: "ops", Note: "reindex", Since: placed})
	s := b.Snapshot()
	if s.State != breaker.Open || s.Hold == nil || !s.Hold.Since.Equal(placed) || !s.Since.Equal(placed) || s.OpenedTotal != 0 {
		t.Fatalf("restored hold: %+v hold %+v; want open since %v, no trip", s, s.Hold, placed)
	}
	clock.Advance(15 * time.Second)
	b.ForceCloseBy(breaker.Manual{By: "ops"})
	ts := rec.all()
	if len(ts) != 2 {
		t.Fatalf("%d transitions, want the restore and the release: %+v", len(ts), ts)
	}
	if r := ts[0]; r.Reason != breaker.ReasonHeld || r.Restored == nil || !r.Restored.Since.Equal(placed) || r.Restored.By != "ops" || r.OpenedTotal != 0 {
		t.Errorf("restore transition: %+v", r)
	}
	if c := ts[1]; c.Lasted != 77*time.Second || c.Outage != 77*time.Second || c.Released == nil || !c.Released.Since.Equal(placed) {
		t.Errorf("release after the restore: lasted %v outage %v released %+v, want 77 s from the hold's start", c.Lasted, c.Outage, c.Released)
	}
	// A new hold is a trip again, and a restore dated in the future starts now.
	b.Hold(breaker.Manual{By: "ops"})
	if s := b.Snapshot(); s.OpenedTotal != 1 || rec.all()[2].Restored != nil {
		t.Errorf("a new hold: %+v, transition %+v", s, rec.all()[2])
	}
	b.ForceClose()
	b.Hold(breaker.Manual{By: "ops", Since: clock.Now().Add(time.Hour)})
	if s := b.Snapshot(); !s.Since.Equal(clock.Now()) || !s.Hold.Since.Equal(clock.Now()) || s.OpenedTotal != 1 {
		t.Errorf("a restore dated in the future: %+v hold %+v", s, s.Hold)
	}
}

// TestCloseUnlessHeld closes an open or half-open breaker, never a held
// one, and does nothing to a closed one.
func TestCloseUnlessHeld(t *testing.T) {
	clock := newClock()
	rec := &recorder{}
	cfg := testConfig(clock, 2)
	cfg.OnStateChange = rec.record
	b := mustNew(t, "keyword", cfg)
	if b.CloseUnlessHeld() {
		t.Fatal("closed a closed breaker")
	}
	trip(t, b)
	if !b.CloseUnlessHeld() {
		t.Fatal("did not close an open breaker")
	}
	wantState(t, b, breaker.Closed)
	b.Hold(breaker.Manual{By: "ops"})
	if b.CloseUnlessHeld() {
		t.Fatal("released a hold")
	}
	if s := b.Snapshot(); s.State != breaker.Open || s.Hold == nil {
		t.Fatalf("after CloseUnlessHeld of a held breaker: %+v", s)
	}
	if got, want := rec.walk(), []string{"closed>open", "open>closed", "closed>open"}; !slices.Equal(got, want) {
		t.Fatalf("walk = %v, want %v", got, want)
	}
}
