package api

import (
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/labstack/echo/v4"

	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/internal/faults"
)

// pprofRoutes are Go's runtime profiles, mounted under /debug/pprof/ when
// server.pprof is on. They are operator tools, not API: they are absent
// from the OpenAPI document and from the HTTP metrics' route labels.
var pprofRoutes = map[string]http.HandlerFunc{
	"/debug/pprof/":        pprof.Index,
	"/debug/pprof/cmdline": pprof.Cmdline,
	"/debug/pprof/profile": pprof.Profile,
	"/debug/pprof/symbol":  pprof.Symbol,
	"/debug/pprof/trace":   pprof.Trace,
	"/debug/pprof/:name":   nil, // heap, goroutine, allocs, block, mutex, threadcreate
}

// debugAccess admits the operator tools under /debug/: an admin key not
// bound to a tenant; with auth off, a peer on loopback.
func (s *Server) debugAccess(c echo.Context) error {
	p := principal(c)
	if p == nil || p.Role != config.RoleAdmin || p.Tenant != "" {
		return newError(http.StatusForbidden, CodeForbidden, "debug endpoints need an admin key that is not bound to a tenant")
	}
	if !s.auth.enabled && !loopbackPeer(c.Request()) {
		return newError(http.StatusForbidden, CodeForbidden, "with auth off, debug endpoints serve loopback peers only")
	}
	return nil
}

// mountPprof registers the profile handlers (see debugAccess).
func (s *Server) mountPprof(e *echo.Echo) {
	for path, h := range pprofRoutes {
		h := h
		s.paths[path] = true // metric labels
		e.GET(path, func(c echo.Context) error {
			if err := s.debugAccess(c); err != nil {
				return err
			}
			var ph http.Handler = h
			if h == nil {
				name, _ := pathParam(c, "name")
				ph = pprof.Handler(name)
			}
			return foreign(ph, "no such profile")(c)
		}, s.requireAccess(access{role: config.RoleAdmin}))
	}
}

func loopbackPeer(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// mountFaults registers the fault-injection endpoints (see debugAccess):
//
//	GET    /debug/faults          the faults set, by source
//	PUT    /debug/faults/:source  set one: {"delay_ms":N,"hang":bool,"fail":bool}
//	DELETE /debug/faults/:source  clear one
func (s *Server) mountFaults(e *echo.Echo) {
	in := s.cfg.Faults
	admin := s.requireAccess(access{role: config.RoleAdmin})
	s.paths["/debug/faults"], s.paths["/debug/faults/:source"] = true, true // metric labels
	e.GET("/debug/faults", func(c echo.Context) error {
		if err := s.debugAccess(c); err != nil {
			return err
		}
		return s.writeJSON(c, http.StatusOK, in.List())
	}, admin)
	set := func(c echo.Context, f faults.Fault) error {
		if err := s.debugAccess(c); err != nil {
			return err
		}
		source, _ := pathParam(c, "source") // a bad escape names no source: Set refuses it
		if err := in.Set(source, f); err != nil {
			return fieldError(CodeInvalidBody, "source", "%v", err)
		}
		return s.writeJSON(c, http.StatusOK, in.List())
	}
	e.PUT("/debug/faults/:source", func(c echo.Context) error {
		var f faults.Fault
		if err := s.decodeJSON(c, &f); err != nil {
			return err
		}
		return set(c, f)
	}, admin, s.readBody(s.bodyLimit("/debug/faults/:source")))
	e.DELETE("/debug/faults/:source", func(c echo.Context) error { return set(c, faults.Fault{}) }, admin)
}
