package guard

import (
	"fmt"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
)

// Limiter bounds the calls in flight to one source.
type Limiter interface {
	// TryAcquire takes a slot without waiting, or reports false when the
	// source is at its limit.
	TryAcquire() (LimitPermit, bool)
	// Limit is the current limit; Inflight the slots taken.
	Limit() int
	Inflight() int
}

// LimitPermit is one taken slot.
type LimitPermit interface {
	// Record releases the slot and feeds the call's duration to the limit.
	Record()
	// Drop releases the slot without a sample (a call that failed fast or
	// was abandoned says nothing about the source's latency).
	Drop()
}

// AdaptiveConfig configures NewAdaptive.
type AdaptiveConfig struct {
	// Min, Max and Initial bound and start the limit.
	Min, Max, Initial int
	// Window is the shortest span of samples between two limit updates
	// (at least 50 samples are needed as well); 0 means 1s.
	Window time.Duration
}

// Validate reports a config NewAdaptive would refuse.
func (c AdaptiveConfig) Validate() error {
	switch {
	case c.Min < 1:
		return fmt.Errorf("guard: limit: min %d, want >= 1", c.Min)
	case c.Max < c.Min:
		return fmt.Errorf("guard: limit: max %d below min %d", c.Max, c.Min)
	case c.Initial < c.Min || c.Initial > c.Max:
		return fmt.Errorf("guard: limit: initial %d outside [%d, %d]", c.Initial, c.Min, c.Max)
	case c.Window < 0:
		return fmt.Errorf("guard: limit: window %v, want >= 0", c.Window)
	}
	return nil
}

// NewAdaptive returns a limit that adapts to the source's latency: the
// failsafe-go adaptive limiter, a gradient algorithm in the family of
// Netflix's concurrency-limits (Vegas, Gradient2). It compares recent
// latency (p90 over the window) with a longer baseline and lowers the limit
// when latency climbs with concurrency, raises it while latency holds, and
// caps it at five times the calls actually in flight, so a source's limit
// follows what it can serve rather than a guess.
func NewAdaptive(cfg AdaptiveConfig) (Limiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := cfg.Window
	if w == 0 {
		w = time.Second
	}
	l := adaptivelimiter.NewBuilder[any]().
		WithLimits(uint(cfg.Min), uint(cfg.Max), uint(cfg.Initial)).
		WithRecentWindow(w, 30*w, 50).
		Build()
	return adaptive{l}, nil
}

type adaptive struct {
	l adaptivelimiter.AdaptiveLimiter[any]
}

func (a adaptive) TryAcquire() (LimitPermit, bool) {
	p, ok := a.l.TryAcquirePermit()
	if !ok {
		return nil, false
	}
	return p, true
}

func (a adaptive) Limit() int    { return a.l.Limit() }
func (a adaptive) Inflight() int { return a.l.Inflight() }
