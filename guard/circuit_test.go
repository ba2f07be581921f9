package guard_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/guard"
	"github.com/ragd/ragd/spi"
)

// transitions records a breaker's path as "from>to" steps.
type transitions struct {
	mu   sync.Mutex
	path []string
}

func (r *transitions) record(t breaker.Transition) {
	r.mu.Lock()
	r.path = append(r.path, t.From.String()+">"+t.To.String())
	r.mu.Unlock()
}

func (r *transitions) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.path...)
}

// probedCircuit returns a real-clock breaker with a short cooldown whose
// trials are made by probe, its loop running until the test ends. The loop
// polls less often than the cooldown lasts, so it makes no warm-up probes
// during it (TestWarmDuringCooldown covers those): every probe is a trial's.
func probedCircuit(t *testing.T, probe func(context.Context) error, warmup, target time.Duration) (*guard.Guard, *breaker.Breaker, *transitions) {
	t.Helper()
	rec := &transitions{}
	cfg := breaker.DefaultConfig()
	cfg.FailureThreshold = 1
	cfg.ResetTimeout = 20 * time.Millisecond
	cfg.TrialLease = time.Minute
	cfg.OnStateChange = rec.record
	b, err := breaker.New("graph", cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := guard.NewCircuit(b, guard.ProbeConfig{Probe: probe, Warmup: warmup, Target: target, Poll: 30 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return guard.New("graph", guard.Config{Circuit: c}), b, rec
}

// eventually polls cond for up to 20 s: generous, so a loaded machine
// cannot fail it; the assertions are about what happens, not how fast.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not reached within 20s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// With a probe, a user call is never a half-open trial: users are refused
// until the background probe closes the circuit.
func TestProbeMakesTheTrials(t *testing.T) {
	var probes atomic.Int64
	g, b, rec := probedCircuit(t, func(context.Context) error { probes.Add(1); return nil }, time.Second, time.Second)
	b.ForceOpen()
	admittedWhileNotClosed := 0
	eventually(t, "the probe closes the circuit", func() bool {
		state := b.State()
		p, err := g.Admit(context.Background())
		if err == nil {
			if state != breaker.Closed {
				admittedWhileNotClosed++
			}
			p.Done(spi.OutcomeSuccess, 0)
		} else if !errors.Is(err, spi.ErrCircuitOpen) {
			t.Fatalf("Admit = %v", err)
		}
		return state == breaker.Closed && probes.Load() > 0
	})
	if admittedWhileNotClosed != 0 {
		t.Fatalf("%d user calls admitted while the circuit was not closed", admittedWhileNotClosed)
	}
	if p := rec.get(); len(p) < 3 || p[len(p)-1] != "half_open>closed" {
		t.Fatalf("transitions %v, want to close through a half-open trial", p)
	}
}

// A probe that answers slower than the warm target found a cold source: it
// is probed again, within the warm-up deadline, before the trial succeeds.
func TestWarmupReprobesColdSource(t *testing.T) {
	var probes atomic.Int64
	var deadlineLeft atomic.Int64
	probe := func(ctx context.Context) error {
		n := probes.Add(1)
		if dl, ok := ctx.Deadline(); ok && n == 1 {
			deadlineLeft.Store(int64(time.Until(dl)))
		}
		if n <= 2 {
			time.Sleep(60 * time.Millisecond) // cold: slower than the target
		}
		return nil
	}
	_, b, rec := probedCircuit(t, probe, 10*time.Second, 30*time.Millisecond)
	b.ForceOpen()
	eventually(t, "closed", func() bool { return b.State() == breaker.Closed })
	if n := probes.Load(); n != 3 {
		t.Fatalf("%d probes before closing, want 3 (two cold, one warm)", n)
	}
	// Each probe has the warm-up deadline, far above any query timeout.
	if left := time.Duration(deadlineLeft.Load()); left < 5*time.Second {
		t.Fatalf("probe deadline %v, want the 10s warm-up", left)
	}
	if p := rec.get(); len(p) != 3 {
		t.Fatalf("transitions %v, want closed>open, open>half_open, half_open>closed", p)
	}
}

// A failed probe re-opens the circuit for another cooldown; a later probe
// closes it.
func TestFailedProbeReopens(t *testing.T) {
	var probes atomic.Int64
	probe := func(context.Context) error {
		if probes.Add(1) == 1 {
			return spi.ErrUnavailable
		}
		return nil
	}
	_, b, rec := probedCircuit(t, probe, time.Second, time.Second)
	b.ForceOpen()
	eventually(t, "closed", func() bool { return b.State() == breaker.Closed })
	want := []string{"closed>open", "open>half_open", "half_open>open", "open>half_open", "half_open>closed"}
	if p := rec.get(); !equal(p, want) {
		t.Fatalf("transitions %v, want %v", p, want)
	}
}

func equal(a, b []string) bool {
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

// Without a probe, a half-open circuit admits user calls as its trials.
func TestNoProbeUserTrials(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	b := newBreaker(t, clock, 1)
	g := guard.New("graph", guard.Config{Circuit: guard.NewCircuit(b, guard.ProbeConfig{})})
	b.ForceOpen()
	if err := g.Check(); !errors.Is(err, spi.ErrCircuitOpen) {
		t.Fatalf("Check while open = %v", err)
	}
	clock.Advance(10 * time.Second)
	if err := g.Check(); err != nil {
		t.Fatalf("Check while half-open without a probe = %v, want nil", err)
	}
	mustAdmit(t, g).Done(spi.OutcomeSuccess, 0)
	if b.State() != breaker.Closed {
		t.Fatalf("a user trial's success left the breaker %v", b.State())
	}
}

// A source that answers, but never within its timeout, fails the trial
// once the warm-up is spent: it is not handed user traffic.
func TestSlowProbeFailsAfterWarmup(t *testing.T) {
	var probes atomic.Int64
	probe := func(ctx context.Context) error {
		probes.Add(1)
		time.Sleep(15 * time.Millisecond)
		return nil
	}
	_, b, rec := probedCircuit(t, probe, 100*time.Millisecond, time.Millisecond)
	b.ForceOpen()
	eventually(t, "a failed trial", func() bool {
		p := rec.get()
		return len(p) >= 3 && p[2] == "half_open>open"
	})
	if p := rec.get(); slices.Contains(p, "half_open>closed") {
		t.Fatalf("transitions %v: a source slower than its timeout closed the circuit", p)
	}
	if probes.Load() < 2 {
		t.Fatalf("%d probes: the slow source was not re-probed within the warm-up", probes.Load())
	}
}

// While the cooldown runs, the loop warms the backend with probes whose
// outcomes go to no breaker; the trial still waits for the cooldown.
func TestWarmDuringCooldown(t *testing.T) {
	var probes atomic.Int64
	rec := &transitions{}
	cfg := breaker.DefaultConfig()
	cfg.FailureThreshold = 1
	cfg.ResetTimeout = 300 * time.Millisecond
	cfg.OnStateChange = rec.record
	b, err := breaker.New("graph", cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := guard.NewCircuit(b, guard.ProbeConfig{Probe: func(context.Context) error { probes.Add(1); return nil },
		Warmup: time.Second, Target: time.Second, Poll: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	b.ForceOpen()
	eventually(t, "closed", func() bool { return b.State() == breaker.Closed })
	if n := probes.Load(); n < 3 {
		t.Fatalf("%d probes over a 300 ms cooldown polled every 20 ms, want warm-up probes besides the trial", n)
	}
	if p := rec.get(); !equal(p, []string{"closed>open", "open>half_open", "half_open>closed"}) {
		t.Fatalf("transitions %v: warm-up probes must not decide the breaker", p)
	}
}

// hookClock is a fake clock that runs hook once, from inside the next Now
// call after it is armed: a test stops the breaker's reader at the exact
// clock read and changes the state under it.
type hookClock struct {
	fakeClock
	hook func()
}

func (c *hookClock) Now() time.Time {
	if h := c.hook; h != nil {
		c.hook = nil
		h()
	}
	return c.fakeClock.Now()
}

// Issue 18 item 19: a probed circuit that closes between the state read
// and the decision must not admit a call with an empty ticket (its outcome
// would reach no breaker). Admit either refuses, or the call counts.
func TestAdmitWhileTheCircuitCloses(t *testing.T) {
	clock := &hookClock{fakeClock: fakeClock{now: time.Unix(1e9, 0)}}
	cfg := breaker.DefaultConfig()
	cfg.FailureThreshold = 1
	cfg.ResetTimeout = 10 * time.Second
	cfg.Now = clock.Now
	b, err := breaker.New("graph", cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := guard.NewCircuit(b, guard.ProbeConfig{Probe: func(context.Context) error { return nil }, Warmup: time.Second})
	g := guard.New("graph", guard.Config{Circuit: c})
	b.ForceOpen()
	clock.Advance(11 * time.Second) // the cooldown is over: reads see half-open
	clock.hook = b.ForceClose       // closed by the trial, under the first read
	p, err := g.Admit(context.Background())
	if err != nil {
		if !errors.Is(err, spi.ErrCircuitOpen) {
			t.Fatalf("Admit = %v, want a circuit-open refusal or a permit", err)
		}
		return
	}
	p.Done(spi.OutcomeFailure, 0)
	if b.State() != breaker.Open {
		t.Fatalf("a permit's failure did not reach the breaker (threshold 1): %v", b.State())
	}
}

// countingClock is a real clock that counts its reads: the probe loop reads
// it on every pass (through the breaker's Snapshot), so a test can wait for
// the loop to have passed many times without sleeping for a guessed time.
type countingClock struct{ reads atomic.Int64 }

func (c *countingClock) Now() time.Time { c.reads.Add(1); return time.Now() }

// A held breaker is never probed, not even to warm the backend during what
// would be its cooldown; released, it is closed at once and calls pass.
func TestHeldCircuitIsNotProbed(t *testing.T) {
	clock := &countingClock{}
	cfg := breaker.DefaultConfig()
	cfg.FailureThreshold = 1
	cfg.ResetTimeout = time.Millisecond
	cfg.Now = clock.Now
	b, err := breaker.New("graph", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var probes atomic.Int64
	c := guard.NewCircuit(b, guard.ProbeConfig{Probe: func(context.Context) error { probes.Add(1); return nil },
		Warmup: time.Second, Target: time.Second, Poll: time.Millisecond})
	b.Hold(breaker.Manual{By: "ops", Note: "maintenance"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	g := guard.New("graph", guard.Config{Circuit: c})
	start := clock.reads.Load()
	eventually(t, "the probe loop passes 200 times", func() bool {
		if _, err := g.Admit(context.Background()); !errors.Is(err, spi.ErrCircuitOpen) {
			t.Fatalf("a call was admitted while held: %v", err)
		}
		return clock.reads.Load()-start > 200
	})
	if n := probes.Load(); n != 0 {
		t.Fatalf("%d probes of a held breaker", n)
	}
	h := guard.Health(upHealth{}, c).Health(context.Background())
	if h.Status != spi.StatusDown || h.Detail != "circuit held open by ops" {
		t.Fatalf("health while held: %+v", h)
	}
	b.ForceClose()
	p, err := g.Admit(context.Background())
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	p.Done(spi.OutcomeSuccess, 0)
}

type upHealth struct{}

func (upHealth) Health(context.Context) spi.Health { return spi.Health{Status: spi.StatusUp} }
