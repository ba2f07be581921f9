package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/internal/faults"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// Searcher answers queries; *retriever.HybridRetriever implements it.
type Searcher interface {
	// Retrieve validates and runs q; see retriever.HybridRetriever.Retrieve
	// for the errors (a bad query is a *retriever.QueryError, a 400).
	Retrieve(ctx context.Context, q retriever.Query) (*retriever.Result, error)
}

// Writer is the write path; *ingest.Pipeline implements it. Upsert and
// Delete return one result per input, in input order; the write path
// validates each document and applies the tenant rule (opts.Tenant).
// Status reports the change log's lag per derived store and Check compares
// (and repairs) the derived stores; both return ingest.ErrNoLog when the
// record keeps no log.
type Writer interface {
	Upsert(ctx context.Context, docs []spi.Document, opts ingest.WriteOptions) []ingest.Result
	Delete(ctx context.Context, ids []string, opts ingest.WriteOptions) []ingest.Result
	Status(ctx context.Context) (ingest.LogStatus, error)
	Check(ctx context.Context, repair bool) (ingest.CheckReport, error)
}

// Breakers is the circuit-breaker registry; *breaker.Registry implements
// it. ForceClose and ForceOpen of an unknown name return an error matching
// breaker.ErrUnknownBreaker.
type Breakers interface {
	Snapshot() []breaker.Snapshot
	// ForceCloseBy closes a breaker by hand (releasing a hold); m names
	// the caller's key in the transition.
	ForceCloseBy(name string, m breaker.Manual) (breaker.Snapshot, error)
	// ForceOpenBy trips a breaker by hand until force-close or until the
	// cooldown admits trials again.
	ForceOpenBy(name string, m breaker.Manual) (breaker.Snapshot, error)
	// Hold keeps a breaker open for maintenance until force-close: no
	// cooldown, no trial, no probe.
	Hold(name string, m breaker.Manual) (breaker.Snapshot, error)
}

var (
	_ Searcher = (*retriever.HybridRetriever)(nil)
	_ Writer   = (*ingest.Pipeline)(nil)
	_ Breakers = (*breaker.Registry)(nil)
)

// ErrConfig is wrapped by every Config.Validate error.
var ErrConfig = errors.New("api: invalid config")

// DefaultHealthTimeout bounds each component health check when
// Config.HealthTimeout is zero.
const DefaultHealthTimeout = 2 * time.Second

// DefaultHealthCacheTTL is how long component health results are reused
// when Config.HealthCacheTTL is zero.
const DefaultHealthCacheTTL = time.Second

// retrievalSources are the components whose health decides whether ragd
// can answer queries at all.
var retrievalSources = spi.RetrievalSources()

// Config wires a Server.
type Config struct {
	// Searcher answers POST /v1/query. Required.
	Searcher Searcher
	// Writer performs POST /v1/documents and the deletes. Required.
	Writer Writer
	// Documents is the system of record: GET /v1/documents/{id} reads it.
	// Required.
	Documents spi.Hydrator
	// Breakers lists and force-closes circuit breakers; nil means breakers
	// are disabled (the list is empty, force-close answers 404).
	Breakers Breakers
	// Events is the operator timeline served by GET /v1/status/events;
	// nil answers an empty timeline.
	Events Events
	// Stats feeds GET /v1/status/sources; nil answers no figures.
	Stats SourceStats
	// History serves GET /v1/status/history and records every answered
	// API request; nil keeps none (the endpoint answers 404).
	History History
	// Inventory describes the sources, the embedder and the stores for
	// GET /v1/status/server; nil reports none.
	Inventory func(ctx context.Context) Inventory
	// DisabledSources are the query sources a query leaves out unless it
	// enables them (off, or weight 0, in rag.yaml): /v1/status/health
	// lists them apart and never counts them usable.
	DisabledSources []string
	// Instance and StartedAt identify this process in GET
	// /v1/status/server, so a page can tell a restart; empty, New makes a
	// random instance id and takes its own start time.
	Instance  string
	StartedAt time.Time
	// Health holds the component health checks reported by
	// /v1/status/health, keyed by component name: "vector", "keyword",
	// "graph" (the retrieval sources) and "embedder", as configured. At
	// least one retrieval source is required.
	Health map[string]spi.HealthChecker
	// HealthTimeout bounds each health check; zero means
	// DefaultHealthTimeout.
	HealthTimeout time.Duration
	// HealthCacheTTL is how long component health results are reused by
	// /v1/status/health and /readyz, so a flood of probes (which bypass the
	// in-flight limit) does not become a flood of backend pings. Zero means
	// DefaultHealthCacheTTL; negative disables the cache. Breaker states
	// are always read live.
	HealthCacheTTL time.Duration

	// Server supplies the body limit, the per-request timeout, the
	// in-flight limit and the listener settings of HTTPServer.
	Server config.ServerConfig
	// Ingest bounds document batches and id lists.
	Ingest config.IngestConfig
	// Auth holds the API keys and the public operational endpoints. Auth
	// is off only when Auth.Enabled is explicitly false.
	Auth config.AuthConfig

	// Registerer receives the HTTP metrics; Gatherer is what /metrics
	// serves. When Gatherer is nil, Registerer must also be a Gatherer
	// (a *prometheus.Registry is both). When both are nil a private
	// registry is used.
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	// TracerProvider makes a server span per request under the caller's
	// W3C trace context (traceparent); nil makes none.
	TracerProvider trace.TracerProvider

	// Logger receives JSON operational logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock for request durations; nil means time.Now.
	Now func() time.Time
	// Version is reported by /healthz and in the OpenAPI document.
	Version string
	// Faults, when set, is served under /debug/faults to admins (see
	// server.debug_faults): run-time fault injection for drills.
	Faults *faults.Injector
	// Ready, when set, is an extra readiness condition for /readyz
	// (for example "the initial index load has finished").
	Ready func(ctx context.Context) error
}

