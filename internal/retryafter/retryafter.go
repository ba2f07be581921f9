// Package retryafter reads an HTTP Retry-After header (RFC 9110, section
// 10.2.3): the one reading for every client in ragd that honours it.
package retryafter

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Parse returns the wait v asks for: delay-seconds (a fraction is
// accepted, as some servers send one) or an HTTP date, taken from now.
// It is zero when v is absent, malformed, not positive, in the past, or
// more than a million seconds (nonsense rather than a wait); callers cap
// what they are willing to wait.
func Parse(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 || math.IsNaN(s) || s > 1e6 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
