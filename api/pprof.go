package api

import (
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/labstack/echo/v4"

	"github.com/ragd/ragd/config"
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

// mountPprof registers the profile handlers. Access needs an admin key not
// bound to a tenant; with auth off, the peer must be on loopback.
func (s *Server) mountPprof(e *echo.Echo) {
	guard := func(c echo.Context) error {
		p := principal(c)
		if p == nil || p.Role != config.RoleAdmin || p.Tenant != "" {
			return newError(http.StatusForbidden, CodeForbidden, "profiles need an admin key that is not bound to a tenant")
		}
		if !s.auth.enabled && !loopbackPeer(c.Request()) {
			return newError(http.StatusForbidden, CodeForbidden, "with auth off, profiles are served to loopback peers only")
		}
		return nil
	}
	for path, h := range pprofRoutes {
		h := h
		e.GET(path, func(c echo.Context) error {
			if err := guard(c); err != nil {
				return err
			}
			if h == nil {
				pprof.Handler(c.Param("name")).ServeHTTP(c.Response(), c.Request())
				return nil
			}
			h(c.Response(), c.Request())
			return nil
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
