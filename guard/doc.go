// Package guard puts ragd's sources behind load-aware guards: a Guard
// combines a circuit breaker (package breaker, through a Circuit) with an
// adaptive concurrency limit, implements spi.Gate for the retriever, and
// decides what each call's outcome means for both.
//
// # Shed, open, failed
//
// A call is admitted only if the source's circuit is closed and the source
// has a free slot under its concurrency limit. A full source refuses at once
// with spi.ErrShed: the call is not made and nothing counts against the
// breaker, since the source is busy, not sick. An open circuit refuses with
// spi.ErrCircuitOpen.
//
// The limit is adaptive (NewAdaptive: it follows the source's latency), or,
// for a source that queues its calls and serves them at a rate it measures
// (the built-in model, which batches queued queries), a wait limit
// (NewWaitLimit): a call is admitted while its expected wait, the calls in
// flight times the measured service time, fits its deadline.
//
// # Slow is not dead
//
// What a finished call means for the breaker:
//
//   - success: a success (it resets the consecutive-failure count);
//   - failure (connection refused, a server error, a panic): a failure;
//   - timeout of the source's deadline (the caller reports
//     spi.OutcomeTimeout only for the deadline the operator configured,
//     never for a shorter one a request chose): a failure, unless
//     (busy) another call to the same backend succeeded while this one
//     ran: the backend is alive and answering, and this call waited behind
//     others, which is the limit's business, not the breaker's; or
//     (same stall) the call began before the last counted timeout ended:
//     the calls one pause cuts off together (a GC pause, a starved CPU)
//     overlap and count once, not once per call. Every timeout still
//     feeds the limiter as a slow sample, which lowers the limit;
//   - neutral (the caller gave up, the query's own budget or a deadline
//     the request chose ran out, the request was invalid, or the backend
//     was never contacted because the request held nothing to search,
//     spi.ErrNothingToSearch): nothing. In particular an answer that never
//     reached the backend is not the success that resets the failure
//     count or makes a concurrent timeout busy: otherwise queries such as
//     "!!!", which the graph stores answer without asking Neo4j, would
//     keep a hung Neo4j's breaker closed.
//
// Being at the limit, or calls being shed, says nothing either way: a hung
// backend fills every slot and sheds the rest, and it must still trip. Its
// calls find no success beside them, so each stall counts once: it trips
// after FailureThreshold deadlines in a row, whatever the traffic. The
// price: a backend that hangs for some calls while answering others (one
// bad replica of several) is not tripped by those timeouts; the limit
// still narrows, and its errors still count.
//
// The evidence (the last success, the last counted timeout) lives on the
// Circuit, so the guards that share a backend's breaker (the graph source
// and its expansion) judge their timeouts together.
//
// # Recovery off the user's path
//
// With a probe configured, a Circuit never lets a user query be a half-open
// trial: while not closed, every user call is refused at once, and a
// background loop (Circuit.Run) makes the trials with a representative probe
// call under a warm-up deadline (longer than any per-query timeout). A probe
// that answers, but slower than the warm target, found a cold server: the
// loop probes again to warm it before the trial counts as a success, so a
// restarted Neo4j is not handed user traffic while its caches are cold. The
// loop also probes once a poll interval while the cooldown runs (outcomes
// ignored), so a server that came back mid-cooldown is warm by the trial; one
// still slower than the target once the warm-up deadline is spent fails
// the trial (it answers, but not within what a query may wait).
package guard
