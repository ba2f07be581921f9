package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/spi"
)

// fakeClock is a settable clock for breakers.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// newRegistry returns a real breaker registry with vector, keyword, graph
// and embedder minted.
func newRegistry(t *testing.T, clock *fakeClock) *breaker.Registry {
	t.Helper()
	cfg := breaker.DefaultConfig()
	cfg.Now = clock.Now
	cfg.ResetTimeout = 30 * time.Second
	reg := breaker.NewRegistry(cfg)
	for _, n := range []string{"vector", "keyword", "graph", "embedder"} {
		reg.Get(n)
	}
	return reg
}

func TestBreakersListAndForceClose(t *testing.T) {
	clock := newFakeClock()
	reg := newRegistry(t, clock)
	e := newEnv(t, func(c *api.Config) { c.Breakers = reg })
	if _, err := reg.ForceOpen("graph"); err != nil {
		t.Fatal(err)
	}

	list := decodeAs[api.BreakersResponse](t, e.do(http.MethodGet, "/v1/status/breakers", nil, "Authorization", "Bearer "+queryKey), http.StatusOK)
	if list.Total != 4 || len(list.Breakers) != 4 {
		t.Fatalf("list %+v", list)
	}
	i := slices.IndexFunc(list.Breakers, func(s breaker.Snapshot) bool { return s.Name == "graph" })
	if i < 0 || list.Breakers[i].State != breaker.Open || list.Breakers[i].OpenedTotal != 1 || list.Breakers[i].RetryIn <= 0 {
		t.Fatalf("graph snapshot %+v", list.Breakers)
	}

	fc := decodeAs[api.ForceCloseResponse](t, e.do(http.MethodPost, "/v1/status/breakers/graph/force-close", nil), http.StatusOK)
	if !fc.ForcedClosed || fc.Breaker.Name != "graph" || fc.Breaker.State != breaker.Closed {
		t.Fatalf("force-close %+v", fc)
	}
	if b, _ := reg.Lookup("graph"); b.State() != breaker.Closed {
		t.Fatalf("breaker state %v after force-close", b.State())
	}
	wantError(t, e.do(http.MethodPost, "/v1/status/breakers/nope/force-close", nil), http.StatusNotFound, api.CodeUnknownBreaker)

	fo := decodeAs[api.ForceOpenResponse](t, e.do(http.MethodPost, "/v1/status/breakers/keyword/force-open", nil), http.StatusOK)
	if !fo.ForcedOpen || fo.Breaker.Name != "keyword" || fo.Breaker.State != breaker.Open || fo.Breaker.RetryIn <= 0 {
		t.Fatalf("force-open %+v", fo)
	}
	if b, _ := reg.Lookup("keyword"); b.State() != breaker.Open {
		t.Fatalf("breaker state %v after force-open", b.State())
	}
	wantError(t, e.do(http.MethodPost, "/v1/status/breakers/nope/force-open", nil), http.StatusNotFound, api.CodeUnknownBreaker)
	wantError(t, e.do(http.MethodPost, "/v1/status/breakers/keyword/force-open", nil, "Authorization", "Bearer "+queryKey), http.StatusForbidden, api.CodeForbidden)
}

func TestBreakersWithoutRegistry(t *testing.T) {
	var nilRegistry *breaker.Registry // typed nil: must count as "no registry"
	for name, b := range map[string]api.Breakers{"nil": nil, "typed nil": nilRegistry} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, func(c *api.Config) { c.Breakers = b })
			list := decodeAs[api.BreakersResponse](t, e.do(http.MethodGet, "/v1/status/breakers", nil), http.StatusOK)
			if list.Total != 0 || list.Breakers == nil {
				t.Fatalf("list %+v (want an empty array)", list)
			}
			wantError(t, e.do(http.MethodPost, "/v1/status/breakers/vector/force-close", nil), http.StatusNotFound, api.CodeUnknownBreaker)
			wantError(t, e.do(http.MethodPost, "/v1/status/breakers/vector/force-open", nil), http.StatusNotFound, api.CodeUnknownBreaker)
		})
	}
}

