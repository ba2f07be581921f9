package retriever

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/spi"
)

// attempt is the outcome of one guarded call to a source or hydrator.
type attempt struct {
	status    Status
	msg       string // operator-safe reason, empty when ok
	unhealthy bool   // counts toward Result.Degraded
	err       error  // the raw error, for logs only
	took      time.Duration
	retryIn   time.Duration
}

// deadlineError is the cause of a per-source deadline or of the query
// budget; it wraps context.DeadlineExceeded.
type deadlineError struct {
	budget bool
	after  time.Duration
}

func (e *deadlineError) Error() string {
	if e.budget {
		return fmt.Sprintf("query budget of %dms exhausted", e.after.Milliseconds())
	}
	return fmt.Sprintf("deadline of %dms exceeded", e.after.Milliseconds())
}

func (e *deadlineError) Unwrap() error { return context.DeadlineExceeded }

// Is makes a source's own deadline (not the query budget) match
// breaker.ErrCallTimeout, so the breaker around the source counts a source
// that does not answer in time as failing; the caller's cancellation and
// the exhausted budget stay neutral.
func (e *deadlineError) Is(target error) bool {
	return !e.budget && target == breaker.ErrCallTimeout
}

// panicError is a recovered panic of a source; the stack goes to the log.
type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

// embedError marks a failure of the embedder inside the vector source.
type embedError struct{ err error }

func (e *embedError) Error() string { return "embedder: " + e.err.Error() }
func (e *embedError) Unwrap() error { return e.err }

// call runs fn under its own deadline (inside ctx), recovering a panic into
// an error, and classifies the outcome.
func call[T any](r *HybridRetriever, ctx context.Context, timeout time.Duration, fn func(context.Context) (T, error)) (T, attempt) {
	start := r.now()
	sctx, cancel := context.WithTimeoutCause(ctx, timeout, &deadlineError{after: timeout})
	defer cancel()
	v, err := protect(sctx, fn)
	a := attempt{status: StatusOK, took: r.now().Sub(start)}
	if err != nil {
		a.err = err
		a.status, a.msg, a.unhealthy = classify(sctx, err)
		a.retryIn, _ = openErr(err)
	}
	return v, a
}

func protect[T any](ctx context.Context, fn func(context.Context) (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &panicError{value: p, stack: debug.Stack()}
		}
	}()
	return fn(ctx)
}

// classify maps an error to a status and an operator-safe message. The
// message is drawn from a fixed vocabulary so backend error strings, which
// might quote the query, never reach a response.
func classify(sctx context.Context, err error) (st Status, msg string, unhealthy bool) {
	var pe *panicError
	_, open := openErr(err)
	switch {
	case open:
		st, msg, unhealthy = StatusCircuitOpen, "circuit open", true
	case errors.As(err, &pe):
		st, msg, unhealthy = StatusError, "panic", true
	case sctx.Err() != nil && errors.Is(context.Cause(sctx), context.DeadlineExceeded):
		st, msg, unhealthy = StatusTimeout, context.Cause(sctx).Error(), true
	case errors.Is(err, context.DeadlineExceeded):
		st, msg, unhealthy = StatusTimeout, "backend deadline exceeded", true
	case errors.Is(err, context.Canceled):
		st, msg, unhealthy = StatusError, "canceled", false
	case errors.Is(err, spi.ErrInvalidQuery):
		st, msg, unhealthy = StatusError, ReasonInvalidQuery, false
	case errors.Is(err, spi.ErrUnavailable):
		st, msg, unhealthy = StatusError, "backend unavailable", true
	default:
		st, msg, unhealthy = StatusError, "backend error", true
	}
	var ee *embedError
	if errors.As(err, &ee) {
		msg = "embedder: " + msg
	}
	return st, msg, unhealthy
}

// sourceStatus renders an attempt as a SourceStatus.
func (a attempt) sourceStatus(returned int) SourceStatus {
	return SourceStatus{
		Status:    a.status,
		TookMS:    durMS(a.took),
		Returned:  returned,
		Error:     a.msg,
		RetryInMS: a.retryIn.Milliseconds(),
	}
}

func durMS(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}
