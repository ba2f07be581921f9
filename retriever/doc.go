// Package retriever is ragd's hybrid retriever: it fans a query out to the
// vector, keyword and graph sources concurrently, drops the sources that fail,
// time out or sit behind an open circuit breaker, fuses the surviving ranked
// lists (weighted Reciprocal Rank Fusion by default), optionally expands the
// best fused hits through the graph, and hydrates only the returned page from
// the system of record with fallbacks.
//
// retriever is to package spi what database/sql is to database/sql/driver:
// it knows backends only through the spi interfaces. Backends may arrive
// wrapped in a circuit breaker (package breaker); the retriever discovers the
// breaker by type assertion and skips an open source without starting a
// goroutine for it.
//
// The fusion functions (FuseRRF, FuseScore, FuseDBSF) are pure and exported,
// so the evaluation runner and tests can use them directly.
//
// The retriever never logs query text, query vectors or document bodies.
package retriever
