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
// Search is exact: vectors sit in one contiguous []float32 (normalised when
// the distance is cosine), and Retrieve scans them all, applying the tenant
// and metadata filter during the scan and keeping the best k in a heap. The
// scan is split across GOMAXPROCS goroutines once the collection is large
// enough to pay for them. It is meant for up to about 100,000 vectors of a
// few hundred dimensions; docs/vector.md has the measured latencies. Beyond
// that, use the PostgreSQL backend.
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
