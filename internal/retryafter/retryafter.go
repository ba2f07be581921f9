// Package retryafter reads an HTTP Retry-After header (RFC 9110, section
// 10.2.3): the one reading for every client in ragd that honours it.
package retryafter

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Forever is what Parse returns for a wait longer than a million seconds:
// no caller waits that long, so each gives up as it does for a wait past
// its own bound.
const Forever = time.Duration(math.MaxInt64)

// Parse returns the wait v asks for: delay-seconds (a fraction is
// accepted, as some servers send one) or an HTTP date, taken from now.
// It is zero when v is absent, malformed (NaN and Inf included), not
// positive or in the past: no wait was asked for. A wait of more than a
// million seconds is Forever, not zero: the server asked not to be called
// again soon, and backing off a quarter of a second would do the
// opposite. Callers cap what they are willing to wait.
func Parse(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		switch {
		case math.IsNaN(s) || math.IsInf(s, 0) && err == nil || s <= 0:
			return 0
		case s > 1e6:
			return Forever
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
