package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/internal/history"
	"github.com/ragd/ragd/spi"
)

// History is the console's recent past (GET /v1/status/history), fed by
// every answered request; *history.Recorder implements it.
type History interface {
	Summary() history.Summary
	// ObserveRequest records one answered API request: its status code
	// and, for a query, its end-to-end duration.
	ObserveRequest(code int, d time.Duration, query bool)
}

var _ History = (*history.Recorder)(nil)

// HistoryResponse is the body of GET /v1/status/history.
type HistoryResponse = history.Summary

// MaxHoldReason bounds HoldRequest.Reason, in characters.
const MaxHoldReason = 200

// manual names the caller as the operator of a breaker action.
func manual(c echo.Context, note string) breaker.Manual {
	return breaker.Manual{By: principal(c).Name, Note: note}
}

// optionalBody are the body routes that may also be sent without one (no
// Content-Type needed then): the reason of a breaker action is optional.
var optionalBody = map[string]bool{
	"/v1/status/breakers/:name/hold":        true,
	"/v1/status/breakers/:name/force-open":  true,
	"/v1/status/breakers/:name/force-close": true,
}

// allowEmptyBody lets a request with an empty body (Content-Length 0)
// past read, as an empty body; any other goes through read.
func allowEmptyBody(read echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		withBody := read(next)
		return func(c echo.Context) error {
			if c.Request().ContentLength == 0 {
				c.Set(ctxBody, []byte{})
				return next(c)
			}
			return withBody(c)
		}
	}
}

// actionReason reads the optional body of a breaker action (a
// HoldRequest) and returns its reason, trimmed and checked.
func (s *Server) actionReason(c echo.Context) (string, error) {
	var req HoldRequest
	if body, _ := c.Get(ctxBody).([]byte); len(strings.TrimSpace(string(body))) > 0 {
		if err := s.decodeJSON(c, &req); err != nil {
			return "", err
		}
	}
	note := strings.TrimSpace(req.Reason)
	if n := utf8.RuneCountInString(note); n > MaxHoldReason {
		return "", fieldError(CodeInvalidParameter, "reason", "reason has %d characters, at most %d are allowed", n, MaxHoldReason)
	}
	if err := spi.ValidateNote(note); err != nil {
		return "", fieldError(CodeInvalidParameter, "reason", "reason: %s", reason(err))
	}
	return note, nil
}

// hold serves POST /v1/status/breakers/{name}/hold.
func (s *Server) hold() echo.HandlerFunc {
	return func(c echo.Context) error {
		note, err := s.actionReason(c)
		if err != nil {
			return err
		}
		return s.breakerAction(c, "held", func(b Breakers, name string) (breaker.Snapshot, error) {
			return b.Hold(name, manual(c, note))
		}, func(snap breaker.Snapshot) any { return HoldResponse{Breaker: snap, Held: true} })
	}
}

// breakerAction applies act to the breaker named in the path and answers
// body(snapshot).
func (s *Server) breakerAction(c echo.Context, verb string, act func(Breakers, string) (breaker.Snapshot, error), body func(breaker.Snapshot) any) error {
	name, ok := pathParam(c, "name")
	if !ok {
		return newError(http.StatusNotFound, CodeUnknownBreaker, "no such circuit breaker")
	}
	if s.cfg.Breakers == nil {
		return newError(http.StatusNotFound, CodeUnknownBreaker, "circuit breakers are not enabled on this server")
	}
	snap, err := act(s.cfg.Breakers, name)
	if err != nil {
		if errors.Is(err, breaker.ErrUnknownBreaker) {
			return newError(http.StatusNotFound, CodeUnknownBreaker, "no circuit breaker called %q", truncate(name, 64))
		}
		return err
	}
	s.log.LogAttrs(c.Request().Context(), slog.LevelInfo, "api: breaker "+verb,
		slog.String("request_id", requestID(c)),
		slog.String("breaker", snap.Name),
		slog.String("key", principal(c).Name))
	return s.writeJSON(c, http.StatusOK, body(snap))
}

// serverInfo serves GET /v1/status/server.
func (s *Server) serverInfo() echo.HandlerFunc {
	return func(c echo.Context) error {
		p := principal(c)
		now := s.now()
		resp := ServerResponse{
			Instance: s.instance, StartedAt: s.started, Now: now,
			UptimeS: now.Sub(s.started).Seconds(), Version: s.cfg.Version,
			AuthEnabled: s.auth.enabled,
			DebugFaults: s.cfg.Faults != nil,
			Key:         KeyInfo{Name: p.Name, Role: p.Role, Tenant: p.Tenant},
			Inventory:   Inventory{Sources: []SourceInfo{}, Stores: []StoreInfo{}},
		}
		if s.cfg.Inventory != nil {
			inv := s.cfg.Inventory(c.Request().Context())
			if inv.Sources != nil {
				resp.Sources = inv.Sources
			}
			if inv.Stores != nil {
				resp.Stores = inv.Stores
			}
			resp.Embedder = inv.Embedder
		}
		if p.Tenant != "" {
			// Document counts are every tenant's.
			stores := make([]StoreInfo, len(resp.Stores))
			for i, st := range resp.Stores {
				st.Documents = nil
				stores[i] = st
			}
			resp.Stores = stores
		}
		return s.writeJSON(c, http.StatusOK, resp)
	}
}

// historySummary serves GET /v1/status/history. It counts every tenant's
// traffic, so keys bound to a tenant may not read it (the route is global).
func (s *Server) historySummary() echo.HandlerFunc {
	return func(c echo.Context) error {
		if isNil(s.cfg.History) {
			return newError(http.StatusNotFound, CodeNoHistory, "this server keeps no history")
		}
		return s.writeJSON(c, http.StatusOK, s.cfg.History.Summary())
	}
}

// CodeNoHistory answers GET /v1/status/history on a server without one.
const CodeNoHistory = "no_history"

// observeHistory records one answered request in the history: API traffic
// only, not the status endpoints the console polls, the console's files,
// the debug endpoints or the probes. route is the matched route template
// (echo's c.Path(), which names the debug routes the metric labels do not).
func (s *Server) observeHistory(route string, status int, elapsed time.Duration) {
	if isNil(s.cfg.History) || operational[route] || strings.HasPrefix(route, "/v1/status/") ||
		strings.HasPrefix(route, "/ui") || strings.HasPrefix(route, "/debug/") || route == "/openapi.json" {
		return
	}
	s.cfg.History.ObserveRequest(status, elapsed, route == "/v1/query")
}
