package spi

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A Gate admits calls to one source: a circuit breaker, a concurrency
// limit, or both (package guard builds them). The retriever asks a source's
// gate before every call and reports how the call went, so it needs to know
// nothing about breakers or limiters.
type Gate interface {
	// Admit asks to call the source now. It returns a Permit, which the
	// caller must Done exactly once, or, admitting nothing, a
	// *RejectedError (matching ErrCircuitOpen or ErrShed), or ctx's error
	// when ctx is already done. Admit never waits and never calls the
	// source.
	Admit(ctx context.Context) (Permit, error)
	// Check reports, admitting nothing, the *RejectedError with which Admit
	// would refuse because the circuit is open, or nil: a cheap pre-check
	// that lets a caller skip a source without starting any work. It says
	// nothing about the concurrency limit.
	Check() error
}

// CircuitStater is an optional capability of a Gate with a circuit
// breaker: its state ("closed", "half_open", "open"), for traces and
// status reports.
type CircuitStater interface {
	CircuitState() string
}

// Permit is one admitted call.
type Permit interface {
	// Done reports how the call went and releases the permit. took is how
	// long the call ran.
	Done(o Outcome, took time.Duration)
}

// Outcome is how a call through a Gate went, as far as its caller can tell.
// The gate decides what each outcome means for its breaker and its limit.
type Outcome uint8

const (
	// OutcomeSuccess: the source answered.
	OutcomeSuccess Outcome = iota
	// OutcomeFailure: the source failed (unavailable, a server error, a
	// panic): evidence that it is unhealthy.
	OutcomeFailure
	// OutcomeTimeout: the call ran out of the source's deadline as the
	// operator configured it (or answered only after it). A deadline the
	// request chose, shorter than that, is OutcomeNeutral: requests must
	// not move what every tenant shares. A gate counts a timeout as a
	// failure unless another call to the source succeeded meanwhile or the
	// same stall was already counted (see package guard): slow because
	// overloaded is not dead.
	OutcomeTimeout
	// OutcomeNeutral: the call ended for reasons that say nothing about the
	// source: the caller gave up, the query budget or a deadline the
	// request chose ran out, the request was invalid, or it held nothing
	// to search (ErrNothingToSearch: the backend was not contacted, so
	// even its empty answer is no sign of life).
	OutcomeNeutral
)

var outcomeNames = [...]string{"success", "failure", "timeout", "neutral"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", o)
}

var (
	// ErrCircuitOpen is matched by a rejection because the source's circuit
	// breaker is open (or half-open with its trials taken).
	ErrCircuitOpen = errors.New("spi: circuit open")
	// ErrShed is matched by a rejection because the source is at its
	// concurrency limit: the call was not made, and the source is not
	// thought unhealthy.
	ErrShed = errors.New("spi: source at its concurrency limit")
	// ErrOverloaded is matched by an error of a source that refused the
	// call for load and kept refusing it through its own retries (an HTTP
	// 429 after the retries and the Retry-After waits). Like a shed call,
	// it says the source is busy, not sick: gates count it as neither
	// success nor failure. Errors wrapping it also wrap ErrUnavailable.
	ErrOverloaded = errors.New("spi: source overloaded")
)

// RejectedError is a Gate's refusal. It matches its Reason (ErrCircuitOpen
// or ErrShed) and ErrUnavailable with errors.Is. A gate may hand the same
// value to many callers: treat it as read-only.
type RejectedError struct {
	// Gate is the gate's name (the source, or "embedder").
	Gate string
	// Reason is ErrCircuitOpen or ErrShed.
	Reason error
	// RetryAfter is how long until the gate expects to admit calls again;
	// 0 when unknown.
	RetryAfter time.Duration
}

func (e *RejectedError) Error() string {
	msg := e.Gate + ": " + e.Reason.Error()
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry in %v)", e.RetryAfter)
	}
	return msg
}

// Unwrap returns the reason and ErrUnavailable.
func (e *RejectedError) Unwrap() []error { return []error{e.Reason, ErrUnavailable} }

// OutcomeOf classifies the result of a call made for a caller whose
// context is ctx (not a per-call context derived inside the call):
// success; neutral for an invalid request, an unsupported or refused call,
// a source overloaded (ErrOverloaded), a request with nothing to search
// (the backend was not contacted, so it is no evidence of its health), a
// backend being built (ErrNotReady), or once the caller's ctx is done (it
// gave up, or its budget ran out);
// timeout when the call's own deadline passed while the caller still
// waited; failure otherwise.
func OutcomeOf(ctx context.Context, err error) Outcome {
	switch {
	case err == nil:
		return OutcomeSuccess
	case errors.Is(err, ErrInvalidQuery), errors.Is(err, ErrNotFound), errors.Is(err, ErrUnsupported),
		errors.Is(err, ErrNothingToSearch), errors.Is(err, ErrNotReady), errors.Is(err, ErrCircuitOpen), errors.Is(err, ErrShed),
		errors.Is(err, ErrOverloaded):
		return OutcomeNeutral
	case ctx.Err() != nil, errors.Is(err, context.Canceled):
		return OutcomeNeutral
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	default:
		return OutcomeFailure
	}
}
