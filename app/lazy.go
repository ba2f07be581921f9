package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ragd/ragd/spi"
)

// ReconnectInterval is the least time between two attempts to open a
// server backend that was unreachable.
const ReconnectInterval = 2 * time.Second

// lazy opens a server backend on first use instead of at start, so that
// ragd starts — and answers from its other sources — while PostgreSQL or
// Neo4j is down. Until the open succeeds, every call fails fast with
// spi.ErrUnavailable (which the backend's breaker counts); a new attempt is
// made at most every ReconnectInterval, by whichever call comes first.
// Errors other than spi.ErrUnavailable (a wrong password, a dimension
// mismatch) are configuration errors: they fail start-up, and later
// attempts keep returning them.
//
// An attempt is not bound to the call that triggered it: it runs with that
// call's values but not its cancellation (the open function bounds itself
// with its connect timeout), so a caller that goes away stops waiting
// without aborting the attempt, and no other caller ever sees that
// caller's cancellation as the backend's error.
type lazy[T any] struct {
	name      string
	open      func(ctx context.Context) (T, error)
	onConnect func(b T) // optional, called once, must not block
	logger    *slog.Logger
	now       func() time.Time

	mu       sync.Mutex
	b        T
	ok       bool
	opening  bool
	closed   bool
	lastTry  time.Time
	lastErr  error
	attempts sync.WaitGroup
}

// start tries once. It returns nil when the backend opened or was merely
// unreachable, and the error when it is misconfigured.
func (l *lazy[T]) start(ctx context.Context) error {
	_, err := l.get(ctx)
	if err != nil && errors.Is(err, spi.ErrUnavailable) {
		l.logger.Warn("app: backend unreachable at start; serving without it and reconnecting",
			slog.String("backend", l.name), slog.String("error", err.Error()))
		return nil
	}
	return err
}

func (l *lazy[T]) get(ctx context.Context) (T, error) {
	var zero T
	l.mu.Lock()
	if l.ok {
		b := l.b
		l.mu.Unlock()
		return b, nil
	}
	// One caller at a time tries to connect; the others fail fast instead
	// of queueing behind its connect timeout.
	if l.closed || l.opening || (!l.lastTry.IsZero() && l.now().Sub(l.lastTry) < ReconnectInterval) {
		err := l.lastErr
		l.mu.Unlock()
		if err == nil {
			err = spi.ErrUnavailable
		}
		return zero, fmt.Errorf("%s: not connected: %w", l.name, err)
	}
	l.opening, l.lastTry = true, l.now()
	l.attempts.Add(1)
	l.mu.Unlock()

	var (
		b    T
		err  error
		done = make(chan struct{})
	)
	go func() {
		defer l.attempts.Done()
		defer close(done)
		b, err = l.open(context.WithoutCancel(ctx))
		l.finish(b, err)
	}()
	select {
	case <-done:
		if err != nil {
			return zero, err
		}
		return b, nil
	case <-ctx.Done():
		return zero, fmt.Errorf("%s: connecting: %w", l.name, context.Cause(ctx))
	}
}

// finish records the outcome of an attempt. A backend that opens after
// close is closed again at once.
func (l *lazy[T]) finish(b T, err error) {
	l.mu.Lock()
	l.opening = false
	if err != nil {
		l.lastErr = err
		l.mu.Unlock()
		return
	}
	if l.closed {
		l.mu.Unlock()
		if c, ok := any(b).(spi.Closer); ok {
			_ = c.Close()
		}
		return
	}
	l.b, l.ok = b, true
	l.mu.Unlock()
	l.logger.Info("app: backend connected", slog.String("backend", l.name))
	if l.onConnect != nil {
		l.onConnect(b)
	}
}

// close waits for an attempt under way and closes the backend if it is
// open; no attempt is made afterwards.
func (l *lazy[T]) close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.attempts.Wait()
	if b, ok := l.current(); ok {
		if c, ok := any(b).(spi.Closer); ok {
			return c.Close()
		}
	}
	return nil
}

// current returns the backend if it is open, without trying to open it.
func (l *lazy[T]) current() (T, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b, l.ok
}

// health reports StatusDown with the open error until connected.
func (l *lazy[T]) health(ctx context.Context, check func(T) spi.Health) spi.Health {
	b, err := l.get(ctx)
	if err != nil {
		return spi.Health{Status: spi.StatusDown, Detail: "not connected"}
	}
	return check(b)
}

// vectorStore is the full capability set of a server vector store.
type vectorStore interface {
	spi.VectorRetrievalBackend
	spi.Indexer
	spi.Scanner
	spi.Closer
}

