// Package embedded is ragd's in-process, persisted vector store: the
// zero-setup counterpart of package vector (PostgreSQL + pgvector) behind
// the same spi contracts, with the same scores and tie rule.
//
// Storage: one bbolt file, <Dir>/vectors.db, is the system of record. Each
// document is one record (tenant, metadata and the raw vector in a compact
// binary header, the rest as JSON) written in one fsynced transaction per
// Upsert or Delete, so a crash leaves either the old or the new state. At
// Open every record is decoded into memory; a file or record that does not
// decode is reported as ErrCorrupt, a file held by another process as
// ErrLocked.
//
// Search is exact. Memory holds each vector as int8 codes with a scale per
// row (of the vector normalised, when the distance is cosine); the float32
// vectors stay in the file. Retrieve scans the codes (an AVX2 kernel on amd64, portable Go
// elsewhere), applying the tenant and metadata filter during the scan
// (a filter's rows come from per-pair postings, postings.go); the
// codes bound each row's true score from above and below, and only rows
// whose upper bound reaches the k-th best lower bound are scored in float32,
// read from the file (quant.go has the bound, rescore.go the scoring). The answer is the one a float32 scan of every
// row gives, ties included, for a quarter of the memory traffic. The scan
// is split across GOMAXPROCS goroutines once the collection is large
// enough to pay for them. At 100,000 384-dimensional vectors a search
// costs 2.6–6 ms of CPU (the float32 scan cost 27 ms); docs/vector.md has
// the measured latencies.
// Beyond a few hundred thousand vectors, use the PostgreSQL backend.
//
// Scores are similarities, higher is closer, as in package vector:
//
//	cosine         cosine similarity (1 - cosine distance)  in [-1, 1]
//	l2             1 / (1 + euclidean distance)              in (0, 1]
//	inner_product  the inner product                         unbounded
//
// Ties are broken by ascending id. Under cosine distance a zero vector is
// rejected with spi.ErrInvalidQuery.
package embedded
