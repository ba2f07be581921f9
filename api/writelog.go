package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/singleflight"

	"github.com/ragd/ragd/ingest"
)

// logCache holds the last change-log status for /v1/status/health, reused
// for HealthCacheTTL like the component checks. The record is queried
// without the lock held: concurrent callers share the query in flight
// (flight), and each waits for it only as long as its own context lasts.
type logCache struct {
	mu     sync.Mutex
	at     time.Time
	st     *ingest.LogStatus
	set    bool
	flight singleflight.Group
}

// logStatus returns the change log's lag per derived store, or nil when
// the record keeps no log or cannot be read (the vector component then
// says why) or when ctx ends before the query in flight answers.
func (s *Server) logStatus(ctx context.Context) *ingest.LogStatus {
	c := &s.lcache
	c.mu.Lock()
	if c.set && s.cfg.HealthCacheTTL >= 0 && s.now().Sub(c.at) < s.cfg.HealthCacheTTL {
		st := c.st
		c.mu.Unlock()
		return st
	}
	c.mu.Unlock()
	ch := c.flight.DoChan("log", func() (_ any, _ error) {
		var out *ingest.LogStatus
		defer func() {
			// DoChan runs this on a goroutine of its own, out of the
			// recoverer's reach: a panicking Writer must not end the
			// process.
			if p := recover(); p != nil {
				s.log.LogAttrs(ctx, slog.LevelError, "api: change-log status panicked")
			}
			c.mu.Lock()
			c.st, c.at, c.set = out, s.now(), true
			c.mu.Unlock()
		}()
		// Detached from the caller: the result is shared, and bounded by
		// HealthTimeout.
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.HealthTimeout)
		defer cancel()
		if st, err := s.cfg.Writer.Status(qctx); err == nil && len(st.Stores) > 0 {
			out = &st
		}
		return out, nil
	})
	select {
	case r := <-ch:
		st, _ := r.Val.(*ingest.LogStatus) // nil after a panic
		return st
	case <-ctx.Done():
		return nil
	}
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
