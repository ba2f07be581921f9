package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragd/ragd/breaker"
)

// Semantics 1: consecutive failures trip; a success resets the count; Call
// returns fn's own error.
func TestClosedConsecutiveFailuresTrip(t *testing.T) {
	clock := newClock()
	b := mustNew(t, "vector", testConfig(clock, 3))

	for i := range 2 {
		if err := callFail(b); err != errBackend {
			t.Fatalf("call %d: Call returned %v, want fn's own error value", i, err)
		}
	}
	if got := b.Snapshot().FailureCount; got != 2 {
		t.Fatalf("FailureCount = %d, want 2", got)
	}
	if err := callOK(b); err != nil {
		t.Fatal(err)
	}
	if got := b.Snapshot().FailureCount; got != 0 {
		t.Fatalf("FailureCount after a success = %d, want 0", got)
	}
	// Two more failures are not enough after the reset...
	for range 2 {
		_ = callFail(b)
	}
	wantState(t, b, breaker.Closed)
	// ...the third consecutive one is.
	_ = callFail(b)
	wantState(t, b, breaker.Open)
	s := b.Snapshot()
	if s.OpenedTotal != 1 || s.FailureCount != 3 || s.FailureThreshold != 3 {
		t.Fatalf("snapshot after trip = %+v", s)
	}
}

// Semantics 2: open fails fast before invoking fn; after ResetTimeout trials
// are admitted.
func TestOpenFailsFastThenAdmitsTrials(t *testing.T) {
	clock := newClock()
	b := mustNew(t, "keyword", testConfig(clock, 2))
	trip(t, b)

	var ran atomic.Int32
	fn := func(context.Context) error { ran.Add(1); return nil }
	clock.Advance(4 * time.Second)
	err := b.Call(context.Background(), fn)
	var oe *breaker.OpenError
	if !errors.As(err, &oe) {
		t.Fatalf("Call while open = %v, want *OpenError", err)
	}
	if !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("open error %v must match ErrOpen", err)
	}
	if oe.Name != "keyword" || oe.RetryAfter != 6*time.Second || !errors.Is(oe.Cause, errBackend) {
		t.Fatalf("OpenError = %+v, want name keyword, RetryAfter 6s, Cause errBackend", *oe)
	}
	if ran.Load() != 0 {
		t.Fatal("fn ran while the breaker was open")
	}
	if s := b.Snapshot(); s.State != breaker.Open || s.RetryIn != 6*time.Second {
		t.Fatalf("snapshot while open = %+v, want open with RetryIn 6s", s)
	}
	if _, err := b.Allow(); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("Allow while open = %v, want ErrOpen", err)
	}

	clock.Advance(6*time.Second - time.Nanosecond)
	wantState(t, b, breaker.Open)
	clock.Advance(time.Nanosecond)
	// Lazy: State reports half-open before any call arrives.
	wantState(t, b, breaker.HalfOpen)
	if s := b.Snapshot(); s.State != breaker.HalfOpen || s.RetryIn != 0 {
		t.Fatalf("snapshot after cooldown = %+v, want half_open with RetryIn 0", s)
	}
	if err := b.Call(context.Background(), fn); err != nil {
		t.Fatalf("trial call: %v", err)
	}
	if ran.Load() != 1 {
		t.Fatalf("fn ran %d times, want 1 trial", ran.Load())
	}
	wantState(t, b, breaker.Closed)
}

