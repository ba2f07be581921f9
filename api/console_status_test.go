package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/internal/events"
	"github.com/ragd/ragd/internal/history"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// TestHoldEndpoint: an admin key holds a breaker with a reason; the hold
// names the key, it stays open past its cooldown, the transitions carry
// the key's name, force-close releases it.
func TestHoldEndpoint(t *testing.T) {
	clock := newFakeClock()
	var got []breaker.Transition
	reg := breaker.NewRegistry(breaker.Config{FailureThreshold: 2, ResetTimeout: time.Second, HalfOpenMaxCalls: 1,
		SuccessThreshold: 1, Now: clock.Now, OnStateChange: func(t breaker.Transition) { got = append(got, t) }})
	for _, n := range spi.Backends() {
		reg.Get(n)
	}
	e := newEnv(t, func(c *api.Config) { c.Breakers = reg })

	h := decodeAs[api.HoldResponse](t, e.do(http.MethodPost, "/v1/status/breakers/graph/hold", `{"reason":"  neo4j 5.27 upgrade "}`), http.StatusOK)
	if !h.Held || h.Breaker.State != breaker.Open || h.Breaker.Hold == nil || h.Breaker.Hold.By != "a" ||
		h.Breaker.Hold.Reason != "neo4j 5.27 upgrade" || h.Breaker.RetryIn != 0 {
		t.Fatalf("hold: %+v %+v", h, h.Breaker.Hold)
	}
	clock.Advance(time.Hour)
	list := decodeAs[api.BreakersResponse](t, e.do(http.MethodGet, "/v1/status/breakers", nil), http.StatusOK)
	i := slices.IndexFunc(list.Breakers, func(s breaker.Snapshot) bool { return s.Name == "graph" })
	if list.Breakers[i].State != breaker.Open || list.Breakers[i].Hold == nil {
		t.Fatalf("an hour later: %+v", list.Breakers[i])
	}
	// No body at all is a hold without a reason.
	h = decodeAs[api.HoldResponse](t, e.do(http.MethodPost, "/v1/status/breakers/vector/hold", nil), http.StatusOK)
	if h.Breaker.Hold == nil || h.Breaker.Hold.Reason != "" {
		t.Fatalf("hold without body: %+v", h.Breaker)
	}
	fc := decodeAs[api.ForceCloseResponse](t, e.do(http.MethodPost, "/v1/status/breakers/graph/force-close", nil), http.StatusOK)
	if fc.Breaker.State != breaker.Closed || fc.Breaker.Hold != nil {
		t.Fatalf("release: %+v", fc.Breaker)
	}
	decodeAs[api.ForceOpenResponse](t, e.do(http.MethodPost, "/v1/status/breakers/keyword/force-open", nil), http.StatusOK)
	// Every manual transition names the key.
	if len(got) != 4 {
		t.Fatalf("%d transitions: %+v", len(got), got)
	}
	for _, tr := range got {
		if tr.By != "a" {
			t.Errorf("transition %s %v>%v by %q, want the key's name", tr.Name, tr.From, tr.To, tr.By)
		}
	}
	if got[2].Released == nil || got[2].Released.Reason != "neo4j 5.27 upgrade" {
		t.Errorf("release transition %+v", got[2])
	}

	for _, bad := range []string{`{"reason":"` + strings.Repeat("x", 201) + `"}`, `{"reason":"a\nb"}`, `{"why":"x"}`, `[1]`} {
		wantStatus(t, e.do(http.MethodPost, "/v1/status/breakers/graph/hold", bad), http.StatusBadRequest)
	}
	wantError(t, e.do(http.MethodPost, "/v1/status/breakers/nope/hold", nil), http.StatusNotFound, api.CodeUnknownBreaker)
	wantError(t, e.do(http.MethodPost, "/v1/status/breakers/graph/hold", nil, "Authorization", "Bearer "+queryKey), http.StatusForbidden, api.CodeForbidden)
	wantStatus(t, e.do(http.MethodPost, "/v1/status/breakers/graph/hold", nil, "Authorization", "Bearer "+acmeAdminKey), http.StatusForbidden)
}

