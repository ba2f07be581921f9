package breaker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ragd/ragd/breaker"
)

// Semantics 8: the failure-rate rule, alongside the consecutive rule.
func TestFailureRateTrips(t *testing.T) {
	clock := newClock()
	rec := &recorder{}
	cfg := testConfig(clock, 100) // the consecutive rule stays out of the way
	cfg.FailureRate = breaker.FailureRate{Threshold: 0.5, MinCalls: 10, Window: 10 * time.Second}
	cfg.OnStateChange = rec.record
	b := mustNew(t, "x", cfg)

	// Alternate: 50% failures, but fewer than MinCalls so far.
	for i := range 9 {
		if i%2 == 0 {
			_ = callFail(b)
		} else {
			_ = callOK(b)
		}
		clock.Advance(100 * time.Millisecond)
	}
	wantState(t, b, breaker.Closed) // 5 failures of 9 calls: under MinCalls
	_ = callFail(b)                 // 6 of 10 = 60% >= 50%
	wantState(t, b, breaker.Open)
	tr := rec.all()[0]
	if tr.Reason != breaker.ReasonFailureRate || tr.Calls != 10 || tr.Failures != 6 {
		t.Fatalf("transition = %+v, want failure_rate with 6 of 10", tr)
	}
	var oe *breaker.OpenError
	if err := callOK(b); !errors.As(err, &oe) || !errors.Is(oe.Cause, errBackend) {
		t.Fatalf("rejection %v should carry the last failure as cause", err)
	}
}

func TestFailureRateBelowThresholdAndNeutralsDoNotTrip(t *testing.T) {
	clock := newClock()
	cfg := testConfig(clock, 100)
	cfg.FailureRate = breaker.FailureRate{Threshold: 0.5, MinCalls: 4, Window: 10 * time.Second}
	b := mustNew(t, "x", cfg)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for range 20 { // neutral outcomes are not calls for the rule
		_ = b.Call(cancelled, func(ctx context.Context) error { return ctx.Err() })
	}
	for range 10 { // 1 failure in 3 calls: 33%
		_ = callOK(b)
		_ = callOK(b)
		_ = callFail(b)
	}
	wantState(t, b, breaker.Closed)
}

func TestFailureRateWindowRolls(t *testing.T) {
	clock := newClock()
	cfg := testConfig(clock, 100)
	cfg.FailureRate = breaker.FailureRate{Threshold: 0.5, MinCalls: 4, Window: 10 * time.Second, Buckets: 10}
	b := mustNew(t, "x", cfg)
	// An old failure (too few calls to judge yet)...
	_ = callFail(b)
	_ = callOK(b)
	_ = callOK(b)
	// ...ages out of the window.
	clock.Advance(11 * time.Second)
	_ = callFail(b)
	_ = callOK(b)
	_ = callFail(b)
	wantState(t, b, breaker.Closed) // 3 calls in the window; 3 of 6 would have tripped
	_ = callFail(b)                 // 3 of 4
	wantState(t, b, breaker.Open)
}

func TestFailureRateWindowResetsOnClose(t *testing.T) {
	clock := newClock()
	cfg := testConfig(clock, 100)
	cfg.FailureRate = breaker.FailureRate{Threshold: 0.5, MinCalls: 4, Window: time.Hour}
	b := mustNew(t, "x", cfg)
	for range 2 {
		_ = callOK(b)
		_ = callFail(b)
	}
	wantState(t, b, breaker.Open) // 2 of 4
	clock.Advance(cfg.ResetTimeout)
	_ = callOK(b)
	wantState(t, b, breaker.Closed)
	// The old window is gone: with it, this failure would be 3 of 5.
	_ = callFail(b)
	wantState(t, b, breaker.Closed)
}

// Semantics 8: exponential open duration with cap and jitter.
func TestBackoffGrowsCapsAndResets(t *testing.T) {
	clock := newClock()
	cfg := testConfig(clock, 1)
	cfg.ResetTimeout = time.Second
	cfg.Backoff = breaker.Backoff{Multiplier: 2, Max: 5 * time.Second}
	b := mustNew(t, "x", cfg)

	var got []time.Duration
	_ = callFail(b)
	for range 5 {
		got = append(got, b.Snapshot().RetryIn)
		clock.Advance(b.Snapshot().RetryIn)
		_ = callFail(b) // trial fails: next trip in a row
	}
	want := []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("open durations = %v, want %v", got, want)
		}
	}
	clock.Advance(b.Snapshot().RetryIn)
	_ = callOK(b) // closes: the streak resets
	wantState(t, b, breaker.Closed)
	_ = callFail(b)
	if d := b.Snapshot().RetryIn; d != time.Second {
		t.Fatalf("open duration after closing = %v, want the base 1s", d)
	}
}

func TestBackoffJitterUsesInjectedRand(t *testing.T) {
	clock := newClock()
	rec := &recorder{}
	draws := []float64{0, 0.5, 0.999}
	i := 0
	cfg := testConfig(clock, 1)
	cfg.ResetTimeout = 10 * time.Second
	cfg.OnStateChange = rec.record
	cfg.Backoff = breaker.Backoff{Jitter: 0.2, Rand: func() float64 { r := draws[i%len(draws)]; i++; return r }}
	b := mustNew(t, "x", cfg)
	_ = callFail(b)
	for range 2 {
		clock.Advance(b.Snapshot().RetryIn)
		_ = callFail(b)
	}
	var got []time.Duration
	for _, tr := range rec.all() {
		if tr.To == breaker.Open {
			got = append(got, tr.OpenFor)
		}
	}
	// 10s minus up to 20%: r=0 → 10s, r=0.5 → 9s, r=0.999 → 8.002s.
	want := []time.Duration{10 * time.Second, 9 * time.Second, 8002 * time.Millisecond}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("jittered open durations = %v, want %v", got, want)
	}
}
