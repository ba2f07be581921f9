package retriever

import (
	"errors"
	"time"

	"github.com/ragd/ragd/breaker"
)

// openBreaker reports whether x sits behind an open circuit breaker (it
// implements breaker.Guarded) and, if so, how long until the breaker admits a
// trial call. A breaker whose cooldown has passed reports half-open, so the
// source is called and the call is the breaker's trial.
func openBreaker(x any) (retryIn time.Duration, open bool) {
	g, ok := x.(breaker.Guarded)
	if !ok {
		return 0, false
	}
	b := g.Breaker()
	if b == nil {
		return 0, false
	}
	s := b.Snapshot()
	return s.RetryIn, s.State == breaker.Open
}

// openErr reports whether err is a breaker's fast rejection (the breaker
// opened, or its trial slots filled, between the check and the call), and
// the breaker's retry-after when it says.
func openErr(err error) (retryIn time.Duration, open bool) {
	if !errors.Is(err, breaker.ErrOpen) {
		return 0, false
	}
	var oe *breaker.OpenError
	if errors.As(err, &oe) {
		retryIn = oe.RetryAfter
	}
	return retryIn, true
}
