// Package api is ragd's HTTP API, built on echo: the query, document and
// status endpoints, liveness and readiness probes, Prometheus metrics and
// the OpenAPI document that describes them.
//
// The package only translates between HTTP and the domain packages: queries
// go to a Searcher (retriever.HybridRetriever), writes to a Writer
// (ingest.Pipeline), reads to the system-of-record spi.Hydrator, breaker
// status to a Breakers registry. Every request is validated before it
// reaches them, and every error leaves through one translator (the echo
// HTTPErrorHandler) as a status code and a body of the form
//
//	{"error": {"code": "invalid_limit", "message": "...", "request_id": "..."}}
//
// Bad input is always a 4xx answer; a 500 means a bug or an unexpected
// backend failure and is logged with the request id, never answered with
// internals. Logs carry request ids, route templates, key names and error
// codes, never query text or document bodies.
//
// Authentication is by bearer API key (config.AuthConfig): keys are stored
// as SHA-256 digests and compared in constant time; a key has the role
// "query" or "admin" and may be bound to a tenant, which then scopes every
// query, read, write and delete made with it.
//
// The package has no globals: the logger, the clock and the Prometheus
// registerer are injected through Config.
package api
