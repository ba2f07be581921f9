package wire

// SourcesResponse is the body of GET /v1/status/sources: each source's
// latency and share over the last minute of queries (package
// sourcestats computes it).
type SourcesResponse struct {
	// SpanMS is how far back the summary looks.
	SpanMS int64 `json:"span_ms"`
	// Queries is the number of queries in the window.
	Queries int `json:"queries"`
	// Sources has one entry per source seen in the window, by name.
	Sources []SourceSummary `json:"sources"`
}

// SourceSummary is one source's entry in SourcesResponse.
type SourceSummary struct {
	Name string `json:"name"`
	// Answered counts the queries the source answered (status ok); Share
	// is Answered over SourcesResponse.Queries.
	Answered int     `json:"answered"`
	Share    float64 `json:"share"`
	// Statuses counts the queries by the source's status.
	Statuses map[Status]int `json:"statuses"`
	// Calls counts the calls made (time spent on the source), except those
	// cut off by a deadline the query chose and those that never reached
	// the backend (caller_deadline, skipped); P50MS and P99MS are their
	// latency percentiles, absent without calls.
	Calls int      `json:"calls"`
	P50MS *float64 `json:"p50_ms,omitempty"`
	P99MS *float64 `json:"p99_ms,omitempty"`
}
