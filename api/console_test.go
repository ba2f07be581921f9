package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/internal/events"
	"github.com/ragd/ragd/internal/sourcestats"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

func TestEventsEndpoint(t *testing.T) {
	ring := events.NewRing(8, nil)
	e := newEnv(t, func(c *api.Config) { c.Events = ring })

	page := decodeAs[api.EventsResponse](t, e.do(http.MethodGet, "/v1/status/events", nil), http.StatusOK)
	if page.Events == nil || len(page.Events) != 0 || page.Last != 0 {
		t.Fatalf("empty ring: %+v", page)
	}
	for i := 0; i < 12; i++ {
		ring.Publish(events.Event{Kind: events.KindBurst, Source: "graph",
			Burst: &events.Burst{Status: "timeout", Phase: events.BurstStarted, Count: 5}})
	}
	// A tenant-bound query key reads the timeline too: it holds no tenant data.
	rec := serve(t, e.h, http.MethodGet, "/v1/status/events?after=6&limit=3", nil, "Authorization", "Bearer "+acmeQueryKey)
	page = decodeAs[api.EventsResponse](t, rec, http.StatusOK)
	// Capacity 8: events 1-4 are forgotten; a limit pages forward.
	if len(page.Events) != 3 || page.Events[0].Seq != 7 || page.Last != 12 || page.Dropped || !page.More ||
		page.Events[2].Burst == nil || page.Events[2].Burst.Status != "timeout" {
		t.Fatalf("after=6 limit=3: %+v", page)
	}
	page = decodeAs[api.EventsResponse](t, e.do(http.MethodGet, "/v1/status/events?after=2&limit=100", nil), http.StatusOK)
	if len(page.Events) != 8 || page.Events[0].Seq != 5 || !page.Dropped || page.More {
		t.Fatalf("after=2: %+v", page)
	}
	page = decodeAs[api.EventsResponse](t, e.do(http.MethodGet, "/v1/status/events?after=12", nil), http.StatusOK)
	if len(page.Events) != 0 || page.Last != 12 || page.Dropped {
		t.Fatalf("after the newest: %+v", page)
	}

	for _, bad := range []string{"after=-1", "after=x", "limit=0", "limit=1001", "limit=1e3"} {
		wantError(t, e.do(http.MethodGet, "/v1/status/events?"+bad, nil), http.StatusBadRequest, api.CodeInvalidParameter)
	}
}

func TestEventsEndpointWithoutRing(t *testing.T) {
	var ring *events.Ring // a typed nil is "none" too
	e := newEnv(t, func(c *api.Config) { c.Events = ring })
	page := decodeAs[api.EventsResponse](t, e.do(http.MethodGet, "/v1/status/events", nil), http.StatusOK)
	if page.Events == nil || len(page.Events) != 0 {
		t.Fatalf("no ring: %+v", page)
	}
	snap := decodeAs[api.SourcesResponse](t, e.do(http.MethodGet, "/v1/status/sources", nil), http.StatusOK)
	if snap.Sources == nil || len(snap.Sources) != 0 {
		t.Fatalf("no stats: %+v", snap)
	}
}

// TestSourcesEndpoint runs queries through the API with a searcher that
// feeds the window, and reads the figures back per key.
func TestSourcesEndpoint(t *testing.T) {
	w, err := sourcestats.New(sourcestats.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var searcher api.Searcher
	e := newEnv(t, func(c *api.Config) {
		c.Stats = w
		searcher = sourcestats.Observed{Retriever: c.Searcher, Window: w}
		c.Searcher = searcher
	})
	e.searcher.RetrieveFn = func(ctx context.Context, q retriever.Query) (*retriever.Result, error) {
		st := retriever.StatusOK
		if q.Tenant == "acme" {
			st = retriever.StatusTimeout
		}
		return &retriever.Result{Missing: []string{}, Sources: map[string]retriever.SourceStatus{
			spi.SourceVector: {Status: st, TookMS: 7},
		}}, nil
	}
	for _, key := range []string{adminKey, queryKey, acmeQueryKey} {
		rec := serve(t, e.h, http.MethodPost, "/v1/query", map[string]any{"text": "q"}, "Authorization", "Bearer "+key)
		if rec.Code != http.StatusOK {
			t.Fatalf("query with %s: %d %s", key, rec.Code, rec.Body)
		}
	}
	all := decodeAs[api.SourcesResponse](t, e.do(http.MethodGet, "/v1/status/sources", nil), http.StatusOK)
	if all.Queries != 3 || len(all.Sources) != 1 || all.Sources[0].Answered != 2 || all.SpanMS != time.Minute.Milliseconds() {
		t.Fatalf("admin view: %+v", all)
	}
	rec := serve(t, e.h, http.MethodGet, "/v1/status/sources", nil, "Authorization", "Bearer "+acmeQueryKey)
	acme := decodeAs[api.SourcesResponse](t, rec, http.StatusOK)
	if acme.Queries != 1 || acme.Sources[0].Statuses[retriever.StatusTimeout] != 1 || acme.Sources[0].Answered != 0 {
		t.Fatalf("acme view: %+v", acme)
	}
}

func TestConsoleAssets(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.Auth.Public = nil })
	// The page is static and public: it carries no data, the key is typed in.
	rec := serve(t, e.h, http.MethodGet, "/ui", nil)
	if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/ui/" {
		t.Fatalf("/ui: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	for path, want := range map[string]string{
		"/ui/":            "text/html",
		"/ui/console.js":  "text/javascript",
		"/ui/console.css": "text/css",
	} {
		rec := serve(t, e.h, http.MethodGet, path, nil)
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), want) {
			t.Fatalf("%s: %d %q", path, rec.Code, rec.Header().Get("Content-Type"))
		}
		csp := rec.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		body := rec.Body.String()
		// No external resources: air-gapped operators must get the whole console.
		for _, ext := range []string{"http://", "https://", "//fonts.", "localStorage", "sessionStorage", "document.cookie"} {
			if strings.Contains(body, ext) {
				t.Errorf("%s mentions %q", path, ext)
			}
		}
	}
	if rec := serve(t, e.h, http.MethodGet, "/ui/nope.js", nil); rec.Code != http.StatusNotFound {
		t.Fatalf("missing asset: %d", rec.Code)
	}
}
