package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracerName identifies the spans this package makes.
const tracerName = "github.com/ragd/ragd/api"

// traceContext reads and writes W3C traceparent and tracestate headers.
var traceContext = propagation.TraceContext{}

// newTracer returns nil without a provider: requests then get no span.
func newTracer(tp trace.TracerProvider) trace.Tracer {
	if isNil(tp) {
		return nil
	}
	return tp.Tracer(tracerName)
}

// traced makes the server span of every request, a child of the W3C trace
// context the caller sent, and hands it to the handler through the
// request's context. The span is named after the route template; it
// carries the method, the route, the status, the error code and the
// request id — never the URL's values, a query or a document. Without a
// tracer it adds nothing.
func (s *Server) traced(next echo.HandlerFunc) echo.HandlerFunc {
	if s.tracer == nil {
		return next
	}
	return func(c echo.Context) error {
		req := c.Request()
		ctx := traceContext.Extract(req.Context(), propagation.HeaderCarrier(req.Header))
		route := s.routeLabel(c)
		ctx, span := s.tracer.Start(ctx, req.Method+" "+route,
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(
				attribute.String("http.request.method", methodLabel(req.Method)),
				attribute.String("http.route", route),
				attribute.String("ragd.request_id", requestID(c)),
			))
		defer span.End()
		c.SetRequest(req.WithContext(ctx))
		err := next(c) // observe, inside, has answered any error already
		status := c.Response().Status
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if code, ok := c.Get(ctxErrorCode).(string); ok {
			span.SetAttributes(attribute.String("ragd.error_code", code))
		}
		if status >= 500 {
			span.SetStatus(codes.Error, strings.ToLower(http.StatusText(status)))
		}
		return err
	}
}