// Semantics 3: at most HalfOpenMaxCalls trials, reserved atomically with the
// state check.
func TestHalfOpenAdmitsExactlyMaxCalls(t *testing.T) {
	for _, max := range []int{1, 3, 10} {
		t.Run(fmt.Sprint("max=", max), func(t *testing.T) {
			clock := newClock()
			cfg := testConfig(clock, 1)
			cfg.HalfOpenMaxCalls = max
			cfg.SuccessThreshold = 100 // stay half-open throughout
			b := mustNew(t, "graph", cfg)
			trip(t, b)
			clock.Advance(cfg.ResetTimeout)

			const callers = 64
			var (
				admitted, rejected atomic.Int32
				start              = make(chan struct{})
				release            = make(chan struct{})
				attempts           sync.WaitGroup
				finished           sync.WaitGroup
			)
			attempts.Add(callers)
			finished.Add(callers)
			for range callers {
				go func() {
					defer finished.Done()
					<-start
					tried := false
					err := b.Call(context.Background(), func(context.Context) error {
						admitted.Add(1)
						tried = true
						attempts.Done()
						<-release // hold the slot until every caller has tried
						return nil
					})
					if !tried {
						if !errors.Is(err, breaker.ErrOpen) {
							t.Errorf("rejected call returned %v, want ErrOpen", err)
						}
						rejected.Add(1)
						attempts.Done()
					}
				}()
			}
			close(start)
			attempts.Wait()
			close(release)
			finished.Wait()
			if admitted.Load() != int32(max) || rejected.Load() != int32(callers-max) {
				t.Fatalf("admitted %d, rejected %d; want %d and %d", admitted.Load(), rejected.Load(), max, callers-max)
			}
		})
	}
}

func TestHalfOpenSuccessThresholdCloses(t *testing.T) {
	clock := newClock()
	rec := &recorder{}
	cfg := testConfig(clock, 1)
	cfg.HalfOpenMaxCalls = 2
	cfg.SuccessThreshold = 3
	cfg.OnStateChange = rec.record
	b := mustNew(t, "vector", cfg)
	trip(t, b)
	clock.Advance(cfg.ResetTimeout)

	d1, err1 := b.Allow()
	d2, err2 := b.Allow()
	if err1 != nil || err2 != nil {
		t.Fatalf("two trials: %v, %v", err1, err2)
	}
	if _, err := b.Allow(); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("third concurrent trial: %v, want ErrOpen", err)
	}
	var oe *breaker.OpenError
	if _, err := b.Allow(); !errors.As(err, &oe) || oe.RetryAfter != 0 {
		t.Fatalf("full half-open rejection = %v, want *OpenError with RetryAfter 0", err)
	}
	d1(nil)
	wantState(t, b, breaker.HalfOpen)
	d2(nil)
	wantState(t, b, breaker.HalfOpen)
	// A success frees its slot: a third trial is admitted and closes it.
	if err := callOK(b); err != nil {
		t.Fatal(err)
	}
	wantState(t, b, breaker.Closed)
	ts := rec.all()
	last := ts[len(ts)-1]
	if last.From != breaker.HalfOpen || last.To != breaker.Closed || last.TrialSuccesses != 3 || last.Reason != breaker.ReasonTrialSuccess {
		t.Fatalf("closing transition = %+v", last)
	}
}

func TestHalfOpenFailureReopensAndRestartsCooldown(t *testing.T) {
	clock := newClock()
	cfg := testConfig(clock, 2)
	cfg.HalfOpenMaxCalls = 3
	cfg.SuccessThreshold = 2
	b := mustNew(t, "vector", cfg)
	trip(t, b)
	clock.Advance(cfg.ResetTimeout)

	if err := callOK(b); err != nil { // one trial success
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if err := callFail(b); !errors.Is(err, errBackend) {
		t.Fatalf("trial failure returned %v", err)
	}
	s := b.Snapshot()
	if s.State != breaker.Open || s.RetryIn != cfg.ResetTimeout || s.OpenedTotal != 2 {
		t.Fatalf("after trial failure: %+v, want open, full cooldown, OpenedTotal 2", s)
	}
	if s.FailureCount != 3 {
		t.Fatalf("FailureCount = %d, want 2 tripping failures + 1 trial failure", s.FailureCount)
	}
	clock.Advance(cfg.ResetTimeout)
	wantState(t, b, breaker.HalfOpen)
	// The earlier trial success does not carry over: two more are needed.
	_ = callOK(b)
	wantState(t, b, breaker.HalfOpen)
	_ = callOK(b)
	wantState(t, b, breaker.Closed)
	if got := b.Snapshot().OpenedTotal; got != 2 {
		t.Fatalf("OpenedTotal = %d, want 2", got)
	}
}

// Semantics 4: results from an earlier generation never count.
func TestStaleGenerationResultsAreIgnored(t *testing.T) {
	clock := newClock()
	cfg := testConfig(clock, 2)
	b := mustNew(t, "vector", cfg)

	// A slow call admitted while closed...
	slowDone, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	trip(t, b)
	clock.Advance(cfg.ResetTimeout)
	trialDone, err := b.Allow()
	if err != nil {
		t.Fatalf("trial: %v", err)
	}
	// ...fails during half-open: no re-open, no slot freed or taken.
	slowDone(errBackend)
	wantState(t, b, breaker.HalfOpen)
	if _, err := b.Allow(); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("a stale result freed the trial slot: Allow = %v", err)
	}
	// A stale success does not close it either.
	slowDone(nil)
	wantState(t, b, breaker.HalfOpen)
	trialDone(nil)
	wantState(t, b, breaker.Closed)
	if s := b.Snapshot(); s.FailureCount != 0 || s.OpenedTotal != 1 {
		t.Fatalf("snapshot = %+v, want a clean closed breaker", s)
	}
}

