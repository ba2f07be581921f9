package retriever

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/ragd/ragd/spi"
)

// Spans of a query, children of the span in the caller's context: one per
// stage-1 source ("source.vector", "source.keyword", "source.graph"; an
// instant span for a source that was not called; the query's embedding is
// "source.embedder" inside "source.vector"), one for each fusion (a
// second one re-ranks after expansion), one for expansion and one for
// hydration. Attributes are names, statuses, breaker states
// and counts, never the query's text, vector or filter values.
const (
	spanSource    = "source."
	spanFusion    = "retriever.fusion"
	spanExpansion = "retriever.expansion"
	spanHydration = "retriever.hydration"
)

// newTracer returns nil without a provider: the helpers below then make no
// spans and allocate nothing.
func newTracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer("github.com/ragd/ragd/retriever")
}

// noSpan is what the helpers hand out when tracing is off.
var noSpan trace.Span = noop.Span{}

// traceSource starts the span of one stage-1 source call.
func (r *HybridRetriever) traceSource(ctx context.Context, name string) (context.Context, trace.Span) {
	if r.tracer == nil {
		return ctx, noSpan
	}
	return r.tracer.Start(ctx, spanSource+name, trace.WithAttributes(attribute.String("ragd.source", name)))
}

// traceSkipped records a source that was not called (disabled, skipped or
// circuit open) as an instant span.
func (r *HybridRetriever) traceSkipped(ctx context.Context, name string, st SourceStatus) {
	if r.tracer == nil {
		return
	}
	_, span := r.traceSource(ctx, name)
	r.endSource(span, name, st)
}

// endSource ends span with the source's status in this query and the state
// its breaker is in now.
func (r *HybridRetriever) endSource(span trace.Span, name string, st SourceStatus) {
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("ragd.source.status", string(st.Status)),
			attribute.Int("ragd.source.returned", st.Returned),
			attribute.Float64("ragd.source.took_ms", st.TookMS))
		if st.Error != "" { // the fixed, operator-safe vocabulary of classify
			span.SetAttributes(attribute.String("ragd.source.reason", st.Error))
		}
		if st.RetryInMS > 0 {
			span.SetAttributes(attribute.Int64("ragd.breaker.retry_in_ms", st.RetryInMS))
		}
		if c, ok := r.gate(name).(spi.CircuitStater); ok {
			if state := c.CircuitState(); state != "" {
				span.SetAttributes(attribute.String("ragd.breaker.state", state))
			}
		}
		if st.Status == StatusError || st.Status == StatusTimeout {
			span.SetStatus(codes.Error, string(st.Status))
		}
	}
	span.End()
}

// fuse ranks lists with the query's fusion mode inside a fusion span.
func (r *HybridRetriever) fuse(ctx context.Context, lists []RankedList, p *plan, withParts bool) ranking {
	if r.tracer == nil {
		return rankLists(lists, scorer(p.mode, lists, p.rrfK), withParts)
	}
	_, span := r.tracer.Start(ctx, spanFusion)
	defer span.End()
	rk := rankLists(lists, scorer(p.mode, lists, p.rrfK), withParts)
	span.SetAttributes(
		attribute.String("ragd.fusion.mode", p.mode),
		attribute.Int("ragd.fusion.lists", len(lists)),
		attribute.Int("ragd.fusion.candidates", rk.len()))
	return rk
}

// traceStage starts the span of a stage (hydration).
func (r *HybridRetriever) traceStage(ctx context.Context, name string) (context.Context, trace.Span) {
	if r.tracer == nil {
		return ctx, noSpan
	}
	return r.tracer.Start(ctx, name)
}

// traceExpansion starts the span of stage 2, the graph_expand source;
// endSource ends it.
func (r *HybridRetriever) traceExpansion(ctx context.Context) (context.Context, trace.Span) {
	if r.tracer == nil {
		return ctx, noSpan
	}
	return r.tracer.Start(ctx, spanExpansion, trace.WithAttributes(attribute.String("ragd.source", spi.SourceGraphExpand)))
}

// endHydration ends the hydration span with each hydrator's status.
func endHydration(span trace.Span, res *Result) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("ragd.hydration.missing", len(res.Missing)))
		for name, st := range res.Hydration {
			span.SetAttributes(attribute.String("ragd.hydration."+name+".status", string(st.Status)))
		}
	}
	span.End()
}

// traceResult adds the query's outcome to the caller's span.
func traceResult(ctx context.Context, res *Result) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(
		attribute.Int("ragd.query.hits", len(res.Hits)),
		attribute.Int("ragd.query.total", res.Total),
		attribute.Bool("ragd.query.partial", res.Partial),
		attribute.Bool("ragd.query.degraded", res.Degraded))
}
