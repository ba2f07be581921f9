// Package ingest is ragd's write path, shared by POST /v1/documents,
// `ragd ingest` and `ragd eval`.
//
// A Pipeline validates each document on its own, once (ids, tenants, sizes,
// UTF-8, NUL bytes, vectors), embeds the ones without a vector (batched),
// fills entities from an optional EntityExtractor, and commits the batch to
// the system of record (the vector store), which appends every change to
// its ordered change log in the same transaction (spi.ChangeLog). Tenant
// ownership is decided inside that transaction. The answer comes once the
// record has committed; a batch the record rejects is bisected so that only
// the documents it cannot hold fail.
//
// Derived stores (the keyword index, the graph) apply the log in the
// background (Pipeline.Run): each in order, from a checkpoint it keeps with
// its own data, never writing an older version over a newer one
// (spi.ChangeApplier). A crash, a race or an outage can delay a derived
// store but not make it diverge. Pipeline.Status reports how far each is
// behind, Pipeline.Check compares it with the record (and repairs it), and
// Pipeline.Compact trims the log.
//
// Input files are read by package ingest/corpus; package ingest/keyphrase
// offers a deterministic offline EntityExtractor.
package ingest
