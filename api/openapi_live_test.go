package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/app"
	"github.com/ragd/ragd/config"
)

// liveSpec is a real ragd (embedded stores, demo corpus, auth on) and the
// OpenAPI document it serves, loaded and checked by kin-openapi.
type liveSpec struct {
	t      *testing.T
	h      http.Handler
	router routers.Router
	seen   map[string]bool // operationId + " " + status
}

func newLiveSpec(t *testing.T) *liveSpec {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Embedder.Kind = config.KindHashing
	cfg.Auth.Keys = []config.KeyConfig{
		{Name: "a", Key: adminKey, Role: config.RoleAdmin},
		{Name: "q", Key: queryKey, Role: config.RoleQuery},
		{Name: "acme-a", Key: acmeAdminKey, Role: config.RoleAdmin, Tenant: "acme"},
	}
	// Not metrics: no server with a key bound to a tenant serves it without
	// a key.
	cfg.Auth.Public = []string{api.PublicHealth, api.PublicReady, api.PublicOpenAPI}
	inst, err := app.New(context.Background(), &cfg, app.Options{Logger: slog.New(slog.DiscardHandler), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close() })
	if _, err := inst.LoadDemo(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv, err := inst.API()
	if err != nil {
		t.Fatal(err)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.OpenAPI())
	if err != nil {
		t.Fatalf("load openapi.json: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI document: %v", err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &liveSpec{t: t, h: srv.Handler(), router: router, seen: map[string]bool{}}
}

// check sends a request to the live server and validates the request
// (unless bad is set: it is meant to be invalid) and the response against
// the document. It returns the response.
func (l *liveSpec) check(method, path, key, body string, bad bool) *httptest.ResponseRecorder {
	t := l.t
	t.Helper()
	const base = "http://127.0.0.1:8080" // the document's server
	newReq := func() *http.Request {
		r := httptest.NewRequest(method, base+path, strings.NewReader(body))
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		if key != "" {
			r.Header.Set("Authorization", "Bearer "+key)
		}
		return r
	}
	rec := httptest.NewRecorder()
	l.h.ServeHTTP(rec, newReq())

	req := newReq()
	route, params, err := l.router.FindRoute(req)
	if err != nil {
		t.Fatalf("%s %s: not in the document: %v", method, path, err)
	}
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
	}
	if !bad {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			t.Errorf("%s %s: the request itself does not match the document: %v", method, path, err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 rec.Code,
		Header:                 rec.Header(),
		Body:                   io.NopCloser(bytes.NewReader(rec.Body.Bytes())),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s %s → %d does not match the document: %v\nbody: %.600s", method, path, rec.Code, err, rec.Body.String())
	}
	l.seen[route.Operation.OperationID] = true
	return rec
}

// TestLiveResponsesMatchTheOpenAPIDocument is issue 12 item 5: real
// responses of every operation, successes and errors, validate against
// /openapi.json with kin-openapi.
func TestLiveResponsesMatchTheOpenAPIDocument(t *testing.T) {
	l := newLiveSpec(t)
	for _, c := range []struct {
		method, path, key, body string
		bad                     bool
	}{
		{"POST", "/v1/query", queryKey, `{"text":"circuit breaker half-open","limit":3,"explain":true}`, false},
		{"POST", "/v1/query", queryKey, `{"text":"circuit breaker","fusion":{"mode":"score"},"expand":{"hops":2},"explain":true,"offset":1}`, false},
		{"POST", "/v1/query", queryKey, `{"text":"rank fusion","fusion":{"mode":"dbsf"},"sources":{"graph":{"enabled":false}},"min_sources":2}`, false},
		{"POST", "/v1/query", queryKey, `{"text":"a","limit":1000}`, true},
		{"POST", "/v1/query", queryKey, `{"txt":"a"}`, true},
		{"POST", "/v1/query", "", `{"text":"a"}`, false},
		{"POST", "/v1/query", queryKey, `{"text":"a","tenant":"acme"}`, false},
		{"POST", "/v1/documents", adminKey, `{"documents":[{"id":"live-1","title":"Live","text":"validated against the document","metadata":{"lang":"en"},"entities":["validation"]}]}`, false},
		{"POST", "/v1/documents", adminKey, `{"documents":[{"id":"live-2","text":"ok"},{"id":"live-3"}]}`, false},
		{"POST", "/v1/documents", queryKey, `{"documents":[{"id":"x","text":"y"}]}`, false},
		{"POST", "/v1/documents", adminKey, `{"documents":[]}`, true},
		{"GET", "/v1/documents/live-1", queryKey, "", false},
		{"GET", "/v1/documents/circuit-breaker", queryKey, "", false},
		{"GET", "/v1/documents/nope", queryKey, "", false},
		{"DELETE", "/v1/documents/live-1", adminKey, "", false},
		{"DELETE", "/v1/documents/live-1", adminKey, "", false},
		{"POST", "/v1/documents/delete", adminKey, `{"ids":["live-2","never-was"]}`, false},
		{"POST", "/v1/documents/delete", adminKey, `{"ids":["a","a"]}`, true},
		{"GET", "/v1/status/breakers", queryKey, "", false},
		{"POST", "/v1/status/breakers/graph/force-open", adminKey, "", false},
		{"GET", "/v1/status/health", queryKey, "", false},
		{"POST", "/v1/status/breakers/graph/force-close", adminKey, `{"reason":"neo4j answers again"}`, false},
		{"POST", "/v1/status/breakers/graph/force-open", adminKey, `{"reason":"bad\u202eoverride"}`, true},
		{"POST", "/v1/status/breakers/nope/force-close", adminKey, "", false},
		{"POST", "/v1/status/breakers/vector/force-open", acmeAdminKey, "", false},
		{"GET", "/v1/status/health", queryKey, "", false},
		{"POST", "/v1/documents?wait=10s", adminKey, `{"documents":[{"id":"live-4","text":"waited for"}]}`, false},
		{"POST", "/v1/status/check", adminKey, "", false},
		{"POST", "/v1/status/check?repair=true", adminKey, "", false},
		{"POST", "/v1/status/check?repair=maybe", adminKey, "", true},
		{"POST", "/v1/status/breakers/keyword/hold", adminKey, `{"reason":"index rebuild"}`, false},
		{"POST", "/v1/status/breakers/keyword/hold", adminKey, "", false},
		{"POST", "/v1/status/breakers/keyword/hold", adminKey, `{"reason":"bad\u0007bell"}`, true},
		{"POST", "/v1/status/breakers/nope/hold", adminKey, "", false},
		{"POST", "/v1/status/breakers/keyword/hold", queryKey, "", false},
		{"GET", "/v1/status/breakers", queryKey, "", false},
		{"POST", "/v1/status/breakers/keyword/force-close", adminKey, "", false},
		{"GET", "/v1/status/events", queryKey, "", false},
		{"GET", "/v1/status/events?after=1&limit=2", queryKey, "", false},
		{"GET", "/v1/status/sources", queryKey, "", false},
		{"GET", "/v1/status/server", queryKey, "", false},
		{"GET", "/v1/status/server", acmeAdminKey, "", false},
		{"GET", "/v1/status/history", queryKey, "", false},
		{"GET", "/v1/status/history", acmeAdminKey, "", false},
		{"GET", "/healthz", "", "", false},
		{"GET", "/readyz", "", "", false},
		{"HEAD", "/healthz", "", "", false},
		{"HEAD", "/readyz", "", "", false},
		{"GET", "/metrics", queryKey, "", false},
		{"GET", "/metrics", acmeAdminKey, "", false},
		{"GET", "/openapi.json", "", "", false},
	} {
		l.check(c.method, c.path, c.key, c.body, c.bad)
	}
	// A text with no word in it: the embedded keyword and graph stores
	// answer without searching, and the answer says so (skipped, nothing
	// to search), in a shape the document allows.
	rec := l.check("POST", "/v1/query", queryKey, `{"text":"!!! ?","sources":{"graph":{"enabled":true}}}`, false)
	var res struct {
		Sources map[string]struct{ Status, Error string } `json:"sources"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
		t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
	}
	for _, name := range []string{"keyword", "graph"} {
		if st := res.Sources[name]; st.Status != "skipped" || st.Error != "nothing to search" {
			t.Errorf("%s for a text with no word = %+v (%d %s), want skipped, nothing to search", name, st, rec.Code, rec.Body)
		}
	}
	doc, _ := openapi3.NewLoader().LoadFromData(api.OpenAPI())
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if !l.seen[op.OperationID] {
				t.Errorf("%s %s (%s) was not exercised", method, path, op.OperationID)
			}
		}
	}
	if len(l.seen) < 13 {
		t.Fatalf("only %d operations exercised", len(l.seen))
	}
}
