package app

import (
	"context"

	"github.com/ragd/ragd/spi"
)

// embedderHealth reports the embedder's health: degraded, with the reason
// and the fix, while the hashing embedder stands in for a missing model;
// else its own check when it has one, otherwise up (an embedder that is not
// a spi.HealthChecker, like the hashing one, cannot be down). App.Health
// puts it behind the embedder's circuit, like the stores.
type embedderHealth struct {
	e        spi.Embedder
	fallback *Fallback
}

var _ spi.HealthChecker = embedderHealth{}

func (h embedderHealth) Health(ctx context.Context) spi.Health {
	if h.fallback != nil {
		return spi.Health{Status: spi.StatusDegraded, Detail: h.fallback.Detail()}
	}
	if c, ok := h.e.(spi.HealthChecker); ok {
		return c.Health(ctx)
	}
	return spi.Health{Status: spi.StatusUp}
}
