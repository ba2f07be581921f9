package ingest

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Spans of a write, children of the span in the caller's context: the
// embedding of documents without vectors and the record store's commit.
// Each derived store's apply of a batch of log entries is a span of its own
// (a root: one apply serves many writes). Attributes are store names and
// counts, never ids, text or vectors.
const (
	spanEmbed  = "ingest.embed"
	spanRecord = "ingest.record"
	spanApply  = "ingest.apply"
)

// newTracer returns nil without a provider: storeSpan then makes no spans.
func newTracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer("github.com/ragd/ragd/ingest")
}

func noEnd(int) {}

// storeSpan starts the span of one store's part of a write of n documents;
// the returned func ends it with the number that failed there.
func (p *Pipeline) storeSpan(ctx context.Context, name, store string, n int) (context.Context, func(failed int)) {
	if p.tracer == nil {
		return ctx, noEnd
	}
	ctx, span := p.tracer.Start(ctx, name, trace.WithAttributes(
		attribute.String("ragd.store", store),
		attribute.Int("ragd.store.documents", n)))
	return ctx, func(failed int) {
		span.SetAttributes(attribute.Int("ragd.store.failed", failed))
		if failed > 0 {
			span.SetStatus(codes.Error, "documents failed")
		}
		span.End()
	}
}
