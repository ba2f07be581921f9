package api

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/ragd/ragd/api/ui"
	"github.com/ragd/ragd/internal/events"
	"github.com/ragd/ragd/internal/sourcestats"
)

// Events is the operator timeline; *events.Ring implements it.
type Events interface {
	// Since returns the events after sequence number after, oldest first,
	// at most limit of them (Page.More when others follow), so that paging
	// reads every event once.
	Since(after uint64, limit int) events.Page
}

// SourceStats summarises recent per-source query outcomes;
// *sourcestats.Window implements it.
type SourceStats interface {
	// Snapshot summarises the recent queries of tenant ("" for all).
	Snapshot(tenant string) sourcestats.Snapshot
}

var (
	_ Events      = (*events.Ring)(nil)
	_ SourceStats = (*sourcestats.Window)(nil)
)

// CodeInvalidParameter answers a malformed URL query parameter.
const CodeInvalidParameter = "invalid_parameter"

// Bounds of GET /v1/status/events' limit parameter.
const (
	DefaultEventsLimit = 100
	MaxEventsLimit     = 1000
)

// listEvents serves GET /v1/status/events?after=SEQ&limit=N. Events carry
// names, states, counts and an operator's reason for a hold, no tenant
// data, so every key may read them.
func (s *Server) listEvents() echo.HandlerFunc {
	return func(c echo.Context) error {
		after, err := uintParam(c, "after", 0, 1<<63)
		if err != nil {
			return err
		}
		limit, err := uintParam(c, "limit", DefaultEventsLimit, MaxEventsLimit)
		if err != nil {
			return err
		}
		if limit == 0 {
			return fieldError(CodeInvalidParameter, "limit", "limit must be between 1 and %d", MaxEventsLimit)
		}
		page := events.Page{Events: []events.Event{}}
		if !isNil(s.cfg.Events) {
			page = s.cfg.Events.Since(after, int(limit))
		}
		if principal(c).Tenant != "" {
			operatorOnly(page.Events)
		}
		return s.writeJSON(c, http.StatusOK, page)
	}
}

// operatorOnly removes from evs, for a key bound to a tenant, who acted on
// a breaker and the reason they gave: those name other keys and carry the
// operators' notes, which are not a tenant's to read. The event itself
// (forced, held, released) stays. evs's Breaker payloads are shared with
// the ring, so changed ones are copies.
func operatorOnly(evs []events.Event) {
	for i := range evs {
		if b := evs[i].Breaker; b != nil && (b.By != "" || b.Note != "" || b.ReleasedHoldOf != "") {
			cp := *b
			cp.By, cp.Note, cp.ReleasedHoldOf = "", "", ""
			evs[i].Breaker = &cp
		}
	}
}

// sourceStats serves GET /v1/status/sources. A key bound to a tenant sees
// the figures of its tenant's queries only.
func (s *Server) sourceStats() echo.HandlerFunc {
	return func(c echo.Context) error {
		snap := sourcestats.Snapshot{Sources: []sourcestats.Source{}}
		if !isNil(s.cfg.Stats) {
			snap = s.cfg.Stats.Snapshot(principal(c).Tenant)
		}
		return s.writeJSON(c, http.StatusOK, snap)
	}
}

// uintParam parses the optional URL query parameter name as an integer in
// [0, maxV]; def when absent.
func uintParam(c echo.Context, name string, def, maxV uint64) (uint64, error) {
	v := c.QueryParam(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n > maxV {
		return 0, fieldError(CodeInvalidParameter, name, "%s must be an integer between 0 and %d", name, maxV)
	}
	return n, nil
}

// mountUI serves the operator console at /ui/. Its assets are static and
// public: every figure it shows comes from the API with the key the user
// types in, held by the page in memory only.
func (s *Server) mountUI(e *echo.Echo) {
	h := foreign(http.StripPrefix("/ui", ui.Handler()), "no such file")
	e.GET("/ui", func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, "/ui/") })
	e.GET("/ui/*", h)
	s.paths["/ui"], s.paths["/ui/*"] = true, true // metric labels
}