// TestBreakerActionReasons is issue 30 item 6: force-open and force-close
// record the operator's reason as a hold does (the console's Reason box
// was typed and lost), checked by the same rule: a bidi override or a
// control character is refused with nothing changed, as for a hold.
func TestBreakerActionReasons(t *testing.T) {
	clock := newFakeClock()
	var got []breaker.Transition
	reg := breaker.NewRegistry(breaker.Config{FailureThreshold: 2, ResetTimeout: time.Second, HalfOpenMaxCalls: 1,
		SuccessThreshold: 1, Now: clock.Now, OnStateChange: func(t breaker.Transition) { got = append(got, t) }})
	for _, n := range spi.Backends() {
		reg.Get(n)
	}
	e := newEnv(t, func(c *api.Config) { c.Breakers = reg })
	decodeAs[api.ForceOpenResponse](t, e.do(http.MethodPost, "/v1/status/breakers/keyword/force-open", `{"reason":" reindex "}`), http.StatusOK)
	for _, path := range []string{"force-close", "force-open", "hold"} {
		for _, bad := range []string{`{"reason":"done\u202egnirpmoc"}`, `{"reason":"a\u0007b"}`, `{"reason":"zero\u200bwidth"}`} {
			wantError(t, e.do(http.MethodPost, "/v1/status/breakers/vector/"+path, bad), http.StatusBadRequest, api.CodeInvalidParameter)
		}
	}
	decodeAs[api.ForceCloseResponse](t, e.do(http.MethodPost, "/v1/status/breakers/keyword/force-close", `{"reason":"bleve answers again"}`), http.StatusOK)
	decodeAs[api.ForceCloseResponse](t, e.do(http.MethodPost, "/v1/status/breakers/graph/force-open", nil), http.StatusOK)
	if len(got) != 3 {
		t.Fatalf("%d transitions, want 3 (the refused actions change nothing): %+v", len(got), got)
	}
	for i, want := range []string{"reindex", "bleve answers again", ""} {
		if got[i].Note != want || got[i].By != "a" {
			t.Errorf("transition %d (%s %v>%v): by %q note %q, want a and %q", i, got[i].Name, got[i].From, got[i].To, got[i].By, got[i].Note, want)
		}
	}
}

// TestServerEndpoint: identity, the caller's key, and the inventory, with
// document counts hidden from tenant-bound keys.
func TestServerEndpoint(t *testing.T) {
	started := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	clock := newFakeClock()
	n := 42
	e := newEnv(t, func(c *api.Config) {
		c.Instance, c.StartedAt, c.Now = "inst-1", started, clock.Now
		c.Inventory = func(context.Context) api.Inventory {
			return api.Inventory{
				Sources:  []api.SourceInfo{{Name: "graph", Enabled: false, TimeoutMS: 800}},
				Embedder: &api.EmbedderInfo{Kind: "hashing", Identity: "kind=hashing", Dimension: 384},
				Stores:   []api.StoreInfo{{Name: "vector", Kind: "embedded", Role: "record", Documents: &n}},
			}
		}
	})
	s := decodeAs[api.ServerResponse](t, e.do(http.MethodGet, "/v1/status/server", nil, "Authorization", "Bearer "+queryKey), http.StatusOK)
	if s.Instance != "inst-1" || !s.StartedAt.Equal(started) || s.UptimeS != clock.Now().Sub(started).Seconds() || !s.AuthEnabled ||
		s.Key != (api.KeyInfo{Name: "q", Role: "query"}) || len(s.Sources) != 1 || s.Sources[0].Enabled ||
		s.Embedder == nil || s.Embedder.Dimension != 384 || s.Stores[0].Documents == nil || *s.Stores[0].Documents != 42 {
		t.Fatalf("server: %+v", s)
	}
	s = decodeAs[api.ServerResponse](t, e.do(http.MethodGet, "/v1/status/server", nil, "Authorization", "Bearer "+acmeQueryKey), http.StatusOK)
	if s.Key.Tenant != "acme" || s.Stores[0].Documents != nil {
		t.Fatalf("tenant key: %+v", s)
	}
	// Without an inventory or an instance: empty lists, a minted id.
	e = newEnv(t, nil)
	s = decodeAs[api.ServerResponse](t, e.do(http.MethodGet, "/v1/status/server", nil), http.StatusOK)
	if s.Instance == "" || s.Sources == nil || s.Stores == nil || s.Key.Role != "admin" {
		t.Fatalf("bare server: %+v", s)
	}
}

