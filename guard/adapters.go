package guard

import (
	"context"
	"time"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/spi"
)

// Do runs fn through gate g for a caller whose context is ctx: it admits
// (or returns the rejection, which matches spi.ErrUnavailable), runs fn and
// reports spi.OutcomeOf(ctx, err). It is the one generic guard for callers
// that set no deadline of their own, such as the write path's embedder.
func Do[T any](ctx context.Context, g spi.Gate, fn func(context.Context) (T, error)) (T, error) {
	p, err := g.Admit(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	start := time.Now()
	done := false
	defer func() {
		if !done { // fn panicked: a failure, and the panic goes on
			p.Done(spi.OutcomeFailure, time.Since(start))
		}
	}()
	v, err := fn(ctx)
	done = true
	p.Done(spi.OutcomeOf(ctx, err), time.Since(start))
	return v, err
}

// Embedder runs e's Embed through g. An answer that breaks the Embedder
// contract (spi.CheckEmbeddings: a vector per text, of e's dimension,
// finite) is a failure of e, counted by g's breaker, and returned as an
// error wrapping spi.ErrUnavailable. Dimension passes through; Unwrap
// returns e.
func Embedder(e spi.Embedder, g spi.Gate) spi.Embedder { return &embedder{e: e, g: g} }

type embedder struct {
	e spi.Embedder
	g spi.Gate
}

func (w *embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return Do(ctx, w.g, func(ctx context.Context) ([][]float32, error) {
		vecs, err := w.e.Embed(ctx, texts)
		if err != nil {
			return nil, err
		}
		if err := spi.CheckEmbeddings(vecs, len(texts), w.e.Dimension()); err != nil {
			return nil, err
		}
		return vecs, nil
	})
}

func (w *embedder) Dimension() int { return w.e.Dimension() }

// Unwrap returns the guarded embedder.
func (w *embedder) Unwrap() spi.Embedder { return w.e }

// Health reports inner's health as seen through circuit c: StatusDown
// ("circuit open", or "circuit held open by NAME" during a maintenance
// hold) while open, without asking the backend; while half-open
// the backend's own report, at best StatusDegraded; otherwise the backend's
// own report.
func Health(inner spi.HealthChecker, c *Circuit) spi.HealthChecker {
	return health{inner: inner, c: c}
}

type health struct {
	inner spi.HealthChecker
	c     *Circuit
}

func (h health) Health(ctx context.Context) spi.Health {
	s := h.c.Breaker().Snapshot()
	switch s.State {
	case breaker.Open:
		if s.Hold != nil {
			return spi.Health{Status: spi.StatusDown, Detail: "circuit held open by " + s.Hold.By}
		}
		return spi.Health{Status: spi.StatusDown, Detail: "circuit open"}
	case breaker.HalfOpen:
		r := h.inner.Health(ctx)
		if r.Status == spi.StatusUp || r.Status == "" {
			r.Status = spi.StatusDegraded
			r.Detail = "circuit half-open"
		}
		return r
	default:
		return h.inner.Health(ctx)
	}
}
