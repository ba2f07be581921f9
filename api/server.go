package api

import (
	"cmp"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/ragd/ragd/config"
)

// Server is ragd's HTTP API. Create it with New; serve Handler (or the
// *http.Server from HTTPServer). It is safe for concurrent use.
type Server struct {
	cfg      Config
	e        *echo.Echo
	log      *slog.Logger
	now      func() time.Time
	auth     *authenticator
	metrics  *httpMetrics
	gatherer prometheus.Gatherer
	slots    chan struct{}
	openapi  []byte
	// paths are the registered route templates, for metric labels.
	paths  map[string]bool
	hcache healthCache
	tracer trace.Tracer
	lcache logCache
	// instance and started identify this server (Config.Instance).
	instance string
	started  time.Time
}

// route is one entry of the route table.
type route struct {
	method  string
	path    string
	access  access
	handler func(*Server) echo.HandlerFunc
	// body routes read a JSON body (see readBody).
	body bool
}

// routes is the whole API. The OpenAPI document must describe exactly
// these (a test walks echo's Routes() against it).
var routes = []route{
	{http.MethodPost, "/v1/query", access{role: config.RoleQuery}, (*Server).query, true},
	{http.MethodPost, "/v1/documents", access{role: config.RoleAdmin}, (*Server).upsertDocuments, true},
	{http.MethodPost, "/v1/documents/delete", access{role: config.RoleAdmin}, (*Server).deleteDocuments, true},
	{http.MethodGet, "/v1/documents/:id", access{role: config.RoleQuery}, (*Server).getDocument, false},
	{http.MethodDelete, "/v1/documents/:id", access{role: config.RoleAdmin}, (*Server).deleteDocument, false},
	{http.MethodGet, "/v1/status/breakers", access{role: config.RoleQuery}, (*Server).listBreakers, false},
	{http.MethodPost, "/v1/status/breakers/:name/force-close", access{role: config.RoleAdmin, global: true}, (*Server).forceClose, true},
	{http.MethodPost, "/v1/status/breakers/:name/force-open", access{role: config.RoleAdmin, global: true}, (*Server).forceOpen, true},
	{http.MethodPost, "/v1/status/breakers/:name/hold", access{role: config.RoleAdmin, global: true}, (*Server).hold, true},
	{http.MethodGet, "/v1/status/health", access{role: config.RoleQuery}, (*Server).health, false},
	{http.MethodPost, "/v1/status/check", access{role: config.RoleAdmin, global: true}, (*Server).check, false},
	{http.MethodGet, "/v1/status/events", access{role: config.RoleQuery}, (*Server).listEvents, false},
	{http.MethodGet, "/v1/status/sources", access{role: config.RoleQuery}, (*Server).sourceStats, false},
	{http.MethodGet, "/v1/status/server", access{role: config.RoleQuery}, (*Server).serverInfo, false},
	{http.MethodGet, "/v1/status/history", access{role: config.RoleQuery, global: true}, (*Server).historySummary, false},
	{http.MethodGet, "/healthz", access{public: PublicHealth}, (*Server).healthz, false},
	{http.MethodHead, "/healthz", access{public: PublicHealth}, (*Server).healthz, false},
	{http.MethodGet, "/readyz", access{public: PublicReady}, (*Server).readyz, false},
	{http.MethodHead, "/readyz", access{public: PublicReady}, (*Server).readyz, false},
	// /metrics counts every tenant's traffic: global, so a key bound to a
	// tenant may not read it (config refuses public metrics beside one).
	{http.MethodGet, "/metrics", access{public: PublicMetrics, global: true}, (*Server).metricsHandler, false},
	{http.MethodGet, "/openapi.json", access{public: PublicOpenAPI}, (*Server).openAPI, false},
}