// TestHistoryEndpoint: API requests and queries land in the history; the
// console's own status polls do not; tenant-bound keys may not read it.
func TestHistoryEndpoint(t *testing.T) {
	rec := history.New(history.Config{})
	e := newEnv(t, func(c *api.Config) {
		c.History = rec
	})
	e.searcher.RetrieveFn = func(context.Context, retriever.Query) (*retriever.Result, error) {
		return &retriever.Result{Missing: []string{}}, nil
	}
	for range 3 {
		decodeAs[retriever.Result](t, e.do(http.MethodPost, "/v1/query", `{"text":"x"}`), http.StatusOK)
	}
	wantStatus(t, e.do(http.MethodPost, "/v1/query", `{"txt":"x"}`), http.StatusBadRequest)
	for range 5 {
		decodeAs[api.HealthResponse](t, e.do(http.MethodGet, "/v1/status/health", nil), http.StatusOK)
	}
	s := decodeAs[api.HistoryResponse](t, e.do(http.MethodGet, "/v1/status/history", nil, "Authorization", "Bearer "+queryKey), http.StatusOK)
	sum := func(xs []int) (n int) {
		for _, x := range xs {
			n += x
		}
		return n
	}
	if sum(s.HTTP.Requests) != 4 || sum(s.HTTP.Status4xx) != 1 || s.HTTP.QueryP99MS[s.Steps-1] == nil {
		t.Fatalf("http history: %+v", s.HTTP)
	}
	wantStatus(t, e.do(http.MethodGet, "/v1/status/history", nil, "Authorization", "Bearer "+acmeQueryKey), http.StatusForbidden)
	wantError(t, newEnv(t, nil).do(http.MethodGet, "/v1/status/history", nil), http.StatusNotFound, api.CodeNoHistory)
}

// TestHealthDisabledSources is issue 20 item 4: a source disabled in the
// config is listed as such and never counted usable.
func TestHealthDisabledSources(t *testing.T) {
	e := newEnv(t, func(c *api.Config) {
		c.Health[spi.SourceGraph] = &fakeHealth{Status: spi.StatusUp}
		c.DisabledSources = []string{spi.SourceGraph, spi.SourceGraphExpand}
	})
	h := decodeAs[api.HealthResponse](t, e.do(http.MethodGet, "/v1/status/health", nil), http.StatusOK)
	if slices.Contains(h.Usable, spi.SourceGraph) || !slices.Equal(h.Disabled, []string{"graph", "graph_expand"}) ||
		!slices.Equal(h.Usable, []string{"vector", "keyword"}) {
		t.Fatalf("health: usable %v disabled %v", h.Usable, h.Disabled)
	}
}

// wantStatus checks an error answer's status and that it has a code.
func wantStatus(t testing.TB, rec *httptest.ResponseRecorder, status int) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d: %s", rec.Code, status, rec.Body.String())
	}
	if d := errorOf(t, rec); d.Code == "" || d.RequestID == "" {
		t.Fatalf("error without a code or request id: %+v", d)
	}
}