func TestForceCloseOtherErrors(t *testing.T) {
	e := newEnv(t, func(c *api.Config) {
		c.Breakers = &fakeBreakers{
			SnapshotFn: func() []breaker.Snapshot { return nil },
			ForceCloseFn: func(name string) (breaker.Snapshot, error) {
				if name == "gone" {
					return breaker.Snapshot{}, fmt.Errorf("registry: %w", breaker.ErrUnknownBreaker)
				}
				return breaker.Snapshot{}, errors.New("registry exploded")
			},
		}
	})
	wantError(t, e.do(http.MethodPost, "/v1/status/breakers/gone/force-close", nil), http.StatusNotFound, api.CodeUnknownBreaker)
	wantError(t, e.do(http.MethodPost, "/v1/status/breakers/x/force-close", nil), http.StatusInternalServerError, api.CodeInternal)
}

func TestHealthRollUp(t *testing.T) {
	type comps = map[string]spi.HealthStatus
	cases := []struct {
		name       string
		health     comps
		open       []string // breakers forced open
		halfOpen   bool     // advance the clock past the cooldown
		want       spi.HealthStatus
		wantUsable []string
		code       int
	}{
		{"all up", comps{"vector": "up", "keyword": "up", "graph": "up", "embedder": "up"}, nil, false, spi.StatusUp, []string{"vector", "keyword", "graph"}, 200},
		// The vector source needs the embedder for every text query (issue
		// 12 item 8).
		{"embedder down", comps{"vector": "up", "keyword": "up", "embedder": "down"}, nil, false, spi.StatusDegraded, []string{"keyword"}, 200},
		{"embedder breaker open", comps{"vector": "up", "keyword": "up", "embedder": "up"}, []string{"embedder"}, false, spi.StatusDegraded, []string{"keyword"}, 200},
		{"embedder breaker half-open", comps{"vector": "up", "keyword": "up", "embedder": "up"}, []string{"embedder"}, true, spi.StatusDegraded, []string{"vector", "keyword"}, 200},
		{"one source down", comps{"vector": "down", "keyword": "up"}, nil, false, spi.StatusDegraded, []string{"keyword"}, 200},
		{"source degraded still usable", comps{"vector": "degraded"}, nil, false, spi.StatusDegraded, []string{"vector"}, 200},
		{"every source down", comps{"vector": "down", "keyword": "down", "embedder": "up"}, nil, false, spi.StatusDown, []string{}, 503},
		{"breaker open makes its source unusable", comps{"vector": "up", "keyword": "up"}, []string{"vector"}, false, spi.StatusDegraded, []string{"keyword"}, 200},
		{"all breakers open", comps{"vector": "up", "keyword": "up"}, []string{"vector", "keyword"}, false, spi.StatusDown, []string{}, 503},
		{"half-open breaker is degraded but usable", comps{"vector": "up"}, []string{"vector"}, true, spi.StatusDegraded, []string{"vector"}, 200},
		{"unknown status counts as down", comps{"vector": "weird", "keyword": "up"}, nil, false, spi.StatusDegraded, []string{"keyword"}, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			reg := newRegistry(t, clock)
			for _, n := range tc.open {
				if _, err := reg.ForceOpen(n); err != nil {
					t.Fatal(err)
				}
			}
			if tc.halfOpen {
				clock.Advance(time.Minute)
			}
			e := newEnv(t, func(c *api.Config) {
				c.Breakers = reg
				c.Health = map[string]spi.HealthChecker{}
				for n, st := range tc.health {
					c.Health[n] = &fakeHealth{Status: st}
				}
			})
			h := decodeAs[api.HealthResponse](t, e.do(http.MethodGet, "/v1/status/health", nil, "Authorization", "Bearer "+queryKey), tc.code)
			if h.Status != tc.want || !slices.Equal(h.Usable, tc.wantUsable) {
				t.Fatalf("status %s usable %v, want %s %v; components %+v", h.Status, h.Usable, tc.want, tc.wantUsable, h.Components)
			}
			for n := range tc.health {
				if _, ok := h.Components[n]; !ok {
					t.Fatalf("component %s missing", n)
				}
			}
			for _, n := range []string{"vector", "keyword", "graph", "embedder"} {
				c, ok := h.Components["breaker:"+n]
				if !ok {
					t.Fatalf("breaker:%s missing", n)
				}
				want, wantState := spi.StatusUp, "closed"
				if slices.Contains(tc.open, n) {
					want, wantState = spi.StatusDown, "open"
					if tc.halfOpen {
						want, wantState = spi.StatusDegraded, "half_open"
					}
				}
				if c.Status != want || c.State != wantState {
					t.Fatalf("breaker:%s = %+v, want %s/%s", n, c, want, wantState)
				}
			}
		})
	}
}

