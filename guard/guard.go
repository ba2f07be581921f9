package guard

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/spi"
)

// Config assembles a Guard. Both parts are optional; a Guard with neither
// admits everything.
type Config struct {
	// Circuit is the source's breaker (shared between guards of one backend).
	Circuit *Circuit
	// Limiter bounds the calls in flight (NewAdaptive).
	Limiter Limiter
	// Now is the clock for the timeout rule; nil means time.Now.
	Now func() time.Time
}

// Guard admits calls to one source. It implements spi.Gate and is safe for
// concurrent use.
type Guard struct {
	name string
	cfg  Config
	shed *spi.RejectedError // the one shed rejection, shared

	shedTotal      atomic.Uint64
	shedSeq        atomic.Uint64 // bumped on every shed; a saturation clock
	okSeq          atomic.Uint64 // bumped on every success; a liveness clock
	lastCounted    atomic.Int64  // when the last counted timeout ended (unix ns)
	timeoutsCount  atomic.Uint64 // timeouts counted against the breaker
	timeoutsIgnore atomic.Uint64 // timeouts of saturated calls
}

var _ spi.Gate = (*Guard)(nil)

// New returns the guard of source name.
func New(name string, cfg Config) *Guard {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Guard{name: name, cfg: cfg, shed: &spi.RejectedError{Gate: name, Reason: spi.ErrShed}}
}

// Name returns the source's name.
func (g *Guard) Name() string { return g.name }

// CircuitState implements spi.CircuitStater: the breaker's state, or ""
// without a circuit.
func (g *Guard) CircuitState() string {
	if g.cfg.Circuit == nil {
		return ""
	}
	return g.cfg.Circuit.b.State().String()
}

var _ spi.CircuitStater = (*Guard)(nil)

// Circuit returns the guard's circuit, or nil.
func (g *Guard) Circuit() *Circuit { return g.cfg.Circuit }

// Check implements spi.Gate.
func (g *Guard) Check() error {
	if g.cfg.Circuit == nil {
		return nil
	}
	return g.cfg.Circuit.check()
}

// Admit implements spi.Gate: the circuit first, then a slot under the
// limit, without waiting for either.
func (g *Guard) Admit(ctx context.Context) (spi.Permit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := &permit{g: g}
	if c := g.cfg.Circuit; c != nil {
		tk, err := c.admit()
		if err != nil {
			return nil, err
		}
		p.tk = tk
	}
	if l := g.cfg.Limiter; l != nil {
		lp, ok := l.TryAcquire()
		if !ok {
			p.tk.Neutral()
			g.shedTotal.Add(1)
			g.shedSeq.Add(1)
			return nil, g.shed
		}
		p.lp = lp
		p.saturated = l.Inflight() >= l.Limit()
	}
	p.shedSeq, p.okSeq = g.shedSeq.Load(), g.okSeq.Load()
	p.start = g.cfg.Now().UnixNano()
	return p, nil
}

// permit is one admitted call.
type permit struct {
	g         *Guard
	tk        breaker.Ticket
	lp        LimitPermit
	saturated bool   // took the last slot
	shedSeq   uint64 // g.shedSeq at admission
	okSeq     uint64 // g.okSeq at admission
	start     int64  // admission time, unix ns
}

var (
	errFailed   = errors.New("guard: call failed")
	errTimedOut = errors.New("guard: call timed out on an unsaturated source")
)

// Done implements spi.Permit; see the package doc for the rules.
func (p *permit) Done(o spi.Outcome, _ time.Duration) {
	if p.lp != nil {
		if o == spi.OutcomeSuccess || o == spi.OutcomeTimeout {
			p.lp.Record()
		} else {
			p.lp.Drop()
		}
	}
	switch o {
	case spi.OutcomeSuccess:
		p.g.okSeq.Add(1)
		p.tk.Success()
	case spi.OutcomeFailure:
		p.tk.Failure(errFailed)
	case spi.OutcomeTimeout:
		if p.busy() || !p.g.countTimeout(p.start) {
			p.g.timeoutsIgnore.Add(1)
			p.tk.Neutral()
		} else {
			p.g.timeoutsCount.Add(1)
			p.tk.Failure(errTimedOut)
		}
	default:
		p.tk.Neutral()
	}
}

// busy reports whether the source was saturated during the call: it took
// the last slot, a call was shed while it ran, or another call succeeded
// while it ran (the source is alive and answering; this call queued).
func (p *permit) busy() bool {
	return p.saturated || p.g.shedSeq.Load() != p.shedSeq || p.g.okSeq.Load() != p.okSeq
}

// countTimeout decides whether an unsaturated timeout of a call admitted at
// start is independent evidence: it is only if the call began after the
// last counted timeout ended. Calls cut off together by one stall (a GC
// pause, a starved CPU) overlap, and count once; a hung source still
// fails call after call and trips after FailureThreshold timeouts in a row.
func (g *Guard) countTimeout(start int64) bool {
	end := g.cfg.Now().UnixNano()
	for {
		last := g.lastCounted.Load()
		if start <= last {
			return false
		}
		if g.lastCounted.CompareAndSwap(last, end) {
			return true
		}
	}
}

// Snapshot is a guard's counters, for status reports and metrics.
type Snapshot struct {
	Name string `json:"name"`
	// Limit and Inflight are the concurrency limit and the calls in
	// flight; both 0 without a limiter.
	Limit    int `json:"limit"`
	Inflight int `json:"inflight"`
	// ShedTotal counts calls refused at the limit.
	ShedTotal uint64 `json:"shed_total"`
	// TimeoutsCounted and TimeoutsSaturated count per-source timeouts
	// that did and did not count against the breaker.
	TimeoutsCounted   uint64 `json:"timeouts_counted"`
	TimeoutsSaturated uint64 `json:"timeouts_saturated"`
	// Breaker is the circuit breaker's name, empty without one.
	Breaker string `json:"breaker,omitempty"`
}

// Snapshot returns the guard's counters.
func (g *Guard) Snapshot() Snapshot {
	s := Snapshot{Name: g.name, ShedTotal: g.shedTotal.Load(),
		TimeoutsCounted: g.timeoutsCount.Load(), TimeoutsSaturated: g.timeoutsIgnore.Load()}
	if l := g.cfg.Limiter; l != nil {
		s.Limit, s.Inflight = l.Limit(), l.Inflight()
	}
	if c := g.cfg.Circuit; c != nil {
		s.Breaker = c.b.Name()
	}
	return s
}