// lazyVector is a vectorStore opened on first use. Its dimension is the
// configured one, so the retriever and the pipeline can check vectors
// before the server answers.
type lazyVector struct {
	lazy[vectorStore]
	dim int
}

var (
	_ vectorStore     = (*lazyVector)(nil)
	_ spi.Dimensioner = (*lazyVector)(nil)
)

func (v *lazyVector) Dimension() int { return v.dim }

// vectorIndexer is the pgvector store's background work: moving written
// rows into its HNSW index (vector.Backend.RunIndexer).
type vectorIndexer interface{ RunIndexer(ctx context.Context) }

// runIndexer runs the store's indexer once it is connected, until ctx ends.
func (v *lazyVector) runIndexer(ctx context.Context) {
	for {
		if b, err := v.get(ctx); err == nil {
			if ix, ok := b.(vectorIndexer); ok {
				ix.RunIndexer(ctx)
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(ReconnectInterval):
		}
	}
}

func (v *lazyVector) Retrieve(ctx context.Context, req spi.VectorRequest) ([]spi.Ref, error) {
	b, err := v.get(ctx)
	if err != nil {
		return nil, err
	}
	return b.Retrieve(ctx, req)
}

func (v *lazyVector) Hydrate(ctx context.Context, ids []string) ([]spi.Document, []string, error) {
	b, err := v.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	return b.Hydrate(ctx, ids)
}

func (v *lazyVector) Health(ctx context.Context) spi.Health {
	return v.health(ctx, func(b vectorStore) spi.Health { return b.Health(ctx) })
}

func (v *lazyVector) Upsert(ctx context.Context, docs []spi.Document) error {
	b, err := v.get(ctx)
	if err != nil {
		return err
	}
	return b.Upsert(ctx, docs)
}

func (v *lazyVector) Delete(ctx context.Context, ids []string) error {
	b, err := v.get(ctx)
	if err != nil {
		return err
	}
	return b.Delete(ctx, ids)
}

func (v *lazyVector) Scan(ctx context.Context, fn func(spi.Document) error) error {
	b, err := v.get(ctx)
	if err != nil {
		return err
	}
	return b.Scan(ctx, fn)
}

// RecordEmbedder passes through to the store once it is connected.
func (v *lazyVector) RecordEmbedder(ctx context.Context, id string) error {
	b, err := v.get(ctx)
	if err != nil {
		return err
	}
	r, ok := b.(embedderRecorder)
	if !ok {
		return fmt.Errorf("%s: %w: records no embedder identity", v.name, spi.ErrUnsupported)
	}
	return r.RecordEmbedder(ctx, id)
}

func (v *lazyVector) Close() error { return v.close() }

// graphStore is the full capability set of a server graph store.
type graphStore interface {
	spi.GraphRetrievalBackend
	spi.Indexer
	spi.Closer
}

// lazyGraph is a graphStore opened on first use.
type lazyGraph struct {
	lazy[graphStore]
}

var _ graphStore = (*lazyGraph)(nil)

func (g *lazyGraph) Expand(ctx context.Context, seeds []string, opts spi.ExpandOptions) ([]spi.Ref, error) {
	b, err := g.get(ctx)
	if err != nil {
		return nil, err
	}
	return b.Expand(ctx, seeds, opts)
}

func (g *lazyGraph) MatchEntities(ctx context.Context, req spi.KeywordRequest) ([]spi.Ref, error) {
	b, err := g.get(ctx)
	if err != nil {
		return nil, err
	}
	return b.MatchEntities(ctx, req)
}

func (g *lazyGraph) Query(ctx context.Context, q string, params map[string]any) ([]map[string]any, error) {
	b, err := g.get(ctx)
	if err != nil {
		return nil, err
	}
	return b.Query(ctx, q, params)
}

func (g *lazyGraph) Hydrate(ctx context.Context, ids []string) ([]spi.Document, []string, error) {
	b, err := g.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	return b.Hydrate(ctx, ids)
}

func (g *lazyGraph) Health(ctx context.Context) spi.Health {
	return g.health(ctx, func(b graphStore) spi.Health { return b.Health(ctx) })
}

func (g *lazyGraph) Upsert(ctx context.Context, docs []spi.Document) error {
	b, err := g.get(ctx)
	if err != nil {
		return err
	}
	return b.Upsert(ctx, docs)
}

func (g *lazyGraph) Delete(ctx context.Context, ids []string) error {
	b, err := g.get(ctx)
	if err != nil {
		return err
	}
	return b.Delete(ctx, ids)
}

func (g *lazyGraph) Close() error { return g.close() }