// New validates cfg and builds the server with every route registered.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if isNil(cfg.Breakers) {
		cfg.Breakers = nil // a nil *breaker.Registry means "no registry"
	}
	if cfg.HealthTimeout == 0 {
		cfg.HealthTimeout = DefaultHealthTimeout
	}
	if cfg.HealthCacheTTL == 0 {
		cfg.HealthCacheTTL = DefaultHealthCacheTTL
	}
	s := &Server{
		cfg:   cfg,
		log:   cfg.Logger,
		now:   cfg.Now,
		auth:  newAuthenticator(cfg.Auth),
		slots: make(chan struct{}, cfg.Server.MaxInFlight),
		paths: map[string]bool{},
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.instance, s.started = cfg.Instance, cfg.StartedAt
	if s.instance == "" {
		s.instance = newRequestID()
	}
	if s.started.IsZero() {
		s.started = s.now()
	}
	reg, gatherer := cfg.Registerer, cfg.Gatherer
	if reg == nil && gatherer == nil {
		r := prometheus.NewRegistry()
		reg, gatherer = r, r
	} else if reg == nil {
		reg = prometheus.NewRegistry() // metrics of this server only, unserved
	}
	if gatherer == nil {
		gatherer = reg.(prometheus.Gatherer) // checked by Validate
	}
	s.gatherer = gatherer
	var err error
	if s.metrics, err = newHTTPMetrics(reg); err != nil {
		return nil, fmt.Errorf("api: metrics: %w", err)
	}
	if s.openapi, err = openAPIDocument(cfg.Version); err != nil {
		return nil, err
	}

	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.Debug = false
	e.Logger.SetOutput(io.Discard)
	e.StdLogger = log.New(io.Discard, "", 0)
	e.Server.ErrorLog = e.StdLogger
	e.TLSServer.ErrorLog = e.StdLogger
	e.HTTPErrorHandler = s.handleError
	s.tracer = newTracer(cfg.TracerProvider)
	e.Pre(routeEscaped)
	e.Use(withRequestID, s.traced, s.observe, s.recoverer(), refuseOptions, s.withTimeout)
	for _, r := range routes {
		// Authenticate, then read the body, and only then take an
		// in-flight slot: a client that stalls its headers or its body
		// holds no slot, so it cannot starve the others.
		mw := []echo.MiddlewareFunc{s.requireAccess(r.access)}
		if r.body {
			read := s.readBody(s.bodyLimit(r.path))
			if optionalBody[r.path] {
				read = allowEmptyBody(read)
			}
			mw = append(mw, read)
		}
		if !operational[r.path] {
			mw = append(mw, s.limitInFlight)
		}
		e.Add(r.method, r.path, r.handler(s), mw...)
		s.paths[r.path] = true
	}
	s.mountUI(e)
	if err := s.mountMCP(e); err != nil {
		return nil, err
	}
	if cfg.Server.Pprof {
		s.mountPprof(e)
	}
	if cfg.Faults != nil {
		s.mountFaults(e)
	}
	s.e = e
	return s, nil
}

// Handler returns the configured echo instance.
func (s *Server) Handler() http.Handler { return s.e }

// HTTPServer returns an *http.Server for s with the listen address and the
// header-read, read, write and idle timeouts of Config.Server (a zero
// ReadHeaderTimeoutS takes ReadTimeoutS), and the server's own errors
// logged through Config.Logger. The caller runs ListenAndServe and,
// on shutdown, Shutdown with a context bounded by shutdown_grace_s.
func (s *Server) HTTPServer() *http.Server {
	sc := s.cfg.Server
	sec := func(n int) time.Duration { return time.Duration(n) * time.Second }
	return &http.Server{
		Addr:              sc.Listen,
		Handler:           s.e,
		ReadHeaderTimeout: sec(cmp.Or(sc.ReadHeaderTimeoutS, sc.ReadTimeoutS)),
		ReadTimeout:       sec(sc.ReadTimeoutS),
		WriteTimeout:      sec(sc.WriteTimeoutS),
		IdleTimeout:       sec(sc.IdleTimeoutS),
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}
