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
// budget; it wraps context.DeadlineExceeded. caller marks a deadline the
// request chose, shorter than the operator's for the same thing
// (sources.NAME.timeout_ms, budget_ms): running out of it says nothing
// about the source (see classify).
type deadlineError struct {
	budget bool
	caller bool
	after  time.Duration
}

func (e *deadlineError) Error() string {
	switch {
	case e.budget && e.caller:
		return fmt.Sprintf("the query's own budget of %dms exhausted", e.after.Milliseconds())
	case e.budget:
		return fmt.Sprintf("query budget of %dms exhausted", e.after.Milliseconds())
	case e.caller:
		return fmt.Sprintf("the query's own deadline of %dms exceeded", e.after.Milliseconds())
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
// deadline is a timeout when that deadline is the operator's (see
// classify).
func call[T any](r *HybridRetriever, ctx context.Context, g spi.Gate, dl deadline, fn func(context.Context) (T, error)) (T, attempt) {
	var zero T
	var p spi.Permit
	if g != nil {
		var err error
		if p, err = g.Admit(ctx); err != nil {
			if errors.As(err, new(*spi.RejectedError)) {
				return zero, rejected(err)
			}
			return zero, ended(ctx) // Admit returns ctx's error once it is done
		}
	}
	start := r.now()
	sctx, cancel := context.WithTimeoutCause(ctx, dl.timeout, dl.cause(false))
	defer cancel()
	v, err := protect(sctx, fn)
	a, o := classify(ctx, sctx, err, r.now().Sub(start), dl)
	if p != nil {
		p.Done(o, a.took)
	}
	return v, a
}

// classify is the one place that says what the end of a call means: the
// status and operator-safe message the answer shows for the source,
// whether the answer is degraded by it (unhealthy), and the outcome the
// source's gate hears. ctx is the query's budget context, sctx the call's
// own (ctx under the call's deadline dl), took how long the call ran.
//
// The gate is shared by every tenant, so the source is judged by the
// operator's deadlines, never by one the request chose: running out of a
// shorter deadline the request chose (its timeout_ms, its budget_ms) is
// neutral, and so is the status it shows (caller_deadline: not a timeout
// of the source, not degraded); an answer after the operator's deadline,
// when the request chose a longer one, is a timeout for the gate (the
// source missed the deadline every other query has). A backend that had
// nothing to search (spi.ErrNothingToSearch) was not contacted: skipped,
// and neutral, since its empty answer proves nothing about it. A backend
// being built (spi.ErrNotReady) is an error of the answer, and neutral; so
// is a dormant one this call may not wake (spi.ErrDormant), which is not
// unhealthy either.
//
// The message is drawn from a fixed vocabulary so backend error strings,
// which might quote the query, never reach a response.
func classify(ctx, sctx context.Context, err error, took time.Duration, dl deadline) (attempt, spi.Outcome) {
	a := attempt{status: StatusOK, err: err, took: took}
	var pe *panicError
	switch {
	case err == nil:
		if dl.timeout > dl.judged && took > dl.judged {
			return a, spi.OutcomeTimeout
		}
		return a, spi.OutcomeSuccess
	case errors.As(err, &pe):
		return a.is(StatusError, "panic", true), spi.OutcomeFailure
	case errors.Is(err, spi.ErrNothingToSearch):
		return a.is(StatusSkipped, ReasonNothingToSearch, false), spi.OutcomeNeutral
	case errors.Is(err, spi.ErrShed):
		return a.is(StatusShed, "at its concurrency limit", false), spi.OutcomeNeutral
	case errors.Is(err, spi.ErrOverloaded):
		// The source refused for load through its own retries (HTTP 429):
		// busy, not sick.
		return a.is(StatusShed, "overloaded (rate limited)", false), spi.OutcomeNeutral
	case errors.Is(err, spi.ErrCircuitOpen):
		return a.is(StatusCircuitOpen, "circuit open", true), spi.OutcomeNeutral
	case sctx.Err() != nil && errors.Is(context.Cause(sctx), context.DeadlineExceeded):
		cause := context.Cause(sctx)
		var de *deadlineError
		switch {
		case !errors.As(cause, &de):
			// A deadline above the query's (the HTTP request's): the
			// caller's context ended, not the source's deadline.
			return a.is(StatusTimeout, cause.Error(), true), spi.OutcomeNeutral
		case de.caller:
			return a.is(StatusCallerDeadline, cause.Error(), false), spi.OutcomeNeutral
		case de.budget:
			// The operator's query budget: the answer is late, but the
			// budget is the query's, not this source's deadline.
			return a.is(StatusTimeout, cause.Error(), true), spi.OutcomeNeutral
		default:
			return a.is(StatusTimeout, cause.Error(), true), spi.OutcomeTimeout
		}
	case errors.Is(err, context.DeadlineExceeded):
		return a.is(StatusTimeout, "backend deadline exceeded", true), spi.OutcomeOf(ctx, err)
	case errors.Is(err, context.Canceled):
		return a.is(StatusError, ReasonCanceled, false), spi.OutcomeNeutral
	case errors.Is(err, spi.ErrInvalidQuery):
		return a.is(StatusError, ReasonInvalidQuery, false), spi.OutcomeNeutral
	case errors.Is(err, spi.ErrDormant):
		// Not built, by the operator's configuration: not unhealthy.
		return a.is(StatusError, ReasonDormant, false), spi.OutcomeOf(ctx, err)
	case errors.Is(err, spi.ErrNotReady):
		return a.is(StatusError, "not ready: being built", true), spi.OutcomeOf(ctx, err)
	case errors.Is(err, spi.ErrUnavailable):
		return a.is(StatusError, "backend unavailable", true), spi.OutcomeOf(ctx, err)
	default:
		return a.is(StatusError, "backend error", true), spi.OutcomeOf(ctx, err)
	}
}

// is sets the attempt's status, message and health and returns it.
func (a *attempt) is(st Status, msg string, unhealthy bool) attempt {
	a.status, a.msg, a.unhealthy = st, msg, unhealthy
	return *a
}

// rejected is the attempt of a call its gate refused (err is a
// *spi.RejectedError).
func rejected(err error) attempt {
	a, _ := classify(context.Background(), context.Background(), err, 0, deadline{})
	var re *spi.RejectedError
	if errors.As(err, &re) && a.status == StatusCircuitOpen {
		a.retryIn = re.RetryAfter
	}
	return a
}

// ended is the attempt of a call not made because the query's context had
// already ended: its budget ran out (the operator's or the request's own,
// see classify) or the caller left.
func ended(ctx context.Context) attempt {
	a, _ := classify(ctx, ctx, ctx.Err(), 0, deadline{})
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
