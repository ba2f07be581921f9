package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/spi"
)

// Public operational endpoint names, as listed in config.AuthConfig.Public.
const (
	PublicHealth  = "health"  // GET /healthz
	PublicReady   = "ready"   // GET /readyz
	PublicMetrics = "metrics" // GET /metrics
	PublicOpenAPI = "openapi" // GET /openapi.json
)

var publicEndpoints = []string{PublicHealth, PublicReady, PublicMetrics, PublicOpenAPI}

// access is what a route requires.
type access struct {
	// role is the least role that may call the route: config.RoleQuery or
	// config.RoleAdmin; empty means any valid key, a metrics key included
	// (operational endpoints).
	role string
	// public, when set, names the config.AuthConfig.Public entry that makes
	// the route callable without a key.
	public string
	// global routes act for every tenant (circuit breakers): a key bound to
	// a tenant may not call them, whatever its role.
	global bool
}

// Principal is who made a request: the key's name, role and bound tenant
// (empty when the key is not bound). With auth off every request is the
// anonymous admin without a tenant.
type Principal struct {
	Name   string
	Role   string
	Tenant string
}

var anonymous = &Principal{Name: "anonymous", Role: config.RoleAdmin}

type storedKey struct {
	digest [sha256.Size]byte
	p      Principal
}

// authenticator holds the key digests. Keys themselves are not kept.
type authenticator struct {
	enabled bool
	keys    []storedKey
	public  map[string]bool
}

func newAuthenticator(a config.AuthConfig) *authenticator {
	au := &authenticator{enabled: authEnabled(a), public: map[string]bool{}}
	for _, p := range a.Public {
		au.public[p] = true
	}
	for _, k := range a.Keys {
		au.keys = append(au.keys, storedKey{
			digest: sha256.Sum256([]byte(k.Key)),
			p:      Principal{Name: k.Name, Role: k.Role, Tenant: k.Tenant},
		})
	}
	return au
}

// lookup finds the key whose digest equals the presented token's. Every
// stored digest is compared, each in constant time over a fixed 32 bytes,
// so neither the key's length nor its position leaks through timing.
func (au *authenticator) lookup(token string) *Principal {
	d := sha256.Sum256([]byte(token))
	found := -1
	for i := range au.keys {
		eq := subtle.ConstantTimeCompare(d[:], au.keys[i].digest[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return nil
	}
	p := au.keys[found].p
	return &p
}

// bearer extracts the token of an "Authorization: Bearer TOKEN" header.
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// roleAllows reports whether a key of role have may call a route that
// needs role need. A metrics key calls only routes that need no role (the
// operational endpoints).
func roleAllows(have, need string) bool {
	switch need {
	case config.RoleQuery:
		return have == config.RoleQuery || have == config.RoleAdmin
	case config.RoleAdmin:
		return have == config.RoleAdmin
	}
	return false
}

// requireAccess is the per-route auth middleware.
func (s *Server) requireAccess(a access) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !s.auth.enabled {
				c.Set(ctxPrincipal, anonymous)
				return next(c)
			}
			if a.public != "" && s.auth.public[a.public] {
				c.Set(ctxPrincipal, &Principal{Name: "public"})
				return next(c)
			}
			token, ok := bearer(c.Request().Header.Get(echo.HeaderAuthorization))
			if !ok {
				s.logAuth(c, "missing bearer token", "")
				return newError(http.StatusUnauthorized, CodeUnauthorized, "an API key is required: send Authorization: Bearer <key>")
			}
			p := s.auth.lookup(token)
			if p == nil {
				s.logAuth(c, "unknown API key", "")
				return newError(http.StatusUnauthorized, CodeUnauthorized, "invalid API key")
			}
			c.Set(ctxPrincipal, p)
			if a.role != "" && !roleAllows(p.Role, a.role) {
				s.logAuth(c, "role not allowed", p.Name)
				return newError(http.StatusForbidden, CodeForbidden, "the %s role may not call this route; %s is required", p.Role, a.role)
			}
			if a.global && p.Tenant != "" {
				s.logAuth(c, "tenant-bound key on a global route", p.Name)
				return newError(http.StatusForbidden, CodeForbidden, "this route acts for every tenant; a key bound to a tenant may not call it")
			}
			return next(c)
		}
	}
}

func (s *Server) logAuth(c echo.Context, reason, key string) {
	s.log.LogAttrs(c.Request().Context(), slog.LevelWarn, "api: request rejected",
		slog.String("request_id", requestID(c)),
		slog.String("route", s.routeLabel(c)),
		slog.String("reason", reason),
		slog.String("key", key))
}

// principal returns who made the request (set by requireAccess).
func principal(c echo.Context) *Principal {
	if p, ok := c.Get(ctxPrincipal).(*Principal); ok {
		return p
	}
	return anonymous
}

// visible reports whether a document of tenant may be seen by p: keys not
// bound to a tenant see every document (spi.Visible).
func (p *Principal) visible(tenant string) bool { return spi.Visible(p.Tenant, tenant) }