func TestHealthChecksAreBoundedAndSafe(t *testing.T) {
	release := make(chan struct{})
	e := newEnv(t, func(c *api.Config) {
		c.HealthTimeout = 200 * time.Millisecond
		c.Health = map[string]spi.HealthChecker{
			"vector": &fakeHealth{HealthFn: func(ctx context.Context) spi.Health {
				<-ctx.Done()
				return spi.Health{Status: spi.StatusDown, Detail: "ping: " + context.Cause(ctx).Error()}
			}},
			"keyword": &fakeHealth{HealthFn: func(context.Context) spi.Health { panic("checker bug") }},
			"graph":   &fakeHealth{Status: spi.StatusUp},
			// Ignores its context, against the contract: reported down
			// once the grace period passes.
			"embedder": &fakeHealth{HealthFn: func(context.Context) spi.Health { <-release; return spi.Health{Status: spi.StatusUp} }},
		}
	})
	defer close(release)
	h := decodeAs[api.HealthResponse](t, e.do(http.MethodGet, "/v1/status/health", nil), http.StatusOK)
	if h.Components["vector"].Status != spi.StatusDown || h.Components["keyword"].Status != spi.StatusDown ||
		h.Components["graph"].Status != spi.StatusUp || h.Components["embedder"].Status != spi.StatusDown {
		t.Fatalf("components %+v", h.Components)
	}
	if h.Status != spi.StatusDegraded || !slices.Equal(h.Usable, []string{"graph"}) {
		t.Fatalf("status %s usable %v", h.Status, h.Usable)
	}
	if h.Components["graph"].LatencyMS == nil {
		t.Fatal("no latency reported")
	}
}

func TestHealthz(t *testing.T) {
	e := newEnv(t, func(c *api.Config) {
		// Liveness does not depend on any backend.
		c.Health = map[string]spi.HealthChecker{"vector": &fakeHealth{Status: spi.StatusDown}}
	})
	live := decodeAs[api.LiveResponse](t, serve(t, e.h, http.MethodGet, "/healthz", nil), http.StatusOK)
	if live.Status != "ok" || live.Version != "test" {
		t.Fatalf("healthz %+v", live)
	}
}

func TestReadyz(t *testing.T) {
	var notReady atomic.Bool
	vector := &fakeHealth{Status: spi.StatusUp}
	clock := newFakeClock()
	e := newEnv(t, func(c *api.Config) {
		c.Now = clock.Now
		c.Health = map[string]spi.HealthChecker{"vector": vector}
		c.Ready = func(context.Context) error {
			if notReady.Load() {
				return errors.New("index load at 40% from /secret/path")
			}
			return nil
		}
	})
	r := decodeAs[api.ReadyResponse](t, serve(t, e.h, http.MethodGet, "/readyz", nil), http.StatusOK)
	if r.Status != "ready" || !slices.Equal(r.Usable, []string{"vector"}) {
		t.Fatalf("readyz %+v", r)
	}
	notReady.Store(true)
	rec := serve(t, e.h, http.MethodGet, "/readyz", nil)
	r = decodeAs[api.ReadyResponse](t, rec, http.StatusServiceUnavailable)
	if r.Status != "not_ready" || r.Reason == "" || rec.Body.String() == "" {
		t.Fatalf("readyz %+v", r)
	}
	if got := rec.Body.String(); strings.Contains(got, "/secret/path") || strings.Contains(got, "40%") {
		t.Fatalf("readyz leaks the Ready error: %s", got)
	}
	notReady.Store(false)
	vector.Status = spi.StatusDown
	clock.Advance(api.DefaultHealthCacheTTL) // let the cached "up" expire
	r = decodeAs[api.ReadyResponse](t, serve(t, e.h, http.MethodGet, "/readyz", nil), http.StatusServiceUnavailable)
	if r.Reason != "no retrieval source is usable" {
		t.Fatalf("readyz %+v", r)
	}
}

