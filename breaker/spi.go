package breaker

import (
	"context"

	"github.com/ragd/ragd/spi"
)

// Guarded is implemented by every wrapper in this package, so a caller
// holding an spi interface can reach the breaker, for example to skip a
// source whose breaker is open without starting any work:
//
//	if g, ok := backend.(breaker.Guarded); ok && g.Breaker().State() == breaker.Open {
//		// skip the source
//	}
type Guarded interface {
	Breaker() *Breaker
}

// Interface guards.
var (
	_ spi.VectorRetrievalBackend  = (*vectorGuard)(nil)
	_ spi.KeywordRetrievalBackend = (*keywordGuard)(nil)
	_ spi.GraphRetrievalBackend   = (*graphGuard)(nil)
	_ spi.Embedder                = (*embedderGuard)(nil)
	_ Guarded                     = (*vectorGuard)(nil)
	_ Guarded                     = (*keywordGuard)(nil)
	_ Guarded                     = (*graphGuard)(nil)
	_ Guarded                     = (*embedderGuard)(nil)
)

// guardHealth is the Health of a guarded backend: StatusDown with detail
// "circuit open" while open, without asking the backend; while half-open the
// backend's own report, but no better than StatusDegraded; otherwise the
// backend's own report.
func guardHealth(ctx context.Context, b *Breaker, inner spi.HealthChecker) spi.Health {
	switch b.State() {
	case Open:
		return spi.Health{Status: spi.StatusDown, Detail: "circuit open"}
	case HalfOpen:
		h := inner.Health(ctx)
		if h.Status == spi.StatusUp || h.Status == "" {
			h.Status = spi.StatusDegraded
			h.Detail = "circuit half-open"
		}
		return h
	default:
		return inner.Health(ctx)
	}
}

// vectorGuard routes a vector backend's Retrieve through a breaker. Hydrate
// passes straight through; Health reflects the breaker (see Vector).
type vectorGuard struct {
	inner spi.VectorRetrievalBackend
	b     *Breaker
}

// Vector wraps backend so that Retrieve runs through b. Errors wrapping
// spi.ErrInvalidQuery never count as failures; rejections are *OpenError,
// which also match spi.ErrUnavailable. Hydrate is not guarded. Health
// reports StatusDown ("circuit open") while b is open and at best
// StatusDegraded while half-open. Optional interfaces of backend (such as
// spi.Indexer) are reached through Unwrap: the returned value implements
// Guarded and Unwrap() spi.VectorRetrievalBackend.
func Vector(backend spi.VectorRetrievalBackend, b *Breaker) spi.VectorRetrievalBackend {
	return &vectorGuard{inner: backend, b: b}
}

// Retrieve runs the backend's Retrieve through the breaker.
func (g *vectorGuard) Retrieve(ctx context.Context, req spi.VectorRequest) (refs []spi.Ref, err error) {
	err = g.b.call(ctx, func(ctx context.Context) error {
		refs, err = g.inner.Retrieve(ctx, req)
		return err
	}, true)
	return refs, err
}

// Hydrate calls the backend directly.
func (g *vectorGuard) Hydrate(ctx context.Context, ids []string) ([]spi.Document, []string, error) {
	return g.inner.Hydrate(ctx, ids)
}

// Health reports the breaker's view first, then the backend's.
func (g *vectorGuard) Health(ctx context.Context) spi.Health { return guardHealth(ctx, g.b, g.inner) }

// Breaker returns the guarding breaker.
func (g *vectorGuard) Breaker() *Breaker { return g.b }

// Unwrap returns the guarded backend.
func (g *vectorGuard) Unwrap() spi.VectorRetrievalBackend { return g.inner }

// keywordGuard routes a keyword backend's Retrieve through a breaker.
type keywordGuard struct {
	inner spi.KeywordRetrievalBackend
	b     *Breaker
}

// Keyword wraps backend so that Retrieve runs through b, with the same rules
// as Vector. The returned value implements Guarded and
// Unwrap() spi.KeywordRetrievalBackend.
func Keyword(backend spi.KeywordRetrievalBackend, b *Breaker) spi.KeywordRetrievalBackend {
	return &keywordGuard{inner: backend, b: b}
}

