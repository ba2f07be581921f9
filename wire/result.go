package wire

import "github.com/ragd/ragd/spi"

// Status is what happened to one source (or hydrator) during a query.
type Status string

// Source statuses.
const (
	// StatusOK: the source answered; its list was fused.
	StatusOK Status = "ok"
	// StatusCircuitOpen: the source's (or the embedder's) breaker was open;
	// it was skipped without being called.
	StatusCircuitOpen Status = "circuit_open"
	// StatusShed: the source was at its concurrency limit; it was skipped
	// without being called. It is busy, not unhealthy: the answer is
	// partial, not degraded, and the breaker counts nothing.
	StatusShed Status = "shed"
	// StatusError: the source failed (backend error, panic, rejected query).
	StatusError Status = "error"
	// StatusTimeout: a deadline the operator set ran out: the source's
	// own (retriever.sources.NAME.timeout_ms) or the query budget.
	StatusTimeout Status = "timeout"
	// StatusCallerDeadline: a deadline the request chose, shorter than the
	// operator's, ran out first: its sources.NAME.timeout_ms or its
	// budget_ms. It says nothing about the source: the answer is partial,
	// not degraded, and no breaker, limit, timeout metric or burst counts
	// it as a timeout.
	StatusCallerDeadline Status = "caller_deadline"
	// StatusDisabled: not configured on this server, or switched off.
	StatusDisabled Status = "disabled"
	// StatusSkipped: enabled but not applicable to this query (no text for
	// keyword or graph, no vector and no embedder, nothing to expand), or
	// the source found nothing to search in it (ReasonNothingToSearch: a
	// text with no word it indexes, answered without asking the backend).
	StatusSkipped Status = "skipped"
)

// SourceStatus reports one source's part in a query.
type SourceStatus struct {
	Status Status `json:"status"`
	// TookMS is the source's wall time, embedding included for vector.
	TookMS float64 `json:"took_ms"`
	// Returned is the number of refs the source returned (documents, for a
	// hydrator).
	Returned int `json:"returned"`
	// Error is a short operator-safe reason; it never contains query text.
	Error string `json:"error,omitempty"`
	// RetryInMS, for circuit_open, is how long until the breaker admits a
	// trial call.
	RetryInMS int64 `json:"retry_in_ms,omitempty"`
}

// Hit is one ranked result.
type Hit struct {
	ID string `json:"id"`
	// Rank is the 1-based position in the fused ranking (offset included).
	Rank  int     `json:"rank"`
	Score float64 `json:"score"`
	// Document is the hydrated document without its vector; nil when no
	// hydrator could provide it (the id is then listed in Result.Missing).
	Document *spi.Document `json:"document,omitempty"`
	// Explain, when the query asked for it, has one entry per fused list;
	// the entry is null when that source did not return the document.
	Explain map[string]*Contribution `json:"explain,omitempty"`
}

// Contribution is one source's part in a fused score: the document's 1-based
// rank in that source's list, the source's raw score for it, and the weighted
// amount it added to the fused score.
type Contribution struct {
	Rank         int     `json:"rank"`
	RawScore     float64 `json:"raw_score"`
	Contribution float64 `json:"contribution"`
}

// FusionSettings are the effective fusion settings of a query.
type FusionSettings struct {
	Mode string `json:"mode"`
	// K is the RRF rank constant; zero (omitted) for other modes.
	K      int `json:"k,omitempty"`
	Window int `json:"window"`
	// Weights are the weights of the sources enabled for this query.
	Weights map[string]float64 `json:"weights"`
	// Expand holds the stage-2 settings; nil when stage 2 was not enabled.
	Expand *ExpandSettings `json:"expand,omitempty"`
}

// ExpandSettings are the effective stage-2 settings.
type ExpandSettings struct {
	Seeds  int     `json:"seeds"`
	Hops   int     `json:"hops"`
	Limit  int     `json:"limit"`
	Weight float64 `json:"weight"`
}

// Result is the answer to a Query; it is also the JSON body of the HTTP
// search response.
type Result struct {
	Hits []Hit `json:"hits"`
	// Sources has an entry for vector, keyword, graph and graph_expand, and
	// one for the embedder when the query text had to be embedded.
	Sources map[string]SourceStatus `json:"sources"`
	// Partial: the answer is incomplete — an enabled source answered with
	// error, timeout, caller_deadline, circuit_open or shed, so its list is
	// missing from the fusion, or a document of the page could not be
	// hydrated (Missing is not empty).
	Partial bool `json:"partial"`
	// Degraded: a component was unhealthy during this query — a source
	// timed out (an operator's deadline; never caller_deadline), was
	// circuit-open, or failed for any reason other than rejecting the
	// query as invalid; or a hydrator failed, timed out or was
	// circuit-open, even if a fallback covered for it.
	Degraded bool           `json:"degraded"`
	Fusion   FusionSettings `json:"fusion"`
	// Missing lists the page ids for which no document was hydrated.
	Missing []string `json:"missing"`
	// Hydration has one entry per configured hydrator.
	Hydration map[string]SourceStatus `json:"hydration,omitempty"`
	TookMS    float64                 `json:"took_ms"`
	// Total is the number of fused candidates available to page through
	// (at most the window).
	Total  int `json:"total"`
	Offset int `json:"offset"`
	Limit  int `json:"limit"`
}
