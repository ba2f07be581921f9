package breaker_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/breaker"
)

// TestStress hammers one breaker from many goroutines with every operation
// at once. Run with -race. It checks that the hook sees one unbroken,
// ordered chain of transitions, that OpenedTotal agrees with it, and that
// no call returns anything but fn's own error or an *OpenError.
func TestStress(t *testing.T) {
	clock := newClock()
	var (
		mu     sync.Mutex
		events []breaker.Transition
		b      *breaker.Breaker
	)
	cfg := breaker.Config{
		FailureThreshold: 3,
		ResetTimeout:     5 * time.Millisecond,
		HalfOpenMaxCalls: 2,
		SuccessThreshold: 2,
		TrialLease:       20 * time.Millisecond,
		FailureRate:      breaker.FailureRate{Threshold: 0.6, MinCalls: 20, Window: 50 * time.Millisecond},
		Backoff:          breaker.Backoff{Multiplier: 1.5, Max: 40 * time.Millisecond, Jitter: 0.5},
		Now:              clock.Now,
		OnStateChange: func(tr breaker.Transition) {
			_ = b.State() // must not deadlock
			mu.Lock()
			events = append(events, tr)
			mu.Unlock()
		},
	}
	b = mustNew(t, "stress", cfg)

	const workers, iterations = 8, 3000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for range iterations {
				switch op := rng.IntN(100); {
				case op < 55:
					want := errBackend
					if rng.IntN(2) == 0 {
						want = nil
					}
					err := b.Call(context.Background(), func(context.Context) error { return want })
					if err != want && !errors.Is(err, breaker.ErrOpen) {
						t.Errorf("Call = %v, want %v or ErrOpen", err, want)
						return
					}
				case op < 80:
					done, err := b.Allow()
					if err != nil {
						if !errors.Is(err, breaker.ErrOpen) {
							t.Errorf("Allow = %v", err)
							return
						}
						continue
					}
					if rng.IntN(10) == 0 {
						continue // lose it: the lease must reclaim it
					}
					if rng.IntN(2) == 0 {
						done(nil)
					} else {
						done(errBackend)
					}
				case op < 90:
					clock.Advance(time.Duration(rng.IntN(3)) * time.Millisecond)
				case op < 96:
					_ = b.Snapshot()
					_ = b.State()
				case op < 97:
					b.ForceOpen()
				case op < 98:
					b.Hold(breaker.Manual{By: "stress"})
				default:
					b.ForceClose()
				}
			}
		}()
	}
	wg.Wait()
	// Settle: a final transition may still be queued behind a running hook
	// on another goroutine; all goroutines are done, so everything is
	// delivered by now.
	mu.Lock()
	defer mu.Unlock()
	if len(events) < 10 {
		t.Fatalf("only %d transitions: the stress did not exercise the breaker", len(events))
	}
	t.Logf("%d transitions", len(events))
	var opened uint64
	prev := breaker.Closed
	for i, e := range events {
		if e.From != prev {
			t.Fatalf("event %d goes %v→%v but the previous ended in %v", i, e.From, e.To, prev)
		}
		if e.To == breaker.Open && e.From != breaker.Open { // holding an open breaker is no trip
			opened++
			if e.OpenedTotal != opened {
				t.Fatalf("event %d: OpenedTotal %d, want %d", i, e.OpenedTotal, opened)
			}
		}
		prev = e.To
	}
	s := b.Snapshot()
	if s.OpenedTotal != opened {
		t.Fatalf("Snapshot.OpenedTotal = %d, events counted %d", s.OpenedTotal, opened)
	}
	if got := b.State(); got != prev && !(prev == breaker.Open && got == breaker.HalfOpen) {
		t.Fatalf("final state %v, last event ended in %v", got, prev)
	}
}
