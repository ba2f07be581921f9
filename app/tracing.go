package app

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ragd/ragd/internal/tracing"
)

// tracingShutdown bounds the flush of the last spans at Close.
const tracingShutdown = 5 * time.Second

// wireTracing sets the tracer provider the API, the retriever and the
// pipeline make spans with: tp when given, else, with tracing on, the one
// rag.yaml's tracing section describes, which Close flushes and stops after
// the stores; with tracing off, none.
func (a *App) wireTracing(ctx context.Context, tp trace.TracerProvider) error {
	if tp != nil || !a.Config.Tracing.Enabled {
		a.tracer = tp
		return nil
	}
	p, err := tracing.New(ctx, a.Config.Tracing, a.version, a.Logger)
	if err != nil {
		return fmt.Errorf("app: %w", err)
	}
	a.tracer = p
	a.closers = append(a.closers, closeFunc(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), tracingShutdown)
		defer cancel()
		return p.Shutdown(ctx)
	}))
	return nil
}

// closeFunc adapts a function to io.Closer.
type closeFunc func() error

func (f closeFunc) Close() error { return f() }