// Validate reports a configuration New would reject. It wraps ErrConfig.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...)))
	}
	if isNil(c.Searcher) {
		bad("Searcher is required")
	}
	if isNil(c.Writer) {
		bad("Writer is required")
	}
	if isNil(c.Documents) {
		bad("Documents (the system-of-record hydrator) is required")
	}
	retrieval := 0
	for name, h := range c.Health {
		if name == "" {
			bad("Health: empty component name")
		}
		if isNil(h) {
			bad("Health[%q] is nil", name)
		}
		if slices.Contains(retrievalSources, name) {
			retrieval++
		}
	}
	if retrieval == 0 {
		bad("Health must hold at least one retrieval source (vector, keyword or graph)")
	}
	if c.HealthTimeout < 0 {
		bad("HealthTimeout must not be negative")
	}
	s := c.Server
	if s.BodyLimitBytes <= 0 {
		bad("Server.BodyLimitBytes must be > 0, got %d", s.BodyLimitBytes)
	}
	if s.QueryBodyLimitBytes < 0 {
		bad("Server.QueryBodyLimitBytes must not be negative (0: BodyLimitBytes), got %d", s.QueryBodyLimitBytes)
	}
	if s.RequestTimeoutS <= 0 {
		bad("Server.RequestTimeoutS must be > 0, got %d", s.RequestTimeoutS)
	}
	if s.MaxInFlight <= 0 {
		bad("Server.MaxInFlight must be > 0, got %d", s.MaxInFlight)
	}
	for _, v := range []struct {
		name string
		v    int
	}{{"Server.ReadTimeoutS", s.ReadTimeoutS}, {"Server.WriteTimeoutS", s.WriteTimeoutS}, {"Server.IdleTimeoutS", s.IdleTimeoutS}} {
		if v.v < 0 {
			bad("%s must not be negative, got %d", v.name, v.v)
		}
	}
	if c.Ingest.MaxDocsPerRequest <= 0 {
		bad("Ingest.MaxDocsPerRequest must be > 0, got %d", c.Ingest.MaxDocsPerRequest)
	}
	if c.Ingest.MaxIDsPerRequest <= 0 {
		bad("Ingest.MaxIDsPerRequest must be > 0, got %d", c.Ingest.MaxIDsPerRequest)
	}
	if c.Ingest.MaxTextBytes <= 0 {
		bad("Ingest.MaxTextBytes must be > 0, got %d", c.Ingest.MaxTextBytes)
	}
	errs = append(errs, validateAuth(c.Auth)...)
	if c.Gatherer == nil && c.Registerer != nil {
		if _, ok := c.Registerer.(prometheus.Gatherer); !ok {
			bad("Gatherer is required when Registerer is not a prometheus.Gatherer")
		}
	}
	return errors.Join(errs...)
}

// authEnabled mirrors config.Config.AuthEnabled: only an explicit false
// turns auth off.
func authEnabled(a config.AuthConfig) bool { return a.Enabled == nil || *a.Enabled }

func validateAuth(a config.AuthConfig) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...)))
	}
	for i, p := range a.Public {
		if !slices.Contains(publicEndpoints, p) {
			bad("Auth.Public[%d]: unknown endpoint %q (want health, ready, metrics or openapi)", i, p)
		}
	}
	if !authEnabled(a) {
		return errs
	}
	if len(a.Keys) == 0 {
		bad("Auth: enabled but no keys configured")
	}
	seen := map[string]bool{}
	for i, k := range a.Keys {
		if k.Key == "" {
			bad("Auth.Keys[%d] (%s): empty key", i, k.Name)
		} else if seen[k.Key] {
			bad("Auth.Keys[%d] (%s): duplicates another key", i, k.Name)
		}
		seen[k.Key] = true
		if !slices.Contains(config.Roles, k.Role) {
			bad("Auth.Keys[%d] (%s): role must be one of %q, got %q", i, k.Name, config.Roles, k.Role)
		}
		if k.Tenant != "" {
			if err := spi.ValidateName(k.Tenant, spi.MaxNameBytes); err != nil {
				bad("Auth.Keys[%d] (%s): tenant: %v", i, k.Name, err)
			}
		}
	}
	return errs
}

// isNil reports whether an interface value is nil or holds a nil pointer
// (a nil *breaker.Registry passed as Breakers, say).
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Interface, reflect.Chan:
		return rv.IsNil()
	}
	return false
}
