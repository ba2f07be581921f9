package api

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/spi"
)

func (s *Server) snapshots() []breaker.Snapshot {
	if s.cfg.Breakers == nil {
		return []breaker.Snapshot{}
	}
	snaps := s.cfg.Breakers.Snapshot()
	if snaps == nil {
		snaps = []breaker.Snapshot{}
	}
	return snaps
}

// listBreakers serves GET /v1/status/breakers. A key bound to a tenant
// sees that a breaker is held, not who held it or why (as operatorOnly
// does for events).
func (s *Server) listBreakers() echo.HandlerFunc {
	return func(c echo.Context) error {
		snaps := s.snapshots()
		if principal(c).Tenant != "" {
			for i := range snaps {
				if h := snaps[i].Hold; h != nil {
					snaps[i].Hold = &breaker.Hold{Since: h.Since}
				}
			}
		}
		return s.writeJSON(c, http.StatusOK, BreakersResponse{Breakers: snaps, Total: len(snaps)})
	}
}

// forceClose serves POST /v1/status/breakers/{name}/force-close; it also
// releases a maintenance hold.
func (s *Server) forceClose() echo.HandlerFunc {
	return func(c echo.Context) error {
		note, err := s.actionReason(c)
		if err != nil {
			return err
		}
		return s.breakerAction(c, "force-closed", func(b Breakers, name string) (breaker.Snapshot, error) {
			return b.ForceCloseBy(name, manual(c, note))
		}, func(snap breaker.Snapshot) any { return ForceCloseResponse{Breaker: snap, ForcedClosed: true} })
	}
}

// forceOpen serves POST /v1/status/breakers/{name}/force-open.
func (s *Server) forceOpen() echo.HandlerFunc {
	return func(c echo.Context) error {
		note, err := s.actionReason(c)
		if err != nil {
			return err
		}
		return s.breakerAction(c, "force-opened", func(b Breakers, name string) (breaker.Snapshot, error) {
			return b.ForceOpenBy(name, manual(c, note))
		}, func(snap breaker.Snapshot) any { return ForceOpenResponse{Breaker: snap, ForcedOpen: true} })
	}
}

// healthCache holds the last component health results.
type healthCache struct {
	mu       sync.Mutex
	at       time.Time
	breakers string // breakerEpoch when comps was taken
	comps    map[string]ComponentHealth
}

// componentHealth returns every component's health, from the cache when
// it is younger than HealthCacheTTL and no breaker changed state since. One
// caller at a time runs the checks; the others wait for its result.
func (s *Server) componentHealth(ctx context.Context) map[string]ComponentHealth {
	ttl := s.cfg.HealthCacheTTL
	if ttl < 0 {
		return s.runHealthChecks(ctx)
	}
	epoch := s.breakerEpoch()
	s.hcache.mu.Lock()
	defer s.hcache.mu.Unlock()
	// A breaker transition invalidates the cache, so a component is never
	// reported up next to its open breaker.
	if s.hcache.comps == nil || s.now().Sub(s.hcache.at) >= ttl || s.hcache.breakers != epoch {
		// Detached from the caller: the result is shared, so one caller
		// going away must not record every component as down.
		s.hcache.comps = s.runHealthChecks(context.WithoutCancel(ctx))
		s.hcache.at = s.now()
		s.hcache.breakers = epoch
	}
	return maps.Clone(s.hcache.comps)
}

// breakerEpoch summarises every breaker's state and trip count; it changes
// whenever a breaker changes state.
func (s *Server) breakerEpoch() string {
	var b strings.Builder
	for _, snap := range s.snapshots() {
		fmt.Fprintf(&b, "%s=%s/%d;", snap.Name, snap.State, snap.OpenedTotal)
	}
	return b.String()
}

// runHealthChecks runs every health check concurrently, each bounded by
// HealthTimeout.
func (s *Server) runHealthChecks(ctx context.Context) map[string]ComponentHealth {
	type result struct {
		name string
		h    spi.Health
	}
	timeout := s.cfg.HealthTimeout
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	results := make(chan result, len(s.cfg.Health))
	for name, hc := range s.cfg.Health {
		go func() {
			h := spi.Health{Status: spi.StatusDown, Detail: "health check panicked"}
			defer func() {
				_ = recover() // a checker must not panic; if it does, it is down
				results <- result{name, h}
			}()
			start := s.now()
			h = hc.Health(ctx)
			if h.Latency == 0 {
				h.Latency = s.now().Sub(start)
			}
		}()
	}

	comps := make(map[string]ComponentHealth, len(s.cfg.Health))
	// Wait for every check, but not past the deadline: a checker that
	// ignores its context (against the spi contract) is reported down and
	// left to finish on its own into the buffered channel.
	grace := time.NewTimer(timeout + 100*time.Millisecond)
	defer grace.Stop()
	pending := len(s.cfg.Health)
wait:
	for pending > 0 {
		select {
		case r := <-results:
			pending--
			ms := float64(r.h.Latency.Microseconds()) / 1000
			comps[r.name] = ComponentHealth{Status: normStatus(r.h.Status), Detail: truncate(r.h.Detail, 200), LatencyMS: &ms}
		case <-grace.C:
			break wait
		}
	}
	for name := range s.cfg.Health {
		if _, ok := comps[name]; !ok {
			comps[name] = ComponentHealth{Status: spi.StatusDown, Detail: "health check did not return in time"}
		}
	}
	return comps
}