func TestStaleCallLandingInNextClosedGenerationIsIgnored(t *testing.T) {
	clock := newClock()
	cfg := testConfig(clock, 2)
	b := mustNew(t, "vector", cfg)

	entered := make(chan struct{})
	release := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		result <- b.Call(context.Background(), func(context.Context) error {
			close(entered)
			<-release
			return errBackend
		})
	}()
	<-entered
	trip(t, b)
	clock.Advance(cfg.ResetTimeout)
	_ = callOK(b) // closes again: a new closed generation
	_ = callFail(b)
	if got := b.Snapshot().FailureCount; got != 1 {
		t.Fatalf("FailureCount = %d, want 1", got)
	}
	close(release)
	if err := <-result; !errors.Is(err, errBackend) {
		t.Fatalf("slow call returned %v", err)
	}
	// The slow failure belongs to the first closed generation: had it
	// counted, this breaker (threshold 2) would be open now.
	wantState(t, b, breaker.Closed)
	if got := b.Snapshot().FailureCount; got != 1 {
		t.Fatalf("FailureCount = %d after a stale failure, want 1", got)
	}
}

func TestStaleTrialFromEarlierHalfOpenIsIgnored(t *testing.T) {
	clock := newClock()
	cfg := testConfig(clock, 1)
	cfg.TrialLease = time.Second
	b := mustNew(t, "vector", cfg)
	trip(t, b)
	clock.Advance(cfg.ResetTimeout)
	lost, err := b.Allow() // this trial will report very late
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(cfg.TrialLease)
	_ = callFail(b) // lease reclaimed: a fresh trial fails and re-opens
	wantState(t, b, breaker.Open)
	clock.Advance(cfg.ResetTimeout)
	held, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	lost(nil) // from the previous half-open period: must not close
	wantState(t, b, breaker.HalfOpen)
	if _, err := b.Allow(); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("stale trial freed a slot: %v", err)
	}
	held(nil)
	wantState(t, b, breaker.Closed)
}

// Semantics 5: what counts.
func TestOutcomeClassification(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	causeErr := errors.New("request budget exhausted")
	withCause, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(causeErr)

	tests := []struct {
		name        string
		ctx         context.Context
		fn          func(context.Context) error
		shouldCount func(error) bool
		counts      bool
	}{
		{"backend error", context.Background(), func(context.Context) error { return errBackend }, nil, true},
		{"caller cancelled", cancelled, func(ctx context.Context) error { return fmt.Errorf("db: %w", ctx.Err()) }, nil, false},
		{"caller cause", withCause, func(ctx context.Context) error { return context.Cause(ctx) }, nil, false},
		{"caller cancelled but backend error", cancelled, func(context.Context) error { return errBackend }, nil, true},
		{"backend's own deadline", context.Background(), func(ctx context.Context) error {
			inner, cancel := context.WithTimeout(ctx, 0)
			defer cancel()
			<-inner.Done()
			return fmt.Errorf("pg: query: %w", inner.Err())
		}, nil, true},
		{"backend says canceled, caller live", context.Background(), func(context.Context) error { return context.Canceled }, nil, true},
		{"exempted invalid query", context.Background(), func(context.Context) error {
			return fmt.Errorf("vector: %w: dimension 3, want 4", errBadRequest)
		}, breaker.IgnoreErrors(errBadRequest), false},
		{"not exempted by default", context.Background(), func(context.Context) error {
			return fmt.Errorf("vector: %w", errBadRequest)
		}, nil, true},
		{"other error with ShouldCount set", context.Background(), func(context.Context) error { return errBackend }, breaker.IgnoreErrors(errBadRequest), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClock()
			cfg := testConfig(clock, 2)
			cfg.ShouldCount = tt.shouldCount
			b := mustNew(t, "x", cfg)
			_ = callFail(b) // one failure already: a counted failure trips
			if err := b.Call(tt.ctx, tt.fn); err == nil {
				t.Fatal("Call returned nil, want fn's error")
			}
			want := breaker.Closed
			if tt.counts {
				want = breaker.Open
			}
			wantState(t, b, want)
			if !tt.counts && b.Snapshot().FailureCount != 1 {
				t.Fatalf("neutral outcome changed FailureCount to %d (a reset counts as a success)", b.Snapshot().FailureCount)
			}
		})
	}
}

