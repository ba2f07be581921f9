package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/retriever"
)

func TestAuthRejectsMissingAndWrongKeys(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct{ name, header string }{
		{"no header", ""},
		{"empty bearer", "Bearer "},
		{"basic scheme", "Basic " + adminKey},
		{"wrong key", "Bearer wrong-key-0123456789"},
		{"prefix of a key", "Bearer " + adminKey[:len(adminKey)-1]},
		{"key with suffix", "Bearer " + adminKey + "x"},
		{"key without scheme", adminKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := serve(t, e.h, http.MethodPost, "/v1/query", `{"text":"a"}`, "Authorization", tc.header)
			wantError(t, rec, http.StatusUnauthorized, api.CodeUnauthorized)
			if !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("WWW-Authenticate %q", rec.Header().Get("WWW-Authenticate"))
			}
		})
	}
	if n := len(e.searcher.calls()); n != 0 {
		t.Fatalf("searcher called %d times without a valid key", n)
	}
	// The scheme is case-insensitive.
	decodeAs[retriever.Result](t, serve(t, e.h, http.MethodPost, "/v1/query", `{"text":"a"}`, "Authorization", "bearer "+queryKey), http.StatusOK)
}

// TestAuthRoles checks every route against both roles: the query role
// reaches query and status routes and gets 403 on admin routes.
func TestAuthRoles(t *testing.T) {
	e := newEnv(t, nil)
	adminOnly := []struct{ method, path, body string }{
		{http.MethodPost, "/v1/documents", `{"documents":[{"id":"a","text":"x"}]}`},
		{http.MethodPost, "/v1/documents/delete", `{"ids":["a"]}`},
		{http.MethodDelete, "/v1/documents/a", ""},
		{http.MethodPost, "/v1/status/breakers/vector/force-close", ""},
	}
	for _, r := range adminOnly {
		var body any
		if r.body != "" {
			body = r.body
		}
		wantError(t, serve(t, e.h, r.method, r.path, body, "Authorization", "Bearer "+queryKey), http.StatusForbidden, api.CodeForbidden)
		wantError(t, serve(t, e.h, r.method, r.path, body, "Authorization", "Bearer "+acmeQueryKey), http.StatusForbidden, api.CodeForbidden)
		if rec := serve(t, e.h, r.method, r.path, body, "Authorization", "Bearer "+adminKey); rec.Code == http.StatusForbidden || rec.Code == http.StatusUnauthorized {
			t.Fatalf("%s %s with the admin key: %d", r.method, r.path, rec.Code)
		}
	}
	if len(e.writer.upsertCalls()) != 1 {
		t.Fatalf("writer upserts %d, want only the admin's", len(e.writer.upsertCalls()))
	}
	queryOK := []struct{ method, path, body string }{
		{http.MethodPost, "/v1/query", `{"text":"a"}`},
		{http.MethodGet, "/v1/documents/a", ""},
		{http.MethodGet, "/v1/status/breakers", ""},
		{http.MethodGet, "/v1/status/health", ""},
	}
	for _, r := range queryOK {
		var body any
		if r.body != "" {
			body = r.body
		}
		rec := serve(t, e.h, r.method, r.path, body, "Authorization", "Bearer "+queryKey)
		if rec.Code == http.StatusForbidden || rec.Code == http.StatusUnauthorized {
			t.Fatalf("%s %s with the query key: %d %s", r.method, r.path, rec.Code, rec.Body.String())
		}
		wantError(t, serve(t, e.h, r.method, r.path, body), http.StatusUnauthorized, api.CodeUnauthorized)
	}
}

