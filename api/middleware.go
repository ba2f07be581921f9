package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// Keys of values stored in the echo context.
const (
	ctxRequestID = "ragd.request_id"
	ctxPrincipal = "ragd.principal"
	ctxErrorCode = "ragd.error_code"
	ctxBody      = "ragd.body"
)

// HeaderRequestID carries the request id in and out.
const HeaderRequestID = "X-Request-ID"

// maxRequestIDLen bounds a client-supplied request id.
const maxRequestIDLen = 128

// withRequestID takes a well-formed X-Request-ID from the client or mints
// one, stores it and echoes it in the response.
func withRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(HeaderRequestID)
		if !validRequestID(id) {
			id = newRequestID()
		}
		c.Set(ctxRequestID, id)
		c.Response().Header().Set(HeaderRequestID, id)
		return next(c)
	}
}

// validRequestID accepts 1-128 characters of [A-Za-z0-9._:-], so a
// client-supplied id is safe to log and echo.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		ok := b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' ||
			b == '.' || b == '_' || b == ':' || b == '-'
		if !ok {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

func requestID(c echo.Context) string {
	id, _ := c.Get(ctxRequestID).(string)
	return id
}

// observe answers any error the chain returns through the error handler,
// then records the HTTP metrics and writes one access-log line. Routes are
// labelled by their template, never the raw URL.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := s.now()
		s.metrics.inFlight.Inc()
		defer s.metrics.inFlight.Dec()
		if err := next(c); err != nil {
			c.Error(err)
		}
		elapsed := s.now().Sub(start)
		route, method := s.routeLabel(c), methodLabel(c.Request().Method)
		status := c.Response().Status
		s.metrics.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
		s.metrics.duration.WithLabelValues(route, method).Observe(elapsed.Seconds())
		s.observeHistory(c.Path(), status, elapsed)

		level := slog.LevelInfo
		if operational[route] {
			level = slog.LevelDebug
		}
		if !s.log.Enabled(c.Request().Context(), level) {
			return nil
		}
		attrs := []slog.Attr{
			slog.String("request_id", requestID(c)),
			slog.String("method", method),
			slog.String("route", route),
			slog.Int("status", status),
			slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
		}
		if p, ok := c.Get(ctxPrincipal).(*Principal); ok {
			attrs = append(attrs, slog.String("key", p.Name))
		}
		if code, ok := c.Get(ctxErrorCode).(string); ok {
			attrs = append(attrs, slog.String("code", code))
		}
		s.log.LogAttrs(c.Request().Context(), level, "api: request", attrs...)
		return nil
	}
}

// recoverer turns a panic into a logged 500. The panic value is logged only
// when it is a runtime error: any other value may carry request data.
func (s *Server) recoverer() echo.MiddlewareFunc {
	return middleware.RecoverWithConfig(middleware.RecoverConfig{
		StackSize:           8 << 10,
		DisableStackAll:     true,
		DisableErrorHandler: true,
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			msg := "panic value withheld"
			var re runtime.Error
			if errors.As(err, &re) {
				msg = re.Error()
			}
			s.log.LogAttrs(c.Request().Context(), slog.LevelError, "api: panic recovered",
				slog.String("request_id", requestID(c)),
				slog.String("route", s.routeLabel(c)),
				slog.String("panic", msg),
				slog.String("stack", string(stack)))
			return &apiError{Status: http.StatusInternalServerError,
				Detail: ErrorDetail{Code: CodeInternal, Message: "internal error"}, logged: true}
		},
	})
}

// refuseOptions answers OPTIONS on an existing route 405 like any other
// method the route does not have (echo would answer 204 without auth).
// OPTIONS is not part of the API: ragd serves no CORS.
func refuseOptions(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Method == http.MethodOptions {
			if _, routed := c.Get(echo.ContextKeyHeaderAllow).(string); routed {
				return echo.ErrMethodNotAllowed
			}
		}
		return next(c)
	}
}

// allowHeader is echo's Allow list for the matched route without OPTIONS,
// which ragd does not serve.
func allowHeader(c echo.Context) string {
	allow, _ := c.Get(echo.ContextKeyHeaderAllow).(string)
	var methods []string
	for _, m := range strings.Split(allow, ",") {
		if m = strings.TrimSpace(m); m != "" && m != http.MethodOptions {
			methods = append(methods, m)
		}
	}
	return strings.Join(methods, ", ")
}

// operational routes are exempt from the in-flight limit (a probe must
// not fail because the server is busy) and logged at debug level.
var operational = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// limitInFlight answers 429 when MaxInFlight requests are already being
// served. It never queues. It runs after authentication and after the body
// is read, so only admitted requests with their whole body hold a slot.
func (s *Server) limitInFlight(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
			return next(c)
		default:
			return newError(http.StatusTooManyRequests, CodeTooManyRequests,
				"more than %d requests in flight; retry later", cap(s.slots))
		}
	}
}

// saturated reports whether every in-flight slot is taken.
func (s *Server) saturated() bool { return len(s.slots) >= cap(s.slots) }

// withTimeout bounds the request's context by server.request_timeout_s.
// Handlers pass the context down; a deadline that expires answers 504.
func (s *Server) withTimeout(next echo.HandlerFunc) echo.HandlerFunc {
	d := time.Duration(s.cfg.Server.RequestTimeoutS) * time.Second
	return func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), d)
		defer cancel()
		c.SetRequest(c.Request().WithContext(ctx))
		return next(c)
	}
}

// routeLabel is the route template of a matched route, or "unmatched".
func (s *Server) routeLabel(c echo.Context) string {
	if p := c.Path(); s.paths[p] {
		return p
	}
	return "unmatched"
}

func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodHead, http.MethodOptions:
		return m
	}
	return "OTHER"
}
