package breaker

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Config tunes a Breaker. Start from DefaultConfig and change what you need;
// New rejects a Config that fails Validate.
type Config struct {
	// FailureThreshold consecutive failures while closed trip the breaker.
	FailureThreshold int
	// ResetTimeout is how long the breaker stays open before admitting
	// trials. Zero admits trials immediately. With Backoff it is the first,
	// shortest open duration.
	ResetTimeout time.Duration
	// HalfOpenMaxCalls bounds the trials in flight at once while half-open.
	HalfOpenMaxCalls int
	// SuccessThreshold trial successes close the breaker.
	SuccessThreshold int
	// TrialLease is how long an admitted trial may stay unreported (a lost
	// done func, a hung call) before its slot is reclaimed as a neutral
	// outcome, so that half-open cannot stick forever. Zero means
	// max(ResetTimeout, 1s).
	TrialLease time.Duration

	// FailureRate is an optional second trip rule, off by default.
	FailureRate FailureRate
	// Backoff optionally grows the open duration on consecutive trips.
	Backoff Backoff

	// ShouldCount decides whether a non-nil error counts as a failure
	// (true) or is neutral (false). Nil counts every error. It is consulted
	// after the caller-cancellation rule described in the package doc.
	// It must be safe for concurrent use.
	ShouldCount func(error) bool
	// OnStateChange, when set, receives every transition. It runs after
	// the breaker's lock is released, so it may call State or Snapshot;
	// calls are sequential, in transition order, never concurrent (a
	// transition made while a hook runs is delivered by that hook's
	// goroutine after it returns).
	OnStateChange func(Transition)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// FailureRate trips the breaker when, within the rolling Window, at least
// MinCalls calls completed and the share of failures among them is at least
// Threshold. Neutral outcomes are not calls for this rule. The rule runs
// alongside the consecutive-failure rule and is off while Threshold is 0.
//
// With the rule on, each completed call while closed reads the clock and
// takes a short mutex to update the window, so the closed path is no longer
// clock-free.
type FailureRate struct {
	// Threshold is the failure share in (0, 1] that trips; 0 disables.
	Threshold float64
	// MinCalls is the fewest completed calls in the window before the
	// rate is judged.
	MinCalls int
	// Window is the length of the rolling window.
	Window time.Duration
	// Buckets is the window's resolution; 0 means 10.
	Buckets int
}

// Enabled reports whether the rule is on.
func (r FailureRate) Enabled() bool { return r.Threshold > 0 }

// Backoff grows the open duration on consecutive trips (a trial failure
// re-opening the breaker, without it closing in between): the n-th trip in
// a row stays open for ResetTimeout × Multiplier^(n-1), capped at Max, then
// shortened by up to a Jitter fraction at random. Closing resets the streak.
// The zero value keeps every open duration at ResetTimeout.
type Backoff struct {
	// Multiplier is the growth factor; 0 or 1 disables growth.
	Multiplier float64
	// Max caps the open duration before jitter; required when Multiplier > 1.
	Max time.Duration
	// Jitter in [0, 1] removes up to that share of the duration at random,
	// so breakers that tripped together do not probe together.
	Jitter float64
	// Rand returns a number in [0, 1); nil means math/rand/v2.Float64.
	// It must be safe for concurrent use.
	Rand func() float64
}

// DefaultConfig returns the defaults: 5 consecutive failures trip, 30s open,
// 1 trial at a time, 1 trial success closes.
func DefaultConfig() Config {
	return Config{
		FailureThreshold: 5,
		ResetTimeout:     30 * time.Second,
		HalfOpenMaxCalls: 1,
		SuccessThreshold: 1,
	}
}

// ErrInvalidConfig is wrapped by every error Validate returns.
var ErrInvalidConfig = errors.New("breaker: invalid config")

// Validate reports the first setting that cannot work: FailureThreshold,
// HalfOpenMaxCalls or SuccessThreshold below 1, a negative ResetTimeout or
// TrialLease, or an inconsistent FailureRate or Backoff. The error wraps
// ErrInvalidConfig.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case c.FailureThreshold < 1:
		return bad("failure threshold %d, want >= 1", c.FailureThreshold)
	case uint64(c.FailureThreshold) > math.MaxUint32:
		return bad("failure threshold %d, want <= %d", c.FailureThreshold, uint64(math.MaxUint32))
	case c.ResetTimeout < 0:
		return bad("reset timeout %v, want >= 0", c.ResetTimeout)
	case c.HalfOpenMaxCalls < 1:
		return bad("half-open max calls %d, want >= 1", c.HalfOpenMaxCalls)
	case c.SuccessThreshold < 1:
		return bad("success threshold %d, want >= 1", c.SuccessThreshold)
	case c.TrialLease < 0:
		return bad("trial lease %v, want >= 0", c.TrialLease)
	}
	if r := c.FailureRate; r != (FailureRate{}) {
		switch {
		case math.IsNaN(r.Threshold) || r.Threshold < 0 || r.Threshold > 1:
			return bad("failure rate threshold %v, want 0 (off) or in (0, 1]", r.Threshold)
		case r.Threshold > 0 && r.MinCalls < 1:
			return bad("failure rate min calls %d, want >= 1", r.MinCalls)
		case r.Threshold > 0 && r.Window <= 0:
			return bad("failure rate window %v, want > 0", r.Window)
		case r.Buckets < 0:
			return bad("failure rate buckets %d, want >= 0", r.Buckets)
		case r.Threshold > 0 && r.Window < time.Duration(max(r.Buckets, 1)):
			return bad("failure rate window %v is shorter than its %d buckets", r.Window, r.Buckets)
		}
	}
	b := c.Backoff
	switch {
	case math.IsNaN(b.Multiplier) || math.IsInf(b.Multiplier, 0) || (b.Multiplier != 0 && b.Multiplier < 1):
		return bad("backoff multiplier %v, want 0 (off) or >= 1", b.Multiplier)
	case b.Max < 0:
		return bad("backoff max %v, want >= 0", b.Max)
	case b.Multiplier > 1 && b.Max == 0:
		return bad("backoff max is required when the multiplier is %v", b.Multiplier)
	case b.Max != 0 && b.Max < c.ResetTimeout:
		return bad("backoff max %v is shorter than the reset timeout %v", b.Max, c.ResetTimeout)
	case math.IsNaN(b.Jitter) || b.Jitter < 0 || b.Jitter > 1:
		return bad("backoff jitter %v, want in [0, 1]", b.Jitter)
	}
	return nil
}

// IgnoreErrors returns a Config.ShouldCount that treats errors matching any
// of targets (by errors.Is) as neutral and counts every other error:
//
//	cfg.ShouldCount = breaker.IgnoreErrors(spi.ErrInvalidQuery)
func IgnoreErrors(targets ...error) func(error) bool {
	targets = append([]error(nil), targets...)
	return func(err error) bool {
		for _, t := range targets {
			if errors.Is(err, t) {
				return false
			}
		}
		return true
	}
}
