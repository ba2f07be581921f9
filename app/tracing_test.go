package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ragd/ragd/app"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/internal/demo"
	"github.com/ragd/ragd/internal/tracing"
)

// traced is an embedded-stack app whose spans go to an in-memory exporter.
type traced struct {
	app *app.App
	h   http.Handler
	exp *tracetest.InMemoryExporter
}

func newTraced(t *testing.T) *traced {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	a, err := app.New(context.Background(), embeddedConfig(t), app.Options{
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		TracerProvider: tp,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	srv, err := a.API()
	if err != nil {
		t.Fatal(err)
	}
	return &traced{app: a, h: srv.Handler(), exp: exp}
}

// do sends one request with headers (name, value pairs) and returns the
// status.
func (tr *traced) do(t *testing.T, method, path string, body any, headers ...string) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req := httptest.NewRequest(method, path, r)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	tr.h.ServeHTTP(rec, req)
	return rec.Code
}

// take returns the spans exported so far and forgets them.
func (tr *traced) take() tracetest.SpanStubs {
	spans := tr.exp.GetSpans()
	tr.exp.Reset()
	return spans
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

func byName(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func one(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	got := byName(spans, name)
	if len(got) != 1 {
		t.Fatalf("%d spans named %q, want 1; spans: %s", len(got), name, renderTrace(spans))
	}
	return got[0]
}

// leaks reports span attributes that carry any of the secrets.
func leaks(spans tracetest.SpanStubs, secrets ...string) []string {
	var out []string
	for _, s := range spans {
		for _, kv := range s.Attributes {
			for _, sec := range secrets {
				if strings.Contains(strings.ToLower(kv.Value.String()), strings.ToLower(sec)) {
					out = append(out, s.Name+" "+string(kv.Key)+"="+kv.Value.String())
				}
			}
		}
		if strings.Contains(s.Status.Description, secrets[0]) {
			out = append(out, s.Name+" status")
		}
	}
	return out
}

const (
	remoteTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	remoteSpan  = "00f067aa0ba902b7"
)

func TestQueryTrace(t *testing.T) {
	tr := newTraced(t)
	if _, err := tr.app.LoadDemo(context.Background()); err != nil {
		t.Fatal(err)
	}
	tr.take()
	const text = "circuit breaker half-open trial calls"
	st := tr.do(t, http.MethodPost, "/v1/query", map[string]any{"text": text, "limit": 3},
		"traceparent", "00-"+remoteTrace+"-"+remoteSpan+"-01")
	if st != http.StatusOK {
		t.Fatalf("query: %d", st)
	}
	spans := tr.take()
	t.Logf("trace of one query:\n%s", renderTrace(spans))

	// The server span continues the caller's trace.
	root := one(t, spans, "POST /v1/query")
	if root.SpanContext.TraceID().String() != remoteTrace || root.Parent.SpanID().String() != remoteSpan || !root.Parent.IsRemote() {
		t.Fatalf("server span does not continue the traceparent: trace %s parent %s", root.SpanContext.TraceID(), root.Parent.SpanID())
	}
	if root.SpanKind != trace.SpanKindServer || attr(root, "http.route") != "/v1/query" || attr(root, "http.response.status_code") != "200" ||
		attr(root, "ragd.query.hits") != "3" {
		t.Errorf("server span: kind %v, attributes %v", root.SpanKind, root.Attributes)
	}
	// Every source, fusion, expansion and hydration is a child of it.
	// Fusion runs twice: once for the expansion's seeds, once after it.
	if n := len(byName(spans, "retriever.fusion")); n != 2 {
		t.Errorf("%d fusion spans, want 2", n)
	}
	if e, v := one(t, spans, "source.embedder"), one(t, spans, "source.vector"); e.Parent.SpanID() != v.SpanContext.SpanID() ||
		attr(e, "ragd.source.status") != "ok" || attr(e, "ragd.breaker.state") != "closed" {
		t.Errorf("embedding span: parent %s (vector %s), attributes %v", e.Parent.SpanID(), v.SpanContext.SpanID(), e.Attributes)
	}
	for _, name := range []string{"source.vector", "source.keyword", "source.graph", "retriever.expansion", "retriever.hydration"} {
		s := one(t, spans, name)
		if s.Parent.SpanID() != root.SpanContext.SpanID() || s.SpanContext.TraceID().String() != remoteTrace {
			t.Errorf("%s is not a child of the server span", name)
		}
		if strings.HasPrefix(name, "source.") {
			if attr(s, "ragd.source.status") != "ok" || attr(s, "ragd.breaker.state") != "closed" {
				t.Errorf("%s: attributes %v", name, s.Attributes)
			}
		}
	}
	if e := one(t, spans, "retriever.expansion"); attr(e, "ragd.source") != "graph_expand" || attr(e, "ragd.source.status") != "ok" {
		t.Errorf("expansion span: %v", e.Attributes)
	}
	if f := byName(spans, "retriever.fusion")[0]; attr(f, "ragd.fusion.mode") != config.Default().Retriever.Fusion || attr(f, "ragd.fusion.lists") != "3" {
		t.Errorf("fusion span: %v", f.Attributes)
	}
	// No query text, no document text or title in any attribute.
	docs, err := demo.Documents()
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{text, "half-open trial"}
	for _, d := range docs[:5] {
		secrets = append(secrets, d.Title, d.Text[:min(len(d.Text), 40)])
	}
	if l := leaks(spans, secrets...); len(l) > 0 {
		t.Errorf("spans carry query or document text: %v", l)
	}

	// A breaker forced open shows in its source's span.
	if _, err := tr.app.Breakers.ForceOpen("graph"); err != nil {
		t.Fatal(err)
	}
	tr.take()
	// A malformed traceparent is ignored: the request starts a new trace.
	if st := tr.do(t, http.MethodPost, "/v1/query", map[string]any{"text": text}, "traceparent", "00-not-a-trace-01"); st != http.StatusOK {
		t.Fatalf("query with graph open: %d", st)
	}
	spans = tr.take()
	g := one(t, spans, "source.graph")
	if attr(g, "ragd.source.status") != "circuit_open" || attr(g, "ragd.breaker.state") != "open" || attr(g, "ragd.breaker.retry_in_ms") == "" {
		t.Errorf("graph span with its breaker open: %v", g.Attributes)
	}
	root = one(t, spans, "POST /v1/query")
	if root.Parent.IsValid() || attr(root, "ragd.query.degraded") != "true" {
		t.Errorf("a request with a malformed traceparent starts a trace; degraded shows: parent %v attrs %v", root.Parent, root.Attributes)
	}
}

func TestWriteTrace(t *testing.T) {
	tr := newTraced(t)
	doc := map[string]any{"id": "trace-doc", "title": "Secret title words", "text": "confidential body text about breakers"}
	// wait: the applies have happened (and ended their spans) when the
	// answer comes.
	st := tr.do(t, http.MethodPost, "/v1/documents?wait=30s", map[string]any{"documents": []any{doc}},
		"traceparent", "00-"+remoteTrace+"-"+remoteSpan+"-01")
	if st != http.StatusOK {
		t.Fatalf("upsert: %d", st)
	}
	spans := tr.take()
	t.Logf("trace of one write:\n%s", renderTrace(spans))
	root := one(t, spans, "POST /v1/documents")
	want := map[string]string{"ingest.embed": "embedder", "ingest.record": "vector"}
	for name, store := range want {
		s := one(t, spans, name)
		if s.Parent.SpanID() != root.SpanContext.SpanID() || attr(s, "ragd.store") != store ||
			attr(s, "ragd.store.documents") != "1" || attr(s, "ragd.store.failed") != "0" {
			t.Errorf("%s: parent %s, attributes %v", name, s.Parent.SpanID(), s.Attributes)
		}
	}
	// The derived stores apply the change log in the background: each
	// apply is a trace of its own, not a child of the write.
	var applied []string
	for _, s := range byName(spans, "ingest.apply") {
		if s.Parent.IsValid() || attr(s, "ragd.store.failed") != "0" || attr(s, "ragd.store.documents") == "" {
			t.Errorf("apply span: parent %s, attributes %v", s.Parent.SpanID(), s.Attributes)
		}
		applied = append(applied, attr(s, "ragd.store"))
	}
	slices.Sort(applied)
	applied = slices.Compact(applied)
	if !slices.Equal(applied, []string{"graph", "keyword"}) {
		t.Errorf("derived-store apply spans for %v, want graph and keyword", applied)
	}
	if l := leaks(spans, "Secret title", "confidential body", "trace-doc"); len(l) > 0 {
		t.Errorf("spans carry document content or ids: %v", l)
	}
}

func TestTracingProvider(t *testing.T) {
	// It builds an OTLP exporter without contacting the collector.
	cfg := config.DefaultTracing()
	cfg.Enabled, cfg.Endpoint = true, "http://127.0.0.1:9/v1/traces"
	on, err := tracing.New(context.Background(), cfg, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, span := on.Tracer("x").Start(context.Background(), "s")
	if !span.IsRecording() {
		t.Error("tracing on does not record spans")
	}
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = on.Shutdown(ctx) // the export to a closed port fails; Shutdown must still return
}

// renderTrace draws spans as an indented tree with durations and
// attributes, for test logs and docs/operations.md.
func renderTrace(spans tracetest.SpanStubs) string {
	children := map[string][]tracetest.SpanStub{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext.SpanID().String()] = true
	}
	var roots []tracetest.SpanStub
	for _, s := range spans {
		p := s.Parent.SpanID().String()
		if ids[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var walk func(s tracetest.SpanStub, depth int)
	walk = func(s tracetest.SpanStub, depth int) {
		fmt.Fprintf(&b, "%s%-*s %8.3f ms", strings.Repeat("  ", depth), 28-2*depth, s.Name, float64(s.EndTime.Sub(s.StartTime).Microseconds())/1000)
		for _, kv := range s.Attributes {
			if kv.Key == "ragd.request_id" {
				continue
			}
			fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
		}
		b.WriteByte('\n')
		kids := children[s.SpanContext.SpanID().String()]
		slices.SortFunc(kids, func(x, y tracetest.SpanStub) int { return x.StartTime.Compare(y.StartTime) })
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}
