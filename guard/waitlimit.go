package guard

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// WaitConfig configures NewWaitLimit.
type WaitConfig struct {
	// Deadline is the source's deadline: how long a call may wait and run
	// (retriever.embed_timeout_ms for query embedding). A call's context
	// deadline, when sooner, is used instead.
	Deadline time.Duration
	// ServiceTime is what one more call in flight adds to the wait, as the
	// source measures it (for the built-in model: a batched forward pass's
	// wall time divided by its queries); 0 means not measured yet.
	ServiceTime func() time.Duration
	// Fill is the share of the deadline the expected wait may fill; 0
	// means 0.8, leaving room for the estimate's error.
	Fill float64
	// Min calls are admitted whatever the estimate says (a lone call always
	// goes; a source with no measurement yet gets Min at once). At least 1.
	Min int
	// Max bounds the calls in flight whatever the estimate says, so that
	// what a queue may hold is bounded. At least Min.
	Max int
	// Now is the clock for context deadlines; nil means time.Now.
	Now func() time.Time
}

// Validate reports a config NewWaitLimit would refuse.
func (c WaitConfig) Validate() error {
	switch {
	case c.Deadline <= 0:
		return fmt.Errorf("guard: wait limit: deadline %v, want > 0", c.Deadline)
	case c.ServiceTime == nil:
		return fmt.Errorf("guard: wait limit: no service time")
	case c.Fill < 0 || c.Fill > 1:
		return fmt.Errorf("guard: wait limit: fill %v, want 0 to 1", c.Fill)
	case c.Min < 1:
		return fmt.Errorf("guard: wait limit: min %d, want >= 1", c.Min)
	case c.Max < c.Min:
		return fmt.Errorf("guard: wait limit: max %d below min %d", c.Max, c.Min)
	}
	return nil
}

// NewWaitLimit returns a limit for a source that queues its calls and
// serves them at a measured rate (a batching in-process model): it admits a
// call while the wait it can expect, (calls in flight + 1) × ServiceTime,
// fits Fill of its deadline, and refuses (sheds) the rest. So it sheds only
// what could not be served in time, however many calls that allows.
//
// The estimate looks only at the calls in flight, never at how long the
// current one has run: a hung source keeps admitting as its calls time out
// and leave, so their timeouts keep reaching the breaker (package doc, Slow
// is not dead) and it trips.
func NewWaitLimit(cfg WaitConfig) (Limiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Fill == 0 {
		cfg.Fill = 0.8
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &waitLimit{cfg: cfg}, nil
}

type waitLimit struct {
	cfg      WaitConfig
	mu       sync.Mutex
	inflight int
}

var _ ContextLimiter = (*waitLimit)(nil)

// ContextLimiter is a Limiter whose admission depends on the call's
// context (its deadline); Guard.Admit uses TryAcquireContext when the
// limiter has it.
type ContextLimiter interface {
	Limiter
	TryAcquireContext(ctx context.Context) (LimitPermit, bool)
}

func (l *waitLimit) TryAcquire() (LimitPermit, bool) {
	return l.TryAcquireContext(context.Background())
}

func (l *waitLimit) TryAcquireContext(ctx context.Context) (LimitPermit, bool) {
	budget := l.cfg.Deadline
	if d, ok := ctx.Deadline(); ok {
		budget = min(budget, d.Sub(l.cfg.Now()))
	}
	st := l.cfg.ServiceTime()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight >= l.bound(budget, st) {
		return nil, false
	}
	l.inflight++
	return waitPermit{l}, true
}

// bound is how many calls may be in flight for a new one to expect to end
// within budget.
func (l *waitLimit) bound(budget, st time.Duration) int {
	n := l.cfg.Min // not measured yet
	if st > 0 {
		n = int(l.cfg.Fill * float64(budget) / float64(st))
	}
	return min(max(n, l.cfg.Min), l.cfg.Max)
}

// Limit is the calls in flight the source's deadline allows at its current
// service time.
func (l *waitLimit) Limit() int { return l.bound(l.cfg.Deadline, l.cfg.ServiceTime()) }

func (l *waitLimit) Inflight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inflight
}

type waitPermit struct{ l *waitLimit }

// Record and Drop release the slot; the service time comes from the
// source, not from the calls' durations.
func (p waitPermit) Record() { p.release() }
func (p waitPermit) Drop()   { p.release() }

func (p waitPermit) release() {
	p.l.mu.Lock()
	p.l.inflight--
	p.l.mu.Unlock()
}