func TestReadyzWithOpenBreakers(t *testing.T) {
	clock := newFakeClock()
	reg := newRegistry(t, clock)
	e := newEnv(t, func(c *api.Config) { c.Breakers = reg })
	decodeAs[api.ReadyResponse](t, serve(t, e.h, http.MethodGet, "/readyz", nil), http.StatusOK)
	for _, n := range []string{"vector", "keyword"} {
		if _, err := reg.ForceOpen(n); err != nil {
			t.Fatal(err)
		}
	}
	decodeAs[api.ReadyResponse](t, serve(t, e.h, http.MethodGet, "/readyz", nil), http.StatusServiceUnavailable)
	if _, err := reg.ForceClose("keyword"); err != nil {
		t.Fatal(err)
	}
	decodeAs[api.ReadyResponse](t, serve(t, e.h, http.MethodGet, "/readyz", nil), http.StatusOK)
}

func TestHealthResultsAreCached(t *testing.T) {
	var calls atomic.Int32
	counting := &fakeHealth{HealthFn: func(context.Context) spi.Health {
		calls.Add(1)
		return spi.Health{Status: spi.StatusUp}
	}}
	clock := newFakeClock()
	e := newEnv(t, func(c *api.Config) {
		c.Now = clock.Now
		c.HealthCacheTTL = 5 * time.Second
		c.Health = map[string]spi.HealthChecker{"vector": counting}
	})
	for range 3 {
		decodeAs[api.HealthResponse](t, e.do(http.MethodGet, "/v1/status/health", nil), http.StatusOK)
		decodeAs[api.ReadyResponse](t, serve(t, e.h, http.MethodGet, "/readyz", nil), http.StatusOK)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d health checks within the TTL, want 1", n)
	}
	clock.Advance(5 * time.Second)
	decodeAs[api.ReadyResponse](t, serve(t, e.h, http.MethodGet, "/readyz", nil), http.StatusOK)
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d health checks after the TTL, want 2", n)
	}

	// Breaker states are read live even while component health is cached,
	// and a breaker transition refreshes the cached component health, so a
	// component is never reported up next to its open breaker.
	reg := newRegistry(t, clock)
	var vectorStatus atomic.Value
	vectorStatus.Store(spi.StatusUp)
	var checks atomic.Int32
	e2 := newEnv(t, func(c *api.Config) {
		c.Now = clock.Now
		c.Breakers = reg
		c.HealthCacheTTL = time.Hour
		c.Health = map[string]spi.HealthChecker{"vector": &fakeHealth{HealthFn: func(context.Context) spi.Health {
			checks.Add(1)
			return spi.Health{Status: vectorStatus.Load().(spi.HealthStatus)}
		}}}
	})
	decodeAs[api.ReadyResponse](t, serve(t, e2.h, http.MethodGet, "/readyz", nil), http.StatusOK)
	vectorStatus.Store(spi.StatusDown)
	if _, err := reg.ForceOpen("vector"); err != nil {
		t.Fatal(err)
	}
	decodeAs[api.ReadyResponse](t, serve(t, e2.h, http.MethodGet, "/readyz", nil), http.StatusServiceUnavailable)
	h := decodeAs[api.HealthResponse](t, e2.do(http.MethodGet, "/v1/status/health", nil), http.StatusServiceUnavailable)
	if h.Components["vector"].Status != spi.StatusDown || h.Components["breaker:vector"].Status != spi.StatusDown {
		t.Fatalf("after the trip, component and breaker must agree: %+v", h.Components)
	}
	if n := checks.Load(); n != 2 {
		t.Fatalf("%d health checks, want 2 (one before, one after the transition)", n)
	}

	// A negative TTL disables the cache.
	calls.Store(0)
	e3 := newEnv(t, func(c *api.Config) {
		c.HealthCacheTTL = -1
		c.Health = map[string]spi.HealthChecker{"vector": counting}
	})
	for range 3 {
		decodeAs[api.ReadyResponse](t, serve(t, e3.h, http.MethodGet, "/readyz", nil), http.StatusOK)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("%d health checks with the cache off, want 3", n)
	}
}

