package wire

import "time"

// SourcesResponse is the body of GET /v1/status/sources: the user impact
// and each source's latency, share and newest failure over the last
// minute of queries (package sourcestats computes it).
type SourcesResponse struct {
	// SpanMS is how far back the summary looks.
	SpanMS int64 `json:"span_ms"`
	// Queries is the number of queries in the window.
	Queries int `json:"queries"`
	// Answers is what the callers of those queries got.
	Answers Answers `json:"answers"`
	// Sources has one entry per source seen in the window, by name.
	Sources []SourceSummary `json:"sources"`
	// Failures has, per source, its newest failed call among every query
	// the window remembers (older than Span too), by source name.
	Failures []SourceFailure `json:"failures"`
}

// Answers counts the window's queries by what their callers got
// (retriever.AnswerOf); a query may be both partial and degraded. The
// shares are over SourcesResponse.Queries, zero without queries.
type Answers struct {
	Partial       int     `json:"partial"`
	Degraded      int     `json:"degraded"`
	Failed        int     `json:"failed"`
	PartialShare  float64 `json:"partial_share"`
	DegradedShare float64 `json:"degraded_share"`
	FailedShare   float64 `json:"failed_share"`
}

// SourceFailure is a source's newest failed call: an error, a timeout of
// the operator's deadline, or a shed call.
type SourceFailure struct {
	Source string `json:"source"`
	Status Status `json:"status"`
	// Error is the retriever's reason ("backend unavailable", "deadline
	// of 400ms exceeded", …): a fixed vocabulary and the operator's
	// numbers, never query text or a backend's own message.
	Error string    `json:"error"`
	At    time.Time `json:"at"`
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
