package wire

import (
	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/internal/events"
	"github.com/ragd/ragd/spi"
)

// BreakersResponse is the body of GET /v1/status/breakers.
type BreakersResponse struct {
	Breakers []breaker.Snapshot `json:"breakers"`
	Total    int                `json:"total"`
}

// ForceCloseResponse is the body of POST
// /v1/status/breakers/{name}/force-close.
type ForceCloseResponse struct {
	Breaker      breaker.Snapshot `json:"breaker"`
	ForcedClosed bool             `json:"forced_closed"`
}

// ForceOpenResponse is the body of POST
// /v1/status/breakers/{name}/force-open.
type ForceOpenResponse struct {
	Breaker    breaker.Snapshot `json:"breaker"`
	ForcedOpen bool             `json:"forced_open"`
}

// HealthResponse is the body of GET /v1/status/health.
//
// Components holds one entry per configured component ("vector",
// "keyword", "graph", "embedder") and one per circuit breaker
// ("breaker:vector", ...). Status is the roll-up:
//
//   - down: no retrieval source (vector, keyword, graph) is usable — a
//     source is usable when its health is up or degraded and its breaker,
//     if any, is not open; the vector source also needs the embedder (its
//     health not down, its breaker not open), which embeds every text
//     query; queries cannot be answered;
//   - degraded: at least one retrieval source is usable but some component
//     is not up (a source or the embedder down or degraded, a breaker open
//     or half-open); queries are answered, possibly partially;
//   - up: every component is up.
type HealthResponse struct {
	Status     spi.HealthStatus           `json:"status"`
	Components map[string]ComponentHealth `json:"components"`
	// Usable lists the retrieval sources that can serve queries now and
	// that queries use unless they switch them off.
	Usable []string `json:"usable"`
	// Disabled lists the query sources a query leaves out unless it
	// enables them (off, or weight 0, in rag.yaml); they are never usable.
	Disabled []string `json:"disabled,omitempty"`
	// Log is the change log's head and each derived store's lag; absent
	// when the record keeps no log or cannot be read. A store whose applies
	// are failing makes the status degraded.
	Log *LogStatus `json:"log,omitempty"`
}

// ComponentHealth is one component's entry in HealthResponse.
type ComponentHealth struct {
	Status    spi.HealthStatus `json:"status"`
	Detail    string           `json:"detail,omitempty"`
	LatencyMS *float64         `json:"latency_ms,omitempty"`
	// Breaker entries only.
	State     string `json:"state,omitempty"`
	RetryInMS int64  `json:"retry_in_ms,omitempty"`
	// Lag is a derived store's lag behind the change log (keyword, graph
	// entries only; the same figures as HealthResponse.Log).
	Lag *ComponentLag `json:"lag,omitempty"`
}

// ComponentLag is how far a derived store is behind the change log.
type ComponentLag struct {
	Behind     uint64  `json:"behind"`
	LagSeconds float64 `json:"lag_seconds"`
}

// ReadyResponse is the body of GET /readyz.
type ReadyResponse struct {
	Status string   `json:"status"` // "ready" or "not_ready"
	Reason string   `json:"reason,omitempty"`
	Usable []string `json:"usable"`
}

// LiveResponse is the body of GET /healthz.
type LiveResponse struct {
	Status  string `json:"status"` // always "ok"
	Version string `json:"version,omitempty"`
}

// HoldRequest is the optional body of POST
// /v1/status/breakers/{name}/hold, and of force-open and force-close.
type HoldRequest struct {
	// Reason says why, for the others who see the hold or the forced
	// transition on the timeline (at most api.MaxHoldReason characters, no
	// control or invisible characters: spi.ValidateNote). Keys bound to a
	// tenant are not shown it.
	Reason string `json:"reason"`
}

// HoldResponse is the body of POST /v1/status/breakers/{name}/hold.
type HoldResponse struct {
	Breaker breaker.Snapshot `json:"breaker"`
	Held    bool             `json:"held"`
}

// EventsResponse is the body of GET /v1/status/events.
type EventsResponse = events.Page
