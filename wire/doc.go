// Package wire holds the JSON bodies of ragd's HTTP API: the query and its
// answer, document writes and their per-document results, the status,
// breaker and check reports, and the error body. The server encodes them
// (packages api, retriever, ingest and sourcestats use them under their
// old names, as type aliases) and the Go client decodes them, so the two
// cannot drift apart.
//
// wire is a leaf: it imports the standard library and the small packages
// its bodies are made of (spi, breaker, internal/events), never the server,
// a backend, a metrics or tracing library, so a program that imports only
// package client links little else (client's TestClientDependencies keeps
// the list). The query's own checks (Query.Validate and its Limits) live
// here with it: they read nothing but the query.
//
// testdata/golden pins each body's encoding byte for byte (TestGoldenJSON).
package wire
