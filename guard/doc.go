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
// # Slow is not dead
//
// What a finished call means for the breaker:
//
//   - success: a success (it resets the consecutive-failure count);
//   - failure (connection refused, a server error, a panic): a failure;
//   - timeout of the call's own per-source deadline: a failure only when the
//     source was unsaturated. A call is saturated when it took the last free
//     slot under the limit, when another call was shed while it ran, or when
//     another call to the source succeeded while it ran (the source is
//     alive and answering; this call waited in its queue). Its timeout then
//     says the source is overloaded, which the limit handles, not that it is
//     dead: it is neutral for the breaker and still feeds the limiter as a
//     slow sample, which lowers the limit. Unsaturated timeouts count once
//     per stall: a timeout counts only if its call began after the last
//     counted timeout ended, so the calls one pause cuts off together are one
//     failure, not one per call;
//   - neutral (the caller gave up, the query's own budget ran out, the
//     request was invalid): nothing.
//
// A dead or hung source answers nothing, so its timeouts find no success
// and no shed call beside them (its limit is well above the traffic it sees
// when it hangs) and it still trips. The price: a source that hangs for
// some calls while answering others (one bad replica of several) is not
// tripped by those timeouts; the limit still narrows, and its errors still
// count.
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