// Retrieve runs the backend's Retrieve through the breaker.
func (g *keywordGuard) Retrieve(ctx context.Context, req spi.KeywordRequest) (refs []spi.Ref, err error) {
	err = g.b.call(ctx, func(ctx context.Context) error {
		refs, err = g.inner.Retrieve(ctx, req)
		return err
	}, true)
	return refs, err
}

// Hydrate calls the backend directly.
func (g *keywordGuard) Hydrate(ctx context.Context, ids []string) ([]spi.Document, []string, error) {
	return g.inner.Hydrate(ctx, ids)
}

// Health reports the breaker's view first, then the backend's.
func (g *keywordGuard) Health(ctx context.Context) spi.Health { return guardHealth(ctx, g.b, g.inner) }

// Breaker returns the guarding breaker.
func (g *keywordGuard) Breaker() *Breaker { return g.b }

// Unwrap returns the guarded backend.
func (g *keywordGuard) Unwrap() spi.KeywordRetrievalBackend { return g.inner }

// graphGuard routes a graph backend's Expand and MatchEntities through a
// breaker.
type graphGuard struct {
	inner spi.GraphRetrievalBackend
	b     *Breaker
}

// Graph wraps backend so that Expand and MatchEntities run through b, with
// the same rules as Vector. Query and Hydrate pass straight through. The
// returned value implements Guarded and Unwrap() spi.GraphRetrievalBackend.
func Graph(backend spi.GraphRetrievalBackend, b *Breaker) spi.GraphRetrievalBackend {
	return &graphGuard{inner: backend, b: b}
}

// Expand runs the backend's Expand through the breaker.
func (g *graphGuard) Expand(ctx context.Context, seeds []string, opts spi.ExpandOptions) (refs []spi.Ref, err error) {
	err = g.b.call(ctx, func(ctx context.Context) error {
		refs, err = g.inner.Expand(ctx, seeds, opts)
		return err
	}, true)
	return refs, err
}

// MatchEntities runs the backend's MatchEntities through the breaker.
func (g *graphGuard) MatchEntities(ctx context.Context, req spi.KeywordRequest) (refs []spi.Ref, err error) {
	err = g.b.call(ctx, func(ctx context.Context) error {
		refs, err = g.inner.MatchEntities(ctx, req)
		return err
	}, true)
	return refs, err
}

// Query calls the backend directly.
func (g *graphGuard) Query(ctx context.Context, query string, params map[string]any) ([]map[string]any, error) {
	return g.inner.Query(ctx, query, params)
}

// Hydrate calls the backend directly.
func (g *graphGuard) Hydrate(ctx context.Context, ids []string) ([]spi.Document, []string, error) {
	return g.inner.Hydrate(ctx, ids)
}

// Health reports the breaker's view first, then the backend's.
func (g *graphGuard) Health(ctx context.Context) spi.Health { return guardHealth(ctx, g.b, g.inner) }

// Breaker returns the guarding breaker.
func (g *graphGuard) Breaker() *Breaker { return g.b }

// Unwrap returns the guarded backend.
func (g *graphGuard) Unwrap() spi.GraphRetrievalBackend { return g.inner }

// embedderGuard routes an embedder's Embed through a breaker.
type embedderGuard struct {
	inner spi.Embedder
	b     *Breaker
}

// Embedder wraps e so that Embed runs through b, with the same error rules
// as Vector. Dimension passes straight through. The returned value
// implements Guarded and Unwrap() spi.Embedder. Health is not part of
// spi.Embedder; use the breaker's State.
func Embedder(e spi.Embedder, b *Breaker) spi.Embedder {
	return &embedderGuard{inner: e, b: b}
}

// Embed runs the embedder's Embed through the breaker.
func (g *embedderGuard) Embed(ctx context.Context, texts []string) (vecs [][]float32, err error) {
	err = g.b.call(ctx, func(ctx context.Context) error {
		vecs, err = g.inner.Embed(ctx, texts)
		return err
	}, true)
	return vecs, err
}

// Dimension calls the embedder directly.
func (g *embedderGuard) Dimension() int { return g.inner.Dimension() }

// Breaker returns the guarding breaker.
func (g *embedderGuard) Breaker() *Breaker { return g.b }

// Unwrap returns the guarded embedder.
func (g *embedderGuard) Unwrap() spi.Embedder { return g.inner }