func TestAuthPublicEndpoints(t *testing.T) {
	paths := map[string]string{
		api.PublicHealth: "/healthz", api.PublicReady: "/readyz",
		api.PublicMetrics: "/metrics", api.PublicOpenAPI: "/openapi.json",
	}
	// Listed as public: no key needed.
	e := newEnv(t, nil)
	for _, p := range paths {
		if rec := serve(t, e.h, http.MethodGet, p, nil); rec.Code != http.StatusOK {
			t.Fatalf("public %s: %d", p, rec.Code)
		}
	}
	// Not listed: any valid key, of any role, is needed; for /metrics one
	// not bound to a tenant (TestMetricsRefusedToTenantKeys).
	e = newEnv(t, func(c *api.Config) { c.Auth.Public = nil })
	for _, p := range paths {
		wantError(t, serve(t, e.h, http.MethodGet, p, nil), http.StatusUnauthorized, api.CodeUnauthorized)
		key := acmeQueryKey
		if p == "/metrics" {
			key = queryKey
		}
		if rec := serve(t, e.h, http.MethodGet, p, nil, "Authorization", "Bearer "+key); rec.Code != http.StatusOK {
			t.Fatalf("%s with a query key: %d", p, rec.Code)
		}
	}
	// One listed, the others not.
	e = newEnv(t, func(c *api.Config) { c.Auth.Public = []string{api.PublicHealth} })
	if rec := serve(t, e.h, http.MethodGet, "/healthz", nil); rec.Code != http.StatusOK {
		t.Fatalf("/healthz: %d", rec.Code)
	}
	wantError(t, serve(t, e.h, http.MethodGet, "/metrics", nil), http.StatusUnauthorized, api.CodeUnauthorized)
}

func TestAuthDisabledOnlyWhenExplicit(t *testing.T) {
	off := false
	e := newEnv(t, func(c *api.Config) { c.Auth = config.AuthConfig{Enabled: &off} })
	decodeAs[api.BatchResponse](t, serve(t, e.h, http.MethodPost, "/v1/documents", `{"documents":[{"id":"a","text":"x"}]}`), http.StatusOK)
	wantError(t, serve(t, e.h, http.MethodPost, "/v1/status/breakers/x/force-close", nil), http.StatusNotFound, api.CodeUnknownBreaker)

	// Enabled unset means on: a config without keys is rejected.
	cfg := newEnv(t, nil).cfg
	cfg.Auth = config.AuthConfig{}
	if _, err := api.New(cfg); err == nil {
		t.Fatal("auth left unset without keys was accepted")
	}
}

// Issue 29 item 4: /metrics counts every tenant's requests, writes and
// cache hits, as /v1/status/history does: a key bound to a tenant may not
// read it. An operator scrapes with a key of no tenant: an admin or query
// key, or a metrics key, which reads /metrics (and the other operational
// endpoints) and nothing else.
func TestMetricsRefusedToTenantKeys(t *testing.T) {
	const metricsKey = "metrics-key-0123456789"
	e := newEnv(t, func(c *api.Config) {
		c.Auth.Public = []string{api.PublicHealth, api.PublicReady, api.PublicOpenAPI}
		c.Auth.Keys = append(c.Auth.Keys, config.KeyConfig{Name: "prom", Key: metricsKey, Role: config.RoleMetrics})
	})
	for _, key := range []string{acmeQueryKey, acmeAdminKey} {
		wantError(t, serve(t, e.h, http.MethodGet, "/metrics", nil, "Authorization", "Bearer "+key), http.StatusForbidden, api.CodeForbidden)
	}
	for _, key := range []string{queryKey, adminKey, metricsKey} {
		if rec := serve(t, e.h, http.MethodGet, "/metrics", nil, "Authorization", "Bearer "+key); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "ragd_http_requests_total") {
			t.Errorf("/metrics with %s: %d", key, rec.Code)
		}
	}
	wantError(t, serve(t, e.h, http.MethodGet, "/metrics", nil), http.StatusUnauthorized, api.CodeUnauthorized)
	// A metrics key reads nothing else.
	wantError(t, serve(t, e.h, http.MethodPost, "/v1/query", `{"text":"a"}`, "Authorization", "Bearer "+metricsKey), http.StatusForbidden, api.CodeForbidden)
	wantError(t, serve(t, e.h, http.MethodGet, "/v1/status/breakers", nil, "Authorization", "Bearer "+metricsKey), http.StatusForbidden, api.CodeForbidden)
	wantError(t, serve(t, e.h, http.MethodGet, "/v1/documents/a", nil, "Authorization", "Bearer "+metricsKey), http.StatusForbidden, api.CodeForbidden)
	if rec := serve(t, e.h, http.MethodGet, "/readyz", nil, "Authorization", "Bearer "+metricsKey); rec.Code != http.StatusOK {
		t.Errorf("/readyz with the metrics key: %d", rec.Code)
	}
}
