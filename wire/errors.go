package wire

// ErrorResponse is the body of every error answer.
type ErrorResponse struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail describes one error. Code is stable and machine-readable
// (see docs/api.md); Message is for people and never contains query text,
// document bodies or server internals.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// RequestID is the X-Request-ID of the request, to quote in reports.
	RequestID string `json:"request_id,omitempty"`
	// Field is the JSON path of the offending request field, when known.
	Field string `json:"field,omitempty"`
	// Offset is the byte offset of a JSON syntax or type error.
	Offset *int64 `json:"offset,omitempty"`
	// Required, Healthy and Sources are set for not_enough_sources (and
	// for a timeout when the query's own deadline left too few sources):
	// the min_sources the query needed, how many sources answered, and
	// every source's status.
	Required int                     `json:"required,omitempty"`
	Healthy  *int                    `json:"healthy,omitempty"`
	Sources  map[string]SourceStatus `json:"sources,omitempty"`
}
