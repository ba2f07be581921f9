// Package retriever is ragd's hybrid retriever: it fans a query out to the
// vector, keyword and graph sources concurrently, drops the sources that fail,
// time out, are shed at their concurrency limit or sit behind an open circuit
// breaker, fuses the surviving ranked lists (weighted Reciprocal Rank Fusion
// by default), optionally expands the best fused hits through the graph, and
// hydrates only the returned page from the system of record with fallbacks.
//
// retriever is to package spi what database/sql is to database/sql/driver:
// it knows backends only through the spi interfaces. Each source may have an
// spi.Gate (Config.Gates; package guard builds them): the retriever asks it
// before every call (an open circuit skips the source without starting a
// goroutine for it) and reports each call's spi.Outcome, judged by the
// operator's deadline for the source, never one the request chose, so that
// no request can move a gate every tenant shares.
//
// The fusion functions (FuseRRF, FuseScore, FuseDBSF) are pure and exported,
// so the evaluation runner and tests can use them directly.
//
// The retriever never logs query text, query vectors or document bodies.
package retriever
