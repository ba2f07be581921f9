// Package tracing builds ragd's OpenTelemetry tracer provider from the
// tracing section of rag.yaml, when it is on: an SDK provider that samples
// by parent, then by sample_ratio, and exports in batches over OTLP/HTTP.
//
// Spans are made by the packages that do the work (api, retriever, ingest)
// from the provider they are given; none of them uses OpenTelemetry's
// global provider. With tracing off they are given none and make no spans,
// at no cost.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/ragd/ragd/config"
)

// Provider is a tracer provider with its shutdown.
type Provider struct {
	trace.TracerProvider
	shutdown func(context.Context) error
}

// New returns an SDK provider exporting over OTLP/HTTP as cfg says (the
// caller checks cfg.Enabled). It does not contact the collector: exports
// that fail later are retried and then dropped by the exporter, never
// failing a request.
//
// Failed exports are reported to log (nil discards them), at most once per
// errorLogInterval with the count since the last report. The OpenTelemetry
// SDK reports them only through its process-wide error handler, so New
// sets that handler.
func New(ctx context.Context, cfg config.TracingConfig, version string, log *slog.Logger) (*Provider, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	otel.SetErrorHandler(&errorLog{log: log, every: errorLogInterval})
	exp, err := otlptracehttp.New(ctx,
		otlptracehttp.WithEndpointURL(cfg.Endpoint),
		otlptracehttp.WithTimeout(time.Duration(cfg.TimeoutMS)*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	return NewSDK(exp, cfg.SampleRatio, resource.NewSchemaless(
		attribute.String("service.name", cfg.ServiceName),
		attribute.String("service.version", version),
	)), nil
}

// NewSDK returns an SDK provider exporting to exp in batches, sampling by
// parent and, for new traces, by ratio. Tests pass an in-memory exporter.
func NewSDK(exp sdktrace.SpanExporter, ratio float64, res *resource.Resource) *Provider {
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
		sdktrace.WithResource(res),
	)
	return &Provider{TracerProvider: tp, shutdown: tp.Shutdown}
}

// Shutdown flushes the spans not yet exported and stops the exporter,
// within ctx.
func (p *Provider) Shutdown(ctx context.Context) error { return p.shutdown(ctx) }

// errorLogInterval spaces the warnings about failed exports: a collector
// that is down fails several batches a second under load.
const errorLogInterval = time.Minute

// errorLog is the SDK's error handler: it logs the first error and then at
// most one per interval, with how many occurred.
type errorLog struct {
	log   *slog.Logger
	every time.Duration

	mu     sync.Mutex
	last   time.Time
	missed int
}

func (e *errorLog) Handle(err error) {
	e.mu.Lock()
	now := time.Now()
	if !e.last.IsZero() && now.Sub(e.last) < e.every {
		e.missed++
		e.mu.Unlock()
		return
	}
	missed := e.missed
	e.last, e.missed = now, 0
	e.mu.Unlock()
	e.log.Warn("tracing: span export failed", slog.String("error", err.Error()), slog.Int("more_since_last_report", missed))
}