func TestPanicIsRecordedAndRepanicked(t *testing.T) {
	clock := newClock()
	b := mustNew(t, "x", testConfig(clock, 1))
	type boom struct{ n int }
	got := func() (r any) {
		defer func() { r = recover() }()
		_ = b.Call(context.Background(), func(context.Context) error { panic(boom{7}) })
		return nil
	}()
	if got != (boom{7}) {
		t.Fatalf("recovered %v, want the original panic value", got)
	}
	wantState(t, b, breaker.Open)
	var oe *breaker.OpenError
	if err := callOK(b); !errors.As(err, &oe) || oe.Cause == nil {
		t.Fatalf("after panic: %v, want *OpenError with a cause", err)
	}
}

func TestGoexitIsNeutral(t *testing.T) {
	clock := newClock()
	b := mustNew(t, "x", testConfig(clock, 1))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.Call(context.Background(), func(context.Context) error { runtime.Goexit(); return nil })
	}()
	<-done
	wantState(t, b, breaker.Closed)
}

func TestNeutralOutcomesReleaseTrialSlot(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := map[string]func(b *breaker.Breaker){
		"caller cancelled": func(b *breaker.Breaker) {
			_ = b.Call(cancelled, func(ctx context.Context) error { return ctx.Err() })
		},
		"ShouldCount exempt": func(b *breaker.Breaker) {
			_ = b.Call(context.Background(), func(context.Context) error { return errBadRequest })
		},
		"done(context.Canceled)": func(b *breaker.Breaker) {
			done, err := b.Allow()
			if err != nil {
				t.Fatal(err)
			}
			done(context.Canceled)
		},
	}
	for name, neutralTrial := range cases {
		t.Run(name, func(t *testing.T) {
			clock := newClock()
			cfg := testConfig(clock, 1)
			cfg.ShouldCount = breaker.IgnoreErrors(errBadRequest)
			b := mustNew(t, "x", cfg)
			trip(t, b)
			clock.Advance(cfg.ResetTimeout)
			neutralTrial(b)
			wantState(t, b, breaker.HalfOpen)
			// The slot is free again (HalfOpenMaxCalls is 1).
			if err := callOK(b); err != nil {
				t.Fatalf("next trial after a neutral one: %v", err)
			}
			wantState(t, b, breaker.Closed)
		})
	}
}

// Semantics 6: a lost trial is reclaimed after its lease.
func TestLostTrialIsReclaimedAfterLease(t *testing.T) {
	clock := newClock()
	cfg := testConfig(clock, 1)
	cfg.TrialLease = 3 * time.Second
	b := mustNew(t, "x", cfg)
	trip(t, b)
	clock.Advance(cfg.ResetTimeout)
	lost, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(cfg.TrialLease - time.Nanosecond)
	if _, err := b.Allow(); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("before the lease expired: %v, want ErrOpen", err)
	}
	clock.Advance(time.Nanosecond)
	next, err := b.Allow()
	if err != nil {
		t.Fatalf("after the lease expired: %v, want a new trial", err)
	}
	lost(errBackend) // reclaimed: ignored
	wantState(t, b, breaker.HalfOpen)
	next(nil)
	wantState(t, b, breaker.Closed)
}

