package guard

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/spi"
)

// ProbeConfig configures a Circuit's background recovery.
type ProbeConfig struct {
	// Probe is a cheap, representative call to the source (a one-result
	// query). Nil leaves recovery to user calls: a half-open breaker then
	// admits them as its trials.
	Probe func(ctx context.Context) error
	// Warmup is each probe's deadline, and the longest a trial spends
	// warming a cold source. It should be well above any per-query timeout
	// and below the breaker's TrialLease.
	Warmup time.Duration
	// Target is the latency under which a probe finds the source warm; a
	// slower answer is probed again, and a source still slower once Warmup
	// is spent fails the trial. Typically the source's per-query timeout.
	Target time.Duration
	// Poll is how often the loop looks at a closed breaker (it is also
	// woken by refusals); 0 means 1s.
	Poll time.Duration
	// Logger receives the loop's trial results (no query text exists
	// here); nil discards.
	Logger *slog.Logger
}

// Circuit is a breaker with, optionally, background probes that make its
// half-open trials. Several Guards may share one Circuit (the graph source
// and its expansion share the graph backend's). Create it with NewCircuit
// and, when it has a probe, run Run on a goroutine of its own.
type Circuit struct {
	b    *breaker.Breaker
	p    ProbeConfig
	wake chan struct{}
	ev   evidence // the timeout rule's, for every guard of this backend
}

// NewCircuit wraps b.
func NewCircuit(b *breaker.Breaker, p ProbeConfig) *Circuit {
	if p.Poll <= 0 {
		p.Poll = time.Second
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	return &Circuit{b: b, p: p, wake: make(chan struct{}, 1)}
}

// Breaker returns the wrapped breaker.
func (c *Circuit) Breaker() *breaker.Breaker { return c.b }

// Probed reports whether background probes make the trials.
func (c *Circuit) Probed() bool { return c.p.Probe != nil }

// check returns the rejection Admit would give because the circuit is not
// accepting user calls, or nil.
func (c *Circuit) check() error {
	s := c.b.Snapshot()
	switch {
	case s.State == breaker.Closed:
		return nil
	case s.State == breaker.Open, c.Probed():
		c.poke()
		return &spi.RejectedError{Gate: c.b.Name(), Reason: spi.ErrCircuitOpen, RetryAfter: s.RetryIn}
	}
	return nil // half-open without a probe: user calls are the trials
}

// admit takes a breaker ticket for a user call.
func (c *Circuit) admit() (breaker.Ticket, error) {
	if c.Probed() {
		// One read decides. (Reading the state, then building the refusal
		// from a second read, admitted a call with no ticket when the
		// breaker closed in between.)
		if err := c.check(); err != nil {
			return breaker.Ticket{}, err
		}
	}
	tk, err := c.b.Admit()
	if err != nil {
		c.poke()
		var oe *breaker.OpenError
		var retry time.Duration
		if errors.As(err, &oe) {
			retry = oe.RetryAfter
		}
		return breaker.Ticket{}, &spi.RejectedError{Gate: c.b.Name(), Reason: spi.ErrCircuitOpen, RetryAfter: retry}
	}
	if tk.Trial() && c.Probed() {
		// The cooldown ended between the state read and Admit: the probe,
		// not this user, makes the trial.
		tk.Neutral()
		c.poke()
		return breaker.Ticket{}, &spi.RejectedError{Gate: c.b.Name(), Reason: spi.ErrCircuitOpen}
	}
	return tk, nil
}

// poke wakes the probe loop without blocking.
func (c *Circuit) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Run makes the half-open trials with the probe until ctx is done. Without
// a probe it returns at once. A breaker held for maintenance
// (breaker.Breaker.Hold) is never probed, not even to warm it.
func (c *Circuit) Run(ctx context.Context) {
	if !c.Probed() {
		return
	}
	t := time.NewTimer(c.p.Poll)
	defer t.Stop()
	for ctx.Err() == nil {
		s := c.b.Snapshot()
		wait := c.p.Poll
		switch s.State {
		case breaker.HalfOpen:
			c.trial(ctx)
			continue
		case breaker.Open:
			if s.Hold != nil {
				break // held for maintenance: no probe until released
			}
			wait = max(s.RetryIn, time.Millisecond)
			if s.RetryIn > c.p.Poll {
				// Warm the backend while the cooldown runs, so that the
				// trial at its end finds it warm: a restarted server
				// spends its cold start now, not after the trial.
				c.warm(ctx, s.RetryIn)
				wait = c.p.Poll
			}
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
			if !t.Stop() {
				<-t.C
			}
		case <-t.C:
		}
	}
}

// warm makes one probe during a cooldown with at most the time left of it
// as its deadline. Its outcome goes to no breaker: the trial decides.
func (c *Circuit) warm(ctx context.Context, left time.Duration) {
	wctx, cancel := context.WithTimeout(ctx, min(left, c.p.Warmup))
	defer cancel()
	_ = c.p.Probe(wctx)
}

// trial takes the half-open trial slot and reports one trial: probes until
// one answers within Target (or Warmup has been spent warming), or fails.
func (c *Circuit) trial(ctx context.Context) {
	tk, err := c.b.Admit()
	if err != nil || !tk.Trial() {
		tk.Neutral() // closed meanwhile (forced), or the slot is taken
		if err != nil {
			sleep(ctx, min(c.p.Poll, 100*time.Millisecond))
		}
		return
	}
	start := time.Now()
	probes := 0
	for {
		pctx, cancel := context.WithTimeout(ctx, c.p.Warmup)
		t0 := time.Now()
		perr := c.p.Probe(pctx)
		took := time.Since(t0)
		cancel()
		probes++
		switch {
		case ctx.Err() != nil:
			tk.Neutral()
			return
		case perr != nil:
			c.p.Logger.Warn("guard: trial failed", slog.String("breaker", c.b.Name()),
				slog.Int("probes", probes), slog.Duration("took", took), slog.String("outcome", spi.OutcomeOf(ctx, perr).String()))
			tk.Failure(errProbeFailed)
			return
		case took <= c.p.Target:
			c.p.Logger.Info("guard: trial succeeded", slog.String("breaker", c.b.Name()),
				slog.Int("probes", probes), slog.Duration("took", took))
			tk.Success()
			return
		case time.Since(start) >= c.p.Warmup:
			// Still slower than a query may wait after a whole warm-up:
			// it answers, but not usefully. Another cooldown.
			c.p.Logger.Warn("guard: trial too slow", slog.String("breaker", c.b.Name()),
				slog.Int("probes", probes), slog.Duration("took", took))
			tk.Failure(errProbeSlow)
			return
		}
		// Answered, but cold: probe again to warm it.
	}
}

var (
	errProbeFailed = errors.New("guard: probe failed")
	errProbeSlow   = errors.New("guard: probe answered slower than the source's timeout for a whole warm-up")
)

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