// TestTenantKeysDoNotSeeOperators: a key bound to a tenant sees that a
// breaker is held and that it was forced, not which key did it or the
// reason given; keys not bound to a tenant see both. The ring keeps the
// names for them afterwards.
func TestTenantKeysDoNotSeeOperators(t *testing.T) {
	ring := events.NewRing(16, nil)
	reg := breaker.NewRegistry(breaker.Config{FailureThreshold: 2, ResetTimeout: time.Second, HalfOpenMaxCalls: 1,
		SuccessThreshold: 1, OnStateChange: func(tr breaker.Transition) { ring.Publish(events.FromTransition(tr)) }})
	for _, n := range spi.Backends() {
		reg.Get(n)
	}
	e := newEnv(t, func(c *api.Config) { c.Breakers = reg; c.Events = ring })
	decodeAs[api.HoldResponse](t, e.do(http.MethodPost, "/v1/status/breakers/graph/hold", `{"reason":"neo4j upgrade"}`), http.StatusOK)
	decodeAs[api.ForceCloseResponse](t, e.do(http.MethodPost, "/v1/status/breakers/graph/force-close", nil), http.StatusOK)
	decodeAs[api.HoldResponse](t, e.do(http.MethodPost, "/v1/status/breakers/vector/hold", `{"reason":"reindex"}`), http.StatusOK)

	for _, c := range []struct {
		key      string
		operator bool
	}{{adminKey, true}, {queryKey, true}, {acmeQueryKey, false}, {acmeAdminKey, false}} {
		auth := []string{"Authorization", "Bearer " + c.key}
		list := decodeAs[api.BreakersResponse](t, serve(t, e.h, http.MethodGet, "/v1/status/breakers", nil, auth...), http.StatusOK)
		i := slices.IndexFunc(list.Breakers, func(s breaker.Snapshot) bool { return s.Name == "vector" })
		h := list.Breakers[i].Hold
		if h == nil || h.Since.IsZero() {
			t.Fatalf("%s: vector's hold %+v; want it shown with its time", c.key, h)
		}
		if named := h.By != "" || h.Reason != ""; named != c.operator {
			t.Errorf("%s: hold %+v; operator shown = %v, want %v", c.key, h, named, c.operator)
		}
		page := decodeAs[api.EventsResponse](t, serve(t, e.h, http.MethodGet, "/v1/status/events", nil, auth...), http.StatusOK)
		if len(page.Events) != 3 {
			t.Fatalf("%s: %d events, want 3 (held, released, held)", c.key, len(page.Events))
		}
		for _, ev := range page.Events {
			b := ev.Breaker
			if named := b.By != "" || b.Note != "" || b.ReleasedHoldOf != ""; named != c.operator {
				t.Errorf("%s: event %d %+v; operator shown = %v, want %v", c.key, ev.Seq, b, named, c.operator)
			}
		}
	}
}

// Issue 29 item 6: a hold's reason is shown to every operator (console,
// `ragd breakers`, the timeline, holds.json) beside names: what ids may
// not hold (bidirectional overrides, zero-width and other invisible
// characters) it may not hold either, or U+202E would reverse what an
// operator reads. Letters of any script and plain spaces stay.
func TestHoldReasonRefusesInvisibleCharacters(t *testing.T) {
	reg := breaker.NewRegistry(breaker.Config{FailureThreshold: 2, ResetTimeout: time.Second, HalfOpenMaxCalls: 1, SuccessThreshold: 1})
	reg.Get(spi.SourceGraph)
	e := newEnv(t, func(c *api.Config) { c.Breakers = reg })
	for _, reason := range []string{"upgrade \u202egnp.exe", "a\u200bb", "x\u2066y\u2069", "\ufeffbom", "nbsp\u00a0here", "line\u2028sep"} {
		body, _ := json.Marshal(api.HoldRequest{Reason: reason})
		d := wantError(t, e.do(http.MethodPost, "/v1/status/breakers/graph/hold", body), http.StatusBadRequest, api.CodeInvalidParameter)
		if d.Field != "reason" || strings.Contains(d.Message, reason) {
			t.Errorf("reason %+q: field %q, message %q", reason, d.Field, d.Message)
		}
	}
	h := decodeAs[api.HoldResponse](t, e.do(http.MethodPost, "/v1/status/breakers/graph/hold", `{"reason":"Wartung: Neo4j 5.27 – café"}`), http.StatusOK)
	if !h.Held {
		t.Fatalf("a plain reason: %+v", h)
	}
}