func TestLongBreakerNameTruncatedOnRuneBoundary(t *testing.T) {
	clock := newFakeClock()
	e := newEnv(t, func(c *api.Config) { c.Breakers = newRegistry(t, clock) })
	name := "a" + strings.Repeat("é", 40) // 81 bytes; byte 64 falls inside an é
	rec := e.do(http.MethodPost, "/v1/status/breakers/"+name+"/force-close", nil)
	body := decodeAs[api.ErrorResponse](t, rec, http.StatusNotFound)
	if strings.Contains(body.Error.Message, `\x`) || !strings.Contains(body.Error.Message, "a"+strings.Repeat("é", 31)+"…") {
		t.Fatalf("message %q: want the name cut after 31 whole é", body.Error.Message)
	}
}

// TestTenantBoundKeysDoNotTouchGlobalState is issue 12 item 3: a key bound
// to a tenant may not force breakers, which act for every tenant, and does
// not see the details of component health, which describe every tenant's
// data (a document count).
func TestTenantBoundKeysDoNotTouchGlobalState(t *testing.T) {
	reg := newRegistry(t, newFakeClock())
	e := newEnv(t, func(c *api.Config) {
		c.Breakers = reg
		c.Health[spi.SourceKeyword] = &fakeHealth{HealthFn: func(context.Context) spi.Health {
			return spi.Health{Status: spi.StatusUp, Detail: "1400 documents"}
		}}
	})
	for _, verb := range []string{"force-open", "force-close"} {
		d := wantError(t, e.do(http.MethodPost, "/v1/status/breakers/vector/"+verb, nil, "Authorization", "Bearer "+acmeAdminKey),
			http.StatusForbidden, api.CodeForbidden)
		if !strings.Contains(d.Message, "tenant") {
			t.Errorf("%s: message %q does not say why", verb, d.Message)
		}
	}
	if b, _ := reg.Lookup("vector"); b.State() != breaker.Closed {
		t.Fatalf("a tenant-bound admin key moved the vector breaker to %v", b.State())
	}
	// An admin key without a tenant still may.
	decodeAs[api.ForceOpenResponse](t, e.do(http.MethodPost, "/v1/status/breakers/vector/force-open", nil), http.StatusOK)

	for _, key := range []string{acmeQueryKey, acmeAdminKey} {
		h := decodeAs[api.HealthResponse](t, e.do(http.MethodGet, "/v1/status/health", nil, "Authorization", "Bearer "+key), http.StatusOK)
		if kw := h.Components[spi.SourceKeyword]; kw.Status != spi.StatusUp || kw.Detail != "" {
			t.Errorf("tenant-bound key sees keyword health %+v", kw)
		}
	}
	h := decodeAs[api.HealthResponse](t, e.do(http.MethodGet, "/v1/status/health", nil, "Authorization", "Bearer "+queryKey), http.StatusOK)
	if kw := h.Components[spi.SourceKeyword]; kw.Detail != "1400 documents" {
		t.Errorf("an unbound key lost the detail: %+v", kw)
	}
}

// TestHealthReportsTheChangeLogLag: the log's head and each derived
// store's lag, on the component too; an apply error degrades the status;
// keys bound to a tenant see none of it (it describes every tenant's
// writes).
func TestHealthReportsTheChangeLogLag(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.HealthCacheTTL = -1 })
	e.writer.StatusFn = func(context.Context) (ingest.LogStatus, error) {
		return ingest.LogStatus{Head: 40, Stores: []ingest.StoreLag{
			{Store: "keyword", Applied: 37, Behind: 3, LagSeconds: 1.5, Error: "keyword: unavailable; nothing was written"}}}, nil
	}
	h := decodeAs[api.HealthResponse](t, e.do(http.MethodGet, "/v1/status/health", nil), http.StatusOK)
	if h.Log == nil || h.Log.Head != 40 || len(h.Log.Stores) != 1 || h.Log.Stores[0].Behind != 3 {
		t.Fatalf("log = %+v", h.Log)
	}
	if l := h.Components["keyword"].Lag; l == nil || l.Behind != 3 || l.LagSeconds != 1.5 {
		t.Fatalf("keyword component lag = %+v", l)
	}
	if h.Status != "degraded" {
		t.Fatalf("status %q with a failing applier, want degraded", h.Status)
	}
	h = decodeAs[api.HealthResponse](t, e.do(http.MethodGet, "/v1/status/health", nil, "Authorization", "Bearer "+acmeQueryKey), http.StatusOK)
	if h.Log != nil || h.Components["keyword"].Lag != nil {
		t.Fatalf("a tenant-bound key sees the change log: %+v %+v", h.Log, h.Components["keyword"])
	}
}
