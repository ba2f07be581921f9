package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/internal/faults"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

func TestRequestID(t *testing.T) {
	e := newEnv(t, nil)
	rec := e.do(http.MethodPost, "/v1/query", `{"text":"a"}`, "X-Request-ID", "client-id.42:x_y")
	if got := rec.Header().Get("X-Request-ID"); got != "client-id.42:x_y" {
		t.Fatalf("X-Request-ID %q, want the client's", got)
	}
	for _, bad := range []string{"has space", "new\nline", strings.Repeat("a", 129), `quote"`} {
		rec := e.do(http.MethodPost, "/v1/query", `{"text":"a"}`, "X-Request-ID", bad)
		got := rec.Header().Get("X-Request-ID")
		if got == bad || !regexp.MustCompile(`^[0-9a-f]{24}$`).MatchString(got) {
			t.Fatalf("bad client id %q answered with %q, want a fresh one", bad, got)
		}
	}
	a := e.do(http.MethodGet, "/v1/status/breakers", nil).Header().Get("X-Request-ID")
	b := e.do(http.MethodGet, "/v1/status/breakers", nil).Header().Get("X-Request-ID")
	if a == "" || a == b {
		t.Fatalf("minted ids %q and %q", a, b)
	}
	// Errors carry the id in the body too.
	rec = e.do(http.MethodPost, "/v1/query", `{}`, "X-Request-ID", "trace-1")
	if d := errorOf(t, rec); d.RequestID != "trace-1" {
		t.Fatalf("error request_id %q", d.RequestID)
	}
}

func TestUnknownRouteAndMethod(t *testing.T) {
	e := newEnv(t, nil)
	wantError(t, e.do(http.MethodGet, "/v1/nope", nil), http.StatusNotFound, api.CodeNotFound)
	wantError(t, e.do(http.MethodGet, "/", nil), http.StatusNotFound, api.CodeNotFound)
	for _, tc := range []struct{ method, path, allow string }{
		{http.MethodGet, "/v1/query", "POST"},
		{http.MethodPut, "/v1/documents", "POST"},
		{http.MethodPost, "/healthz", "GET"},
		{http.MethodPatch, "/v1/documents/a", "GET"},
	} {
		rec := e.do(tc.method, tc.path, nil)
		wantError(t, rec, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed)
		if !strings.Contains(rec.Header().Get("Allow"), tc.allow) {
			t.Fatalf("%s %s: Allow %q", tc.method, tc.path, rec.Header().Get("Allow"))
		}
	}
}

func TestInFlightLimit(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	e := newEnv(t, func(c *api.Config) { c.Server.MaxInFlight = 1 })
	e.searcher.RetrieveFn = func(ctx context.Context, _ retriever.Query) (*retriever.Result, error) {
		close(entered)
		<-release
		return &retriever.Result{Hits: []retriever.Hit{}}, nil
	}
	var wg sync.WaitGroup
	wg.Add(1)
	var first *httptest.ResponseRecorder
	go func() {
		defer wg.Done()
		first = serve(t, e.h, http.MethodPost, "/v1/query", `{"text":"a"}`, "Authorization", "Bearer "+queryKey)
	}()
	<-entered
	rec := e.do(http.MethodGet, "/v1/status/breakers", nil)
	wantError(t, rec, http.StatusTooManyRequests, api.CodeTooManyRequests)
	if rec.Header().Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	// Probes are exempt; readiness answers, and says the server is
	// saturated.
	for _, p := range []string{"/healthz", "/metrics"} {
		if rec := serve(t, e.h, http.MethodGet, p, nil); rec.Code != http.StatusOK {
			t.Fatalf("%s while saturated: %d", p, rec.Code)
		}
	}
	if rec := serve(t, e.h, http.MethodGet, "/readyz", nil); rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while saturated: %d", rec.Code)
	}
	close(release)
	wg.Wait()
	if first.Code != http.StatusOK {
		t.Fatalf("first request %d", first.Code)
	}
	// The slot is free again.
	decodeAs[api.BreakersResponse](t, e.do(http.MethodGet, "/v1/status/breakers", nil), http.StatusOK)
}

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := serve(t, h, http.MethodGet, "/metrics", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	return rec.Body.String()
}

