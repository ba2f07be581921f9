// Package ingest is ragd's write path, shared by POST /v1/documents,
// `ragd ingest` and `ragd eval`.
//
// A Pipeline validates each document on its own, embeds the ones without a
// vector (batched), fills entities from an optional EntityExtractor, writes
// the system-of-record store first (the vector store; a document is
// accepted only when the record has it), then the derived stores (keyword,
// graph). A derived-store failure yields a "partial" result naming the store
// and queues the document in an in-memory repair queue that Repair replays;
// Rebuild / RebuildDerived repopulate a derived store from the record store
// through spi.Scanner when the queue is not enough (overflow, restart, a
// lost index).
//
// When no record store is configured (keyword-only deployments), the first
// derived store is the record.
//
// The package also reads input files (JSONL of spi.Document objects and
// BEIR corpus.jsonl) with line numbers in errors, keeps a Checkpoint for
// resumable ingestion, and offers KeyphraseExtractor, a deterministic
// offline entity extractor for corpora that carry no entities.
package ingest
