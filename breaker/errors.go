package breaker

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrOpen is matched (errors.Is) by every rejection: the breaker is open,
	// or half-open with all trial slots taken.
	ErrOpen = errors.New("breaker: circuit open")

	// ErrUnknownBreaker is matched by Registry errors for names that were
	// never minted.
	ErrUnknownBreaker = errors.New("breaker: unknown breaker")

	// ErrCallTimeout marks a per-call deadline set around a protected call
	// (or a guarded backend) that should count against the backend. A
	// caller that bounds each call with
	// context.WithTimeoutCause(ctx, d, cause), where errors.Is(cause,
	// ErrCallTimeout), has a call that fails because that deadline passed
	// counted as a failure, not as the caller giving up. Any other
	// cancellation or deadline of the caller's ctx stays neutral.
	ErrCallTimeout = errors.New("breaker: call deadline exceeded")

	// errPanicked is the recorded cause when a protected call panicked.
	errPanicked = errors.New("breaker: protected call panicked")
)

// OpenError is the rejection a breaker returns instead of running a call;
// errors.Is(err, ErrOpen) holds.
//
// Rejections are hot, so a breaker hands the same *OpenError to every caller
// rejected within the same millisecond of RetryAfter: treat it as read-only.
type OpenError struct {
	// Name is the breaker's name.
	Name string
	// RetryAfter is how long until trials will be admitted, rounded up to
	// the millisecond; 0 when the breaker is half-open with every trial
	// slot taken.
	RetryAfter time.Duration
	// Cause is the failure that tripped the breaker (the last one counted),
	// nil when it was forced open.
	Cause error
}

func (e *OpenError) Error() string {
	msg := "breaker: circuit open: " + e.Name
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry in %v)", e.RetryAfter)
	} else {
		msg += " (trials in progress)"
	}
	if e.Cause != nil {
		msg += ": tripped by: " + e.Cause.Error()
	}
	return msg
}

// Unwrap returns ErrOpen.
func (e *OpenError) Unwrap() error { return ErrOpen }
