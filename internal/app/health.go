package app

import (
	"context"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/spi"
)

// embedderHealth reports the embedder's health: its own check when it has
// one, else up; and, when a breaker guards it, down while the breaker is
// open and at best degraded while it is half-open (breaker.Vector's rule
// for the stores).
type embedderHealth struct {
	e spi.Embedder
}

var _ spi.HealthChecker = embedderHealth{}

func (h embedderHealth) Health(ctx context.Context) spi.Health {
	inner := h.e
	var b *breaker.Breaker
	if g, ok := h.e.(interface {
		breaker.Guarded
		Unwrap() spi.Embedder
	}); ok {
		b, inner = g.Breaker(), g.Unwrap()
	}
	if b != nil && b.State() == breaker.Open {
		return spi.Health{Status: spi.StatusDown, Detail: "circuit open"}
	}
	hl := spi.Health{Status: spi.StatusUp}
	if c, ok := inner.(spi.HealthChecker); ok {
		hl = c.Health(ctx)
	}
	if b != nil && b.State() == breaker.HalfOpen && hl.Status == spi.StatusUp {
		hl.Status, hl.Detail = spi.StatusDegraded, "circuit half-open"
	}
	return hl
}
