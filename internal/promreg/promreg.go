// Package promreg holds the one Prometheus registration helper ragd's
// packages share.
package promreg

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c on reg, or returns the identical collector already
// registered there, so several components built on one registry (two API
// servers in a test, several retrievers) share their metrics instead of
// failing.
func Register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(T); ok {
				return existing, nil
			}
		}
		var zero T
		return zero, fmt.Errorf("register metric: %w", err)
	}
	return c, nil
}
