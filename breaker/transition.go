package breaker

import (
	"log/slog"
	"sync"
	"time"
)

// Reason says why a transition happened.
type Reason string

// Transition reasons.
const (
	ReasonFailureThreshold Reason = "failure_threshold" // closed → open: consecutive failures
	ReasonFailureRate      Reason = "failure_rate"      // closed → open: failure-rate rule
	ReasonTrialFailure     Reason = "trial_failure"     // half-open → open
	ReasonCooldown         Reason = "cooldown_elapsed"  // open → half-open
	ReasonTrialSuccess     Reason = "trial_success"     // half-open → closed
	ReasonForced           Reason = "forced"            // ForceOpen / ForceClose
	ReasonHeld             Reason = "held"              // Hold: open until ForceClose
)

// Transition is the event a breaker hands to Config.OnStateChange. It holds
// names and counts only, never request data.
type Transition struct {
	// Name is the breaker's name.
	Name string
	// From and To are the states before and after.
	From, To State
	// Reason says why.
	Reason Reason
	// Failures is the failure count behind the transition: consecutive
	// failures, or failures in the window for ReasonFailureRate.
	Failures int
	// Calls is the number of completed calls in the window for
	// ReasonFailureRate, otherwise 0.
	Calls int
	// TrialSuccesses is the trial successes of the half-open period that
	// ended, when From is HalfOpen.
	TrialSuccesses int
	// OpenedTotal counts every trip of this breaker, including this one.
	OpenedTotal uint64
	// OpenFor is the chosen open duration when To is Open.
	OpenFor time.Duration
	// At is when the transition happened, read from Config.Now.
	At time.Time
	// Lasted is how long the state being left lasted; an open state ends
	// with its cooldown, even when the next call made the transition later.
	Lasted time.Duration
	// Outage, when To is Closed, is how long the breaker was not closed:
	// from the trip to now, across every half-open trial and re-trip.
	Outage time.Duration
	// By and Note name the operator of a manual transition (ReasonForced,
	// ReasonHeld) and their reason; empty otherwise or when not given.
	By, Note string
	// Released is the hold that a ForceClose ended, if any.
	Released *Hold
	// Restored, on a hold (ReasonHeld) with Manual.Since set, is the hold
	// restored after a restart, with its original start: not a new trip
	// (OpenedTotal unchanged).
	Restored *Hold
}

// Event names the transition for logs and metrics: "breaker.opened",
// "breaker.half_opened" or "breaker.closed".
func (t Transition) Event() string {
	switch t.To {
	case Open:
		return "breaker.opened"
	case HalfOpen:
		return "breaker.half_opened"
	default:
		return "breaker.closed"
	}
}

// LogValue lets a Transition be passed to slog as one attribute.
func (t Transition) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("event", t.Event()),
		slog.String("breaker", t.Name),
		slog.String("from", t.From.String()),
		slog.String("to", t.To.String()),
		slog.String("reason", string(t.Reason)),
		slog.Int("failures", t.Failures),
		slog.Uint64("opened_total", t.OpenedTotal),
	}
	if t.Calls > 0 {
		attrs = append(attrs, slog.Int("calls", t.Calls))
	}
	if t.From == HalfOpen {
		attrs = append(attrs, slog.Int("trial_successes", t.TrialSuccesses))
	}
	if t.To == Open && t.Reason != ReasonHeld {
		attrs = append(attrs, slog.Duration("open_for", t.OpenFor))
	}
	attrs = append(attrs, slog.Duration("lasted", t.Lasted))
	if t.To == Closed && t.Outage > 0 {
		attrs = append(attrs, slog.Duration("outage", t.Outage))
	}
	if t.By != "" {
		attrs = append(attrs, slog.String("by", t.By))
	}
	if t.Note != "" {
		attrs = append(attrs, slog.String("note", t.Note))
	}
	if t.Released != nil {
		attrs = append(attrs, slog.String("released_hold_of", t.Released.By))
	}
	if t.Restored != nil {
		attrs = append(attrs, slog.Time("restored_hold_since", t.Restored.Since))
	}
	return slog.GroupValue(attrs...)
}

// hookQueue delivers transitions to OnStateChange outside the breaker's
// lock, in order and one at a time. Transitions are queued while the
// breaker's lock is held (so the queue order is the transition order) and
// delivered by whichever goroutine finds the queue idle.
type hookQueue struct {
	mu      sync.Mutex
	queue   []Transition
	running bool
}

// push queues t; the caller holds the breaker's lock.
func (h *hookQueue) push(t Transition) {
	h.mu.Lock()
	h.queue = append(h.queue, t)
	h.mu.Unlock()
}

// drain delivers queued transitions unless another goroutine already is.
// The caller must not hold the breaker's lock.
func (h *hookQueue) drain(fn func(Transition)) {
	h.mu.Lock()
	if h.running || len(h.queue) == 0 {
		h.mu.Unlock()
		return
	}
	h.running = true
	h.mu.Unlock()
	delivered := false
	defer func() {
		if !delivered { // fn panicked: let the next transition restart delivery
			h.mu.Lock()
			h.running = false
			h.mu.Unlock()
		}
	}()
	for {
		h.mu.Lock()
		if len(h.queue) == 0 {
			h.queue = h.queue[:0]
			h.running = false
			h.mu.Unlock()
			delivered = true
			return
		}
		t := h.queue[0]
		h.queue[0] = Transition{}
		h.queue = h.queue[1:]
		h.mu.Unlock()
		fn(t)
	}
}
