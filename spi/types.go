package spi

import (
	"fmt"
	"time"
)

// Source names used in Ref.Source, breaker names and API responses.
const (
	SourceVector  = "vector"
	SourceKeyword = "keyword"
	SourceGraph   = "graph"
	// SourceGraphExpand names the stage-two graph expansion list.
	SourceGraphExpand = "graph_expand"
	// SourceEmbedder names the query embedder: its gate, its breaker and
	// its entry in a query's source statuses.
	SourceEmbedder = "embedder"
	// SourceDocumentEmbedder names the write path's document embedding: a
	// breaker and a concurrency bound of its own, so that a bulk ingest
	// neither trips nor starves query embedding. Queries never use it.
	SourceDocumentEmbedder = "document_embedder"
)

// The one registry of source names. Every list of sources in ragd (query
// options, statuses, breakers, gates, config keys) derives from these.

// RetrievalSources returns the first-stage retrieval sources in their fixed
// order.
func RetrievalSources() []string { return []string{SourceVector, SourceKeyword, SourceGraph} }

// QuerySources returns the names a query may configure: the retrieval
// sources and the expansion.
func QuerySources() []string { return append(RetrievalSources(), SourceGraphExpand) }

// GatedSources returns every name that has a gate (a concurrency limit and
// a breaker): the query sources and the embedder.
func GatedSources() []string { return append(QuerySources(), SourceEmbedder) }

// Backends returns the names that have a circuit breaker of their own: one
// per backend (the expansion shares the graph's), the query embedder and
// the document embedder.
func Backends() []string {
	return append(RetrievalSources(), SourceEmbedder, SourceDocumentEmbedder)
}

// Ref is one ranked hit from a retrieval backend: a document id, the
// backend's raw score (higher is better; its scale is backend specific) and
// the name of the source that produced it. A backend returns Refs ordered by
// descending Score, ties broken by ascending ID, so rank = index + 1.
type Ref struct {
	ID     string  `json:"id"`
	Score  float64 `json:"score"`
	Source string  `json:"source"`
}

// Document is the unit ragd stores and returns. ID is globally unique across
// tenants. Metadata values are typed (Value); every backend filters on
// them with the semantics of Filter.Match. Vector, Entities and Links are inputs for the vector and
// graph stores; a backend that does not keep them returns them empty from
// Hydrate.
type Document struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant,omitempty"`
	Title     string    `json:"title,omitempty"`
	Text      string    `json:"text,omitempty"`
	Metadata  Metadata  `json:"metadata,omitempty"`
	Vector    []float32 `json:"vector,omitempty"`
	Entities  []string  `json:"entities,omitempty"`
	Links     []string  `json:"links,omitempty"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// ValidateUpdatedAt reports an UpdatedAt no store can keep: outside the
// years 1 to 9999 once in UTC, the range RFC 3339 writes and every store
// holds. "9999-12-31T23:59:59-23:59" parses, but is in the year 10000 in
// UTC. The zero time (unset: the write path stamps it) passes. The error
// wraps ErrInvalidQuery and quotes no value.
func ValidateUpdatedAt(t time.Time) error {
	if t.IsZero() {
		return nil
	}
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return fmt.Errorf("%w: updated_at must lie between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z (in UTC)", ErrInvalidQuery)
	}
	return nil
}

// HealthStatus is a component's roll-up state.
type HealthStatus string

// Health states, ordered from best to worst.
const (
	StatusUp       HealthStatus = "up"
	StatusDegraded HealthStatus = "degraded"
	StatusDown     HealthStatus = "down"
)

// Health is a backend's self-report. Detail is a short operator-facing reason
// ("ping: connection refused", "circuit open"); it never contains query text
// or document bodies.
type Health struct {
	Status  HealthStatus  `json:"status"`
	Detail  string        `json:"detail,omitempty"`
	Latency time.Duration `json:"latency_ns,omitempty"`
}
