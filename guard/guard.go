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
	ev   *evidence          // the circuit's, shared by the backend's guards

	shedTotal     atomic.Uint64
	timeoutsCount atomic.Uint64 // timeouts counted against the breaker
	timeoutsBusy  atomic.Uint64 // timeouts while another call succeeded
	timeoutsStall atomic.Uint64 // timeouts of a stall already counted
}

// evidence is what a backend's calls say about it between two timeouts:
// whether any call succeeded, and when the last counted timeout ended. A
// Circuit holds it, so the guards sharing a backend's breaker (the graph
// source and its expansion) judge their timeouts by the same evidence.
type evidence struct {
	okSeq       atomic.Uint64 // bumped on every success; a liveness clock
	lastCounted atomic.Int64  // when the last counted timeout ended (unix ns)
}

var _ spi.Gate = (*Guard)(nil)

// New returns the guard of source name.
func New(name string, cfg Config) *Guard {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	g := &Guard{name: name, cfg: cfg, shed: &spi.RejectedError{Gate: name, Reason: spi.ErrShed}, ev: &evidence{}}
	if cfg.Circuit != nil {
		g.ev = &cfg.Circuit.ev
	}
	return g
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
		var lp LimitPermit
		var ok bool
		if cl, isCL := l.(ContextLimiter); isCL {
			lp, ok = cl.TryAcquireContext(ctx)
		} else {
			lp, ok = l.TryAcquire()
		}
		if !ok {
			p.tk.Neutral()
			g.shedTotal.Add(1)
			return nil, g.shed
		}
		p.lp = lp
	}
	p.okSeq = g.ev.okSeq.Load()
	p.start = g.cfg.Now().UnixNano()
	return p, nil
}

// permit is one admitted call.
type permit struct {
	g     *Guard
	tk    breaker.Ticket
	lp    LimitPermit
	okSeq uint64 // g.ev.okSeq at admission
	start int64  // admission time, unix ns
}

var (
	errFailed   = errors.New("guard: call failed")
	errTimedOut = errors.New("guard: call timed out while no other call to the source succeeded")
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
	g := p.g
	switch o {
	case spi.OutcomeSuccess:
		g.ev.okSeq.Add(1)
		p.tk.Success()
	case spi.OutcomeFailure:
		p.tk.Failure(errFailed)
	case spi.OutcomeTimeout:
		switch {
		case g.ev.okSeq.Load() != p.okSeq:
			// Another call succeeded while this one ran: the source is
			// alive and this call waited behind others.
			g.timeoutsBusy.Add(1)
			p.tk.Neutral()
		case !g.ev.countTimeout(p.start, g.cfg.Now().UnixNano()):
			g.timeoutsStall.Add(1)
			p.tk.Neutral()
		default:
			g.timeoutsCount.Add(1)
			p.tk.Failure(errTimedOut)
		}
	default:
		p.tk.Neutral()
	}
}

// countTimeout decides whether a timeout of a call admitted at start and
// ended at end (unix ns) is new evidence: it is only if the call began
// after the last counted timeout ended. Calls cut off together by one
// stall (a GC pause, a starved CPU) overlap, and count once; a hung source
// still fails call after call, each begun after the last counted one
// ended, and trips after FailureThreshold of them.
func (ev *evidence) countTimeout(start, end int64) bool {
	for {
		last := ev.lastCounted.Load()
		if start <= last {
			return false
		}
		if ev.lastCounted.CompareAndSwap(last, end) {
			return true
		}
	}
}

// Snapshot returns the guard's counters.
func (g *Guard) Snapshot() Snapshot {
	s := Snapshot{Name: g.name, ShedTotal: g.shedTotal.Load(),
		TimeoutsCounted: g.timeoutsCount.Load(), TimeoutsBusy: g.timeoutsBusy.Load(), TimeoutsSameStall: g.timeoutsStall.Load()}
	if l := g.cfg.Limiter; l != nil {
		s.Limit, s.Inflight = l.Limit(), l.Inflight()
	}
	if c := g.cfg.Circuit; c != nil {
		s.Breaker = c.b.Name()
	}
	return s
}
