package wire

import "time"

// Inventory is what GET /v1/status/server reports about the wiring,
// supplied by api.Config.Inventory.
type Inventory struct {
	Sources  []SourceInfo  `json:"sources"`
	Embedder *EmbedderInfo `json:"embedder,omitempty"`
	Stores   []StoreInfo   `json:"stores"`
}

// SourceInfo is one query source's configuration and guard.
type SourceInfo struct {
	Name string `json:"name"`
	// Enabled: queries use the source unless they switch it off. A source
	// disabled in rag.yaml (enabled: false, or weight 0) takes part only
	// in queries that enable it.
	Enabled bool    `json:"enabled"`
	Weight  float64 `json:"weight"`
	// TimeoutMS is the operator's per-call deadline, the one its breaker
	// and limit judge calls by.
	TimeoutMS int `json:"timeout_ms"`
	// Guard is the source's adaptive limit, calls in flight, sheds and
	// timeouts; absent when the source has no guard.
	Guard *GuardSnapshot `json:"guard,omitempty"`
}

// EmbedderInfo names the embedder: its kind in rag.yaml and the identity
// of the vector space it produces.
type EmbedderInfo struct {
	Kind      string `json:"kind"`
	Identity  string `json:"identity"`
	Dimension int    `json:"dimension"`
}

// StoreInfo is one store.
type StoreInfo struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Role is "record" (the system of record) or "derived" (applies the
	// record's change log).
	Role string `json:"role"`
	// Documents is how many documents it holds, of every tenant; absent
	// when it cannot say (or did not in time), and for keys bound to a
	// tenant.
	Documents *int `json:"documents,omitempty"`
	// Dormant marks a derived store that is not kept because nothing
	// reads it (the embedded graph of the shipped rag.yaml); the first
	// query that asks for it builds it from the change log.
	Dormant bool `json:"dormant,omitempty"`
}

// ServerResponse is the body of GET /v1/status/server: which ragd this is
// (a new Instance at every start, so a page can tell a restart from a
// pause), who is asking, and what it is made of.
type ServerResponse struct {
	Instance  string    `json:"instance"`
	StartedAt time.Time `json:"started_at"`
	Now       time.Time `json:"now"`
	UptimeS   float64   `json:"uptime_s"`
	Version   string    `json:"version"`
	// AuthEnabled: requests need a key.
	AuthEnabled bool `json:"auth_enabled"`
	// DebugFaults: fault injection is served under /debug/faults
	// (server.debug_faults), for drills only; the console shows a banner.
	DebugFaults bool `json:"debug_faults,omitempty"`
	// Key is the caller's key: its name, role and bound tenant.
	Key KeyInfo `json:"key"`
	Inventory
}

// KeyInfo describes the caller's key.
type KeyInfo struct {
	Name   string `json:"name"`
	Role   string `json:"role"`
	Tenant string `json:"tenant,omitempty"`
}

// GuardSnapshot is a source guard's counters (guard.Snapshot), for status
// reports and metrics.
type GuardSnapshot struct {
	Name string `json:"name"`
	// Limit and Inflight are the concurrency limit and the calls in
	// flight; both 0 without a limiter.
	Limit    int `json:"limit"`
	Inflight int `json:"inflight"`
	// ShedTotal counts calls refused at the limit.
	ShedTotal uint64 `json:"shed_total"`
	// Per-source timeouts by verdict: counted against the breaker; busy
	// (another call to the source succeeded while it ran); same stall (it
	// began before the last counted timeout ended).
	TimeoutsCounted   uint64 `json:"timeouts_counted"`
	TimeoutsBusy      uint64 `json:"timeouts_busy"`
	TimeoutsSameStall uint64 `json:"timeouts_same_stall"`
	// Breaker is the circuit breaker's name, empty without one.
	Breaker string `json:"breaker,omitempty"`
}