func TestDefaultTrialLeaseIsResetTimeout(t *testing.T) {
	clock := newClock()
	cfg := testConfig(clock, 1) // ResetTimeout 10s, TrialLease 0
	b := mustNew(t, "x", cfg)
	trip(t, b)
	clock.Advance(cfg.ResetTimeout)
	if _, err := b.Allow(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(cfg.ResetTimeout - time.Millisecond)
	if _, err := b.Allow(); err == nil {
		t.Fatal("slot reclaimed before the default lease")
	}
	clock.Advance(time.Millisecond)
	if _, err := b.Allow(); err != nil {
		t.Fatalf("slot not reclaimed after the default lease: %v", err)
	}
}

// Semantics 7: OnStateChange runs outside the lock with typed events.
func TestOnStateChangeOutsideLock(t *testing.T) {
	clock := newClock()
	var (
		events   []breaker.Transition
		observed []breaker.State
		b        *breaker.Breaker
	)
	cfg := testConfig(clock, 2)
	cfg.OnStateChange = func(tr breaker.Transition) {
		// Would deadlock if the hook ran under the breaker's lock.
		observed = append(observed, b.State())
		_ = b.Snapshot()
		events = append(events, tr)
	}
	b = mustNew(t, "vector", cfg)
	trip(t, b)
	clock.Advance(cfg.ResetTimeout)
	_ = callOK(b)

	want := []struct {
		from, to breaker.State
		reason   breaker.Reason
		event    string
	}{
		{breaker.Closed, breaker.Open, breaker.ReasonFailureThreshold, "breaker.opened"},
		{breaker.Open, breaker.HalfOpen, breaker.ReasonCooldown, "breaker.half_opened"},
		{breaker.HalfOpen, breaker.Closed, breaker.ReasonTrialSuccess, "breaker.closed"},
	}
	if len(events) != len(want) {
		t.Fatalf("got %d events %+v, want %d", len(events), events, len(want))
	}
	for i, w := range want {
		e := events[i]
		if e.Name != "vector" || e.From != w.from || e.To != w.to || e.Reason != w.reason || e.Event() != w.event {
			t.Errorf("event %d = %+v (%s), want %v→%v %s", i, e, e.Event(), w.from, w.to, w.reason)
		}
		if observed[i] != w.to {
			t.Errorf("State() inside hook %d = %v, want %v", i, observed[i], w.to)
		}
	}
	opened := events[0]
	if opened.Failures != 2 || opened.OpenedTotal != 1 || opened.OpenFor != cfg.ResetTimeout || !opened.At.Equal(newClock().Now()) {
		t.Errorf("opened event = %+v, want failures 2, opened_total 1, open_for 10s, at the clock's start", opened)
	}
	if !events[2].At.Equal(newClock().Now().Add(cfg.ResetTimeout)) {
		t.Errorf("closed event at %v, want the clock's time", events[2].At)
	}
}

func TestOnStateChangeReentrantTransitionsStayOrdered(t *testing.T) {
	clock := newClock()
	var (
		walk []string
		b    *breaker.Breaker
	)
	cfg := testConfig(clock, 1)
	cfg.OnStateChange = func(tr breaker.Transition) {
		walk = append(walk, tr.From.String()+">"+tr.To.String())
		if tr.To == breaker.Open {
			b.ForceClose() // a transition made from inside the hook
			walk = append(walk, "hook returned")
		}
	}
	b = mustNew(t, "x", cfg)
	_ = callFail(b)
	want := []string{"closed>open", "hook returned", "open>closed"}
	if !slices.Equal(walk, want) {
		t.Fatalf("walk = %v, want %v", walk, want)
	}
	wantState(t, b, breaker.Closed)
}

func TestTransitionLogValueHasCountsNotErrors(t *testing.T) {
	clock := newClock()
	rec := &recorder{}
	cfg := testConfig(clock, 1)
	cfg.OnStateChange = rec.record
	b := mustNew(t, "vector", cfg)
	secret := errors.New("query text: what is the airspeed of a swallow")
	_ = b.Call(context.Background(), func(context.Context) error { return secret })
	tr := rec.all()[0]
	v := fmt.Sprint(tr.LogValue())
	for _, want := range []string{"breaker.opened", "vector", "failures=1", "opened_total=1"} {
		if !strings.Contains(v, want) {
			t.Errorf("LogValue %q lacks %q", v, want)
		}
	}
	if strings.Contains(v, "swallow") || strings.Contains(fmt.Sprintf("%+v", tr), "swallow") {
		t.Errorf("transition leaks the error text: %q", v)
	}
}

func TestForceOpenAndForceClose(t *testing.T) {
	clock := newClock()
	rec := &recorder{}
	cfg := testConfig(clock, 3)
	cfg.OnStateChange = rec.record
	b := mustNew(t, "x", cfg)
	_ = callFail(b)
	b.ForceOpen()
	wantState(t, b, breaker.Open)
	var oe *breaker.OpenError
	if err := callOK(b); !errors.As(err, &oe) || oe.Cause != nil || oe.RetryAfter != cfg.ResetTimeout {
		t.Fatalf("after ForceOpen: %v, want *OpenError without cause and a full cooldown", err)
	}
	b.ForceOpen() // already open: no new trip
	if got := b.Snapshot().OpenedTotal; got != 1 {
		t.Fatalf("OpenedTotal = %d, want 1", got)
	}
	b.ForceClose()
	wantState(t, b, breaker.Closed)
	if s := b.Snapshot(); s.FailureCount != 0 || s.RetryIn != 0 {
		t.Fatalf("after ForceClose: %+v", s)
	}
	_ = callFail(b)
	b.ForceClose() // closed: clears the count without a transition
	if got := b.Snapshot().FailureCount; got != 0 {
		t.Fatalf("FailureCount after ForceClose = %d", got)
	}
	want := []string{"closed>open", "open>closed"}
	if got := rec.walk(); !slices.Equal(got, want) {
		t.Fatalf("walk = %v, want %v", got, want)
	}
	if ts := rec.all(); ts[0].Reason != breaker.ReasonForced || ts[1].Reason != breaker.ReasonForced {
		t.Fatalf("reasons = %v, %v, want forced", ts[0].Reason, ts[1].Reason)
	}
	// ForceOpen after the cooldown passed makes the pending half-open
	// transition first, then re-opens.
	b.ForceOpen()
	clock.Advance(cfg.ResetTimeout)
	b.ForceOpen()
	want = append(want, "closed>open", "open>half_open", "half_open>open")
	if got := rec.walk(); !slices.Equal(got, want) {
		t.Fatalf("walk = %v, want %v", got, want)
	}
}

func TestAllowClosedPathAndDone(t *testing.T) {
	clock := newClock()
	b := mustNew(t, "x", testConfig(clock, 2))
	done, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	done(errBackend)
	if got := b.Snapshot().FailureCount; got != 1 {
		t.Fatalf("FailureCount = %d, want 1", got)
	}
	done, _ = b.Allow()
	done(nil)
	if got := b.Snapshot().FailureCount; got != 0 {
		t.Fatalf("FailureCount after done(nil) = %d, want 0", got)
	}
	done, _ = b.Allow()
	done(fmt.Errorf("wrapped: %w", context.Canceled))
	done, _ = b.Allow()
	done(errBackend)
	wantState(t, b, breaker.Closed) // the cancelled one was neutral
	done, _ = b.Allow()
	done(context.DeadlineExceeded) // done cannot see a ctx: a deadline counts
	wantState(t, b, breaker.Open)
}

func TestAllowClosedAllocatesNothing(t *testing.T) {
	b := mustNew(t, "x", testConfig(newClock(), 2))
	allocs := testing.AllocsPerRun(100, func() {
		done, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		done(nil)
	})
	if allocs != 0 {
		t.Fatalf("Allow+done while closed allocates %v times", allocs)
	}
}

func TestCallAllocatesNothingOnBothPaths(t *testing.T) {
	clock := newClock()
	b := mustNew(t, "x", testConfig(clock, 1))
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	if n := testing.AllocsPerRun(100, func() { _ = b.Call(ctx, ok) }); n != 0 {
		t.Fatalf("closed path allocates %v times", n)
	}
	trip(t, b)
	_ = b.Call(ctx, ok) // warm the shared rejection
	if n := testing.AllocsPerRun(100, func() { _ = b.Call(ctx, ok) }); n != 0 {
		t.Fatalf("open path allocates %v times", n)
	}
}

func TestOpenErrorMessage(t *testing.T) {
	err := &breaker.OpenError{Name: "graph", RetryAfter: 1500 * time.Millisecond, Cause: errBackend}
	want := "breaker: circuit open: graph (retry in 1.5s): tripped by: backend: connection refused"
	if err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err.Error(), want)
	}
	if got := (&breaker.OpenError{Name: "graph"}).Error(); got != "breaker: circuit open: graph (trials in progress)" {
		t.Fatalf("Error() = %q", got)
	}
	if errors.Is(err, errBackend) {
		t.Fatal("OpenError must not match its cause: a rejection is not a backend failure")
	}
}

