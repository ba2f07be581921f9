// Package breaker is a generic circuit breaker. It knows nothing of ragd's
// backends: package guard puts it (with a concurrency limit) in front of
// them and decides which errors count.
//
// A Breaker starts Closed and passes calls through. FailureThreshold
// consecutive failures (or, when Config.FailureRate is set, too high a
// failure rate over a rolling window) trip it Open: calls then fail fast with
// an *OpenError, without running, until ResetTimeout has passed. The breaker
// is then HalfOpen: it admits at most HalfOpenMaxCalls trial calls at a time;
// SuccessThreshold trial successes close it, any trial failure re-opens it and
// restarts the cooldown (optionally growing it exponentially, see
// Config.Backoff).
//
// # Outcomes
//
// Every call ends as a success, a failure or a neutral outcome. A neutral
// outcome neither resets nor adds to the failure count, but still releases a
// half-open trial slot.
//
//   - fn returned nil: success.
//   - fn panicked: failure; the panic is recorded and then re-raised.
//   - fn returned an error while the caller's ctx was already done, and the
//     error is context.Canceled, context.DeadlineExceeded or
//     context.Cause(ctx): neutral. The caller gave up; that says nothing
//     about the backend. A deadline the backend (or fn) imposes on itself
//     while the caller's ctx is still live is a failure. So to have a
//     per-call timeout count against the backend, derive the timeout context
//     inside fn, not around Call, or, when the deadline must be set around
//     Call, give it a cause matching ErrCallTimeout: a call that ends
//     because that deadline passed is a failure.
//   - Config.ShouldCount(err) returned false: neutral.
//   - any other non-nil error: failure.
//
// ShouldCount is nil by default, so every other error counts. To exempt
// errors that say nothing about the backend's health, such as a malformed
// request, set it with IgnoreErrors:
//
//	cfg.ShouldCount = breaker.IgnoreErrors(ErrBadRequest)
//
// Admit, the two-step form that returns a Ticket, leaves classification to
// the caller entirely: it reports Success, Failure or Neutral itself.
//
// # Generations
//
// Each state change starts a new generation. A call's result is applied only
// to the generation that admitted it: a slow call admitted while closed that
// fails after the breaker went half-open neither counts against the trials
// nor frees or takes a trial slot.
//
// # Time
//
// All time is read through Config.Now. State and Snapshot are lazy with
// respect to time: once the cooldown has passed they report HalfOpen, and
// the breaker makes (and reports through OnStateChange) the open → half-open
// transition when the next call arrives.
//
// # Performance
//
// The closed path is lock-free: the state, the generation and the
// consecutive-failure count share one atomic word. A successful call while
// closed costs one atomic load before and one after fn, takes no lock, does
// not read the clock (unless the failure-rate rule is on) and allocates
// nothing. Rejections while open read the clock once and return a shared,
// immutable *OpenError. See docs/breaker.md for measurements.
package breaker