func TestHTTPMetricsUseRouteTemplates(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(c *api.Config) { c.Registerer = reg; c.Faults = faults.New(); c.Server.Pprof = true })
	e.store.docs["secret-id-1"] = spi.Document{ID: "secret-id-1"}
	e.do(http.MethodDelete, "/debug/faults/graph", nil)
	e.do(http.MethodGet, "/debug/pprof/cmdline", nil)
	e.do(http.MethodGet, "/debug/pprof/secret-profile", nil)
	e.do(http.MethodPost, "/v1/query", `{"text":"a"}`)
	e.do(http.MethodPost, "/v1/query", `{}`)
	e.do(http.MethodGet, "/v1/documents/secret-id-1", nil)
	e.do(http.MethodGet, "/v1/documents/secret-id-2", nil)
	e.do(http.MethodGet, "/no/such/route/secret-path", nil)
	out := scrape(t, e.h)
	for _, want := range []string{
		`ragd_http_requests_total{code="200",method="POST",route="/v1/query"} 1`,
		`ragd_http_requests_total{code="400",method="POST",route="/v1/query"} 1`,
		`ragd_http_requests_total{code="200",method="GET",route="/v1/documents/:id"} 1`,
		`ragd_http_requests_total{code="404",method="GET",route="/v1/documents/:id"} 1`,
		`ragd_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`ragd_http_requests_total{code="200",method="DELETE",route="/debug/faults/:source"} 1`,
		`ragd_http_requests_total{code="200",method="GET",route="/debug/pprof/cmdline"} 1`,
		`ragd_http_requests_total{code="404",method="GET",route="/debug/pprof/:name"} 1`,
		`ragd_http_request_duration_seconds_count{method="POST",route="/v1/query"} 2`,
		`ragd_http_requests_in_flight`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(out, "secret") {
		t.Fatal("raw URLs leaked into metric labels")
	}
	// A second server on the same registry shares the collectors.
	if _, err := api.New(e.cfg); err != nil {
		t.Fatalf("second server on the same registry: %v", err)
	}
}

func TestBreakerMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	bm, err := api.RegisterBreakerMetrics(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock()
	cfg := breaker.DefaultConfig()
	cfg.Now = clock.Now
	cfg.FailureThreshold = 1
	cfg.OnStateChange = bm.ObserveTransition
	br := breaker.NewRegistry(cfg)
	br.Get("vector")
	br.Get("graph")
	e := newEnv(t, func(c *api.Config) { c.Registerer = reg; c.Breakers = br })

	if out := scrape(t, e.h); strings.Contains(out, "ragd_breaker_state{") {
		t.Fatalf("breaker series before SetBreakers:\n%s", out)
	}
	bm.SetBreakers(br)
	if _, err := br.ForceOpen("graph"); err != nil {
		t.Fatal(err)
	}
	if err := br.Get("graph").Call(context.Background(), func(context.Context) error { return nil }); err == nil {
		t.Fatal("open breaker admitted a call")
	}
	clock.Advance(time.Hour) // cooldown over: the next call is a trial
	if err := br.Get("graph").Call(context.Background(), func(context.Context) error { return io.EOF }); err == nil {
		t.Fatal("trial did not fail")
	}
	out := scrape(t, e.h)
	for _, want := range []string{
		`ragd_breaker_state{breaker="graph"} 2`,
		`ragd_breaker_state{breaker="vector"} 0`,
		`ragd_breaker_trips_total{breaker="graph"} 2`,
		`ragd_breaker_trips_total{breaker="vector"} 0`,
		`ragd_breaker_transitions_total{breaker="graph",from="closed",reason="forced",to="open"} 1`,
		`ragd_breaker_transitions_total{breaker="graph",from="open",reason="cooldown_elapsed",to="half_open"} 1`,
		`ragd_breaker_transitions_total{breaker="graph",from="half_open",reason="trial_failure",to="open"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	var nilReg *breaker.Registry
	bm.SetBreakers(nilReg)
	if out := scrape(t, e.h); strings.Contains(out, "ragd_breaker_state{") {
		t.Fatal("breaker series after SetBreakers(nil)")
	}
}
