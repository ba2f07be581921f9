package retriever

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

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

// panicError is a recovered panic of a source; the stack goes to the log.
type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

// call runs fn through gate g (nil: ungated) under its deadline inside
// ctx, recovering a panic into an error, classifies the outcome and reports
// it to the gate. ctx is the query's budget context: a call that ends
// because ctx ended is neutral for the gate, one that ends on its own
// deadline is a timeout when that deadline is the operator's (see outcome).
func call[T any](r *HybridRetriever, ctx context.Context, g spi.Gate, dl deadline, fn func(context.Context) (T, error)) (T, attempt) {
	var zero T
	var p spi.Permit
	if g != nil {
		var err error
		if p, err = g.Admit(ctx); err != nil {
			return zero, rejected(err)
		}
	}
	start := r.now()
	sctx, cancel := context.WithTimeoutCause(ctx, dl.timeout, &deadlineError{after: dl.timeout})
	defer cancel()
	v, err := protect(sctx, fn)
	a := attempt{status: StatusOK, took: r.now().Sub(start)}
	if err != nil {
		a.err = err
		a.status, a.msg, a.unhealthy = classify(sctx, err)
	}
	if p != nil {
		p.Done(outcome(ctx, sctx, err, a.took, dl), a.took)
	}
	return v, a
}

// outcome is what the call means for the source's gate, which is shared by
// every tenant: the source is judged by the operator's deadline, never by
// one the request chose. Running out of a shorter deadline the request
// chose is neutral (it says nothing about the source); an answer after the
// operator's deadline, when the request chose a longer one, is a timeout
// (the source missed the deadline every other query has).
func outcome(ctx, sctx context.Context, err error, took time.Duration, dl deadline) spi.Outcome {
	var pe *panicError
	switch {
	case err == nil:
		if dl.timeout > dl.judged && took > dl.judged {
			return spi.OutcomeTimeout
		}
		return spi.OutcomeSuccess
	case errors.As(err, &pe):
		return spi.OutcomeFailure
	case ctx.Err() == nil && sctx.Err() != nil:
		if dl.timeout < dl.judged {
			return spi.OutcomeNeutral // the request's own, shorter deadline
		}
		return spi.OutcomeTimeout // the source's own deadline, not the budget
	default:
		return spi.OutcomeOf(ctx, err)
	}
}

// rejected is the attempt of a call its gate refused.
func rejected(err error) attempt {
	var re *spi.RejectedError
	if errors.As(err, &re) && errors.Is(re.Reason, spi.ErrShed) {
		return attempt{status: StatusShed, msg: "at its concurrency limit", err: err}
	}
	a := attempt{status: StatusCircuitOpen, msg: "circuit open", unhealthy: true, err: err}
	if re != nil {
		a.retryIn = re.RetryAfter
	}
	if !errors.Is(err, spi.ErrCircuitOpen) { // the caller's ctx was already done
		a.status, a.msg, a.unhealthy = StatusTimeout, "query budget exhausted", false
	}
	return a
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
	switch {
	case errors.As(err, &pe):
		return StatusError, "panic", true
	case errors.Is(err, spi.ErrShed):
		return StatusShed, "at its concurrency limit", false
	case errors.Is(err, spi.ErrOverloaded):
		return StatusShed, "overloaded (rate limited)", false
	case errors.Is(err, spi.ErrCircuitOpen):
		return StatusCircuitOpen, "circuit open", true
	case sctx.Err() != nil && errors.Is(context.Cause(sctx), context.DeadlineExceeded):
		return StatusTimeout, context.Cause(sctx).Error(), true
	case errors.Is(err, context.DeadlineExceeded):
		return StatusTimeout, "backend deadline exceeded", true
	case errors.Is(err, context.Canceled):
		return StatusError, "canceled", false
	case errors.Is(err, spi.ErrInvalidQuery):
		return StatusError, ReasonInvalidQuery, false
	case errors.Is(err, spi.ErrUnavailable):
		return StatusError, "backend unavailable", true
	default:
		return StatusError, "backend error", true
	}
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