// checkHealth rolls the component health up with the live breaker states.
func (s *Server) checkHealth(ctx context.Context) HealthResponse {
	resp := HealthResponse{Components: s.componentHealth(ctx)}
	open := map[string]bool{}
	for _, snap := range s.snapshots() {
		st := breakerStatus(snap.State)
		resp.Components["breaker:"+snap.Name] = ComponentHealth{
			Status: st, State: snap.State.String(), RetryInMS: snap.RetryIn.Milliseconds(),
		}
		open[snap.Name] = snap.State == breaker.Open
	}

	resp.Usable = []string{}
	down := func(name string) bool {
		comp, ok := resp.Components[name]
		return ok && comp.Status == spi.StatusDown || open[name]
	}
	resp.Disabled = s.cfg.DisabledSources
	for _, name := range retrievalSources {
		if _, ok := resp.Components[name]; !ok || down(name) || slices.Contains(resp.Disabled, name) {
			continue
		}
		// The vector source embeds the text of every text query.
		if name == spi.SourceVector && down(spi.SourceEmbedder) {
			continue
		}
		resp.Usable = append(resp.Usable, name)
	}
	resp.Status = spi.StatusUp
	for _, comp := range resp.Components {
		if comp.Status != spi.StatusUp {
			resp.Status = spi.StatusDegraded
		}
	}
	if resp.Log = s.logStatus(ctx); resp.Log != nil {
		for _, l := range resp.Log.Stores {
			if l.Error != "" && resp.Status == spi.StatusUp {
				resp.Status = spi.StatusDegraded
			}
			if comp, ok := resp.Components[l.Store]; ok && !l.Dormant {
				comp.Lag = &ComponentLag{Behind: l.Behind, LagSeconds: l.LagSeconds}
				resp.Components[l.Store] = comp
			}
		}
	}
	if len(resp.Usable) == 0 {
		resp.Status = spi.StatusDown
	}
	return resp
}

// normStatus maps anything but up and degraded to down.
func normStatus(st spi.HealthStatus) spi.HealthStatus {
	switch st {
	case spi.StatusUp, spi.StatusDegraded:
		return st
	}
	return spi.StatusDown
}

func breakerStatus(st breaker.State) spi.HealthStatus {
	switch st {
	case breaker.Closed:
		return spi.StatusUp
	case breaker.HalfOpen:
		return spi.StatusDegraded
	}
	return spi.StatusDown
}

// health serves GET /v1/status/health: 200 while some retrieval source is
// usable (status up or degraded), 503 when none is (status down).
func (s *Server) health() echo.HandlerFunc {
	return func(c echo.Context) error {
		resp := s.checkHealth(c.Request().Context())
		if principal(c).Tenant != "" {
			// Details and the change log describe every tenant's data (a
			// document count, the writes of all) or the deployment: keys
			// bound to a tenant see statuses only.
			for name, comp := range resp.Components {
				comp.Detail, comp.Lag = "", nil
				resp.Components[name] = comp
			}
			resp.Log = nil
		}
		status := http.StatusOK
		if resp.Status == spi.StatusDown {
			status = http.StatusServiceUnavailable
		}
		return s.writeJSON(c, status, resp)
	}
}

// healthz serves GET /healthz, the liveness probe: 200 while the process
// serves requests. It checks no dependency.
func (s *Server) healthz() echo.HandlerFunc {
	return func(c echo.Context) error {
		return s.writeJSON(c, http.StatusOK, LiveResponse{Status: "ok", Version: s.cfg.Version})
	}
}

// readyz serves GET /readyz, the readiness probe: 200 when at least one
// retrieval source is usable, an in-flight slot is free and Config.Ready
// (if set) passes, else 503.
func (s *Server) readyz() echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		h := s.checkHealth(ctx)
		resp := ReadyResponse{Status: "ready", Usable: h.Usable}
		if len(h.Usable) == 0 {
			resp.Status, resp.Reason = "not_ready", "no retrieval source is usable"
		} else if s.saturated() {
			resp.Status, resp.Reason = "not_ready", fmt.Sprintf("%d requests in flight, the most server.max_in_flight allows", cap(s.slots))
		} else if s.cfg.Ready != nil {
			if err := s.cfg.Ready(ctx); err != nil {
				// The reason may hold internals and /readyz may be public:
				// log it, answer a generic reason.
				s.log.LogAttrs(ctx, slog.LevelWarn, "api: not ready",
					slog.String("request_id", requestID(c)), slog.String("error", err.Error()))
				resp.Status, resp.Reason = "not_ready", "the server is not ready yet"
			}
		}
		status := http.StatusOK
		if resp.Status != "ready" {
			status = http.StatusServiceUnavailable
		}
		return s.writeJSON(c, status, resp)
	}
}

// metricsHandler serves GET /metrics from the injected gatherer.
func (s *Server) metricsHandler() echo.HandlerFunc {
	h := promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	})
	return echo.WrapHandler(h)
}

// openAPI serves GET /openapi.json.
func (s *Server) openAPI() echo.HandlerFunc {
	return func(c echo.Context) error {
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, s.openapi)
	}
}