func TestRetryAfterRoundsUpToMillisecond(t *testing.T) {
	clock := newClock()
	b := mustNew(t, "x", testConfig(clock, 1))
	trip(t, b)
	clock.Advance(10*time.Second - 1500*time.Microsecond)
	var oe *breaker.OpenError
	if err := callOK(b); !errors.As(err, &oe) || oe.RetryAfter != 2*time.Millisecond {
		t.Fatalf("RetryAfter = %v, want 2ms (1.5ms rounded up)", oe)
	}
	first := oe
	clock.Advance(100 * time.Microsecond)
	if err := callOK(b); !errors.As(err, &oe) || oe != first {
		t.Fatal("rejections within the same millisecond should share one *OpenError")
	}
	clock.Advance(time.Millisecond)
	if err := callOK(b); !errors.As(err, &oe) || oe == first || oe.RetryAfter != time.Millisecond {
		t.Fatalf("a new millisecond should give a fresh error, got %+v", oe)
	}
}

func TestAdmitTickets(t *testing.T) {
	clock := newClock()
	cfg := breaker.DefaultConfig()
	cfg.FailureThreshold = 2
	cfg.ResetTimeout = 10 * time.Second
	cfg.Now = clock.Now
	b := mustNew(t, "graph", cfg)

	// Neutral outcomes neither count nor reset.
	for range 5 {
		tk, err := b.Admit()
		if err != nil {
			t.Fatal(err)
		}
		tk.Neutral()
	}
	if s := b.Snapshot(); s.State != breaker.Closed || s.FailureCount != 0 {
		t.Fatalf("after neutral outcomes: %+v", s)
	}
	tk1, _ := b.Admit()
	tk2, _ := b.Admit()
	tk1.Failure(errBackend)
	if tk1.Trial() {
		t.Fatal("a closed-state ticket reports itself as a trial")
	}
	tk2.Failure(errBackend)
	if b.State() != breaker.Open {
		t.Fatalf("two failures with threshold 2: state %v", b.State())
	}
	if _, err := b.Admit(); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("Admit while open = %v, want ErrOpen", err)
	}
	clock.Advance(10 * time.Second)
	trial, err := b.Admit()
	if err != nil || !trial.Trial() {
		t.Fatalf("Admit after the cooldown = %v (trial %v), want a trial", err, trial.Trial())
	}
	if _, err := b.Admit(); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("second Admit with one trial slot = %v, want ErrOpen", err)
	}
	trial.Success()
	if b.State() != breaker.Closed {
		t.Fatalf("trial success: state %v, want closed", b.State())
	}
	var zero breaker.Ticket
	zero.Failure(errBackend) // reports nothing, must not panic
}

// ForceClose on a closed breaker starts a new generation: failures of calls
// admitted before it are ignored, as its doc says.
func TestForceCloseIgnoresEarlierCalls(t *testing.T) {
	cfg := breaker.DefaultConfig()
	cfg.FailureThreshold = 2
	b := mustNew(t, "graph", cfg)
	before := make([]breaker.Ticket, 2)
	for i := range before {
		before[i], _ = b.Admit()
	}
	done, _ := b.Allow()
	b.ForceClose()
	for _, tk := range before {
		tk.Failure(errBackend)
	}
	done(errBackend)
	if s := b.Snapshot(); s.State != breaker.Closed || s.FailureCount != 0 {
		t.Fatalf("failures of calls admitted before ForceClose counted: %+v", s)
	}
	tk, _ := b.Admit()
	tk.Failure(errBackend)
	if s := b.Snapshot(); s.FailureCount != 1 {
		t.Fatalf("a call admitted after ForceClose: failure count %d, want 1", s.FailureCount)
	}
}
