package api

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ragd/ragd/ingest"
)

// logCache holds the last change-log status for /v1/status/health, reused
// for HealthCacheTTL like the component checks.
type logCache struct {
	mu  sync.Mutex
	at  time.Time
	st  *ingest.LogStatus
	set bool
}

// logStatus returns the change log's lag per derived store, or nil when
// the record keeps no log or cannot be read (the vector component then
// says why).
func (s *Server) logStatus(ctx context.Context) *ingest.LogStatus {
	s.lcache.mu.Lock()
	defer s.lcache.mu.Unlock()
	if s.lcache.set && s.cfg.HealthCacheTTL >= 0 && s.now().Sub(s.lcache.at) < s.cfg.HealthCacheTTL {
		return s.lcache.st
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.HealthTimeout)
	defer cancel()
	st, err := s.cfg.Writer.Status(ctx)
	s.lcache.st, s.lcache.at, s.lcache.set = nil, s.now(), true
	if err == nil && len(st.Stores) > 0 {
		s.lcache.st = &st
	}
	return s.lcache.st
}

// check serves POST /v1/status/check: compare every derived store with the
// record by ids and versions; ?repair=true rewrites what differs.
func (s *Server) check() echo.HandlerFunc {
	return func(c echo.Context) error {
		repair := false
		switch c.QueryParam("repair") {
		case "", "false":
		case "true":
			repair = true
		default:
			e := newError(http.StatusBadRequest, CodeInvalidParameter, "repair must be true or false")
			e.Detail.Field = "repair"
			return e
		}
		rep, err := s.cfg.Writer.Check(c.Request().Context(), repair)
		if errors.Is(err, ingest.ErrNoLog) {
			return newError(http.StatusConflict, CodeNoChangeLog, "this server keeps no change log (no vector store): there is nothing to check derived stores against")
		}
		if err != nil {
			return err
		}
		return s.writeJSON(c, http.StatusOK, rep)
	}
}
