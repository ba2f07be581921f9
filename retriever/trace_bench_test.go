package retriever_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/ragd/ragd/retriever"
)

// BenchmarkRetrieveTracing is the hybrid+expand query from 8 goroutines
// with tracing off (the default: no provider) and on (every span recorded
// and handed to a batching exporter that drops it), under the parent span
// the HTTP API makes.
func BenchmarkRetrieveTracing(b *testing.B) {
	q := retriever.Query{Text: "q", Window: 100, Limit: 10}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	for _, bc := range []struct {
		name string
		tp   trace.TracerProvider
	}{{"off", nil}, {"on", sdk}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := benchStack()
			cfg.TracerProvider = bc.tp
			r := mustNew(b, cfg)
			b.ReportAllocs()
			b.SetParallelism(4) // 8 goroutines on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				parent := bc.tp
				if parent == nil {
					parent = noop.NewTracerProvider()
				}
				ctx, span := parent.Tracer("bench").Start(context.Background(), "POST /v1/query")
				defer span.End()
				for pb.Next() {
					if _, err := r.Retrieve(ctx, q); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
