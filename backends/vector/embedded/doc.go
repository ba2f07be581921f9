// Package embedded is ragd's in-process, persisted vector store: the
// zero-setup counterpart of package vector (PostgreSQL + pgvector) behind
// the same spi contracts, with the same scores and tie rule.
//
// Storage: a bbolt file, <Dir>/vectors.db, is the system of record, with
// the float32 vectors beside it in an append-only file, <Dir>/vectors.vec
// (vecfile.go). Each document is one record (tenant, metadata and the
// number of its vector's entry in a compact binary header, the rest as
// JSON, zstd-compressed when that makes it smaller: codec.go) written in
// one fsynced transaction per Upsert or Delete, after the vectors it
// names are durable, so a crash leaves either the old or the new state. At Open every record is decoded into memory; a file,
// record or vector that does not decode is reported as ErrCorrupt, a file
// held by another process as ErrLocked.
//
// Search. Memory holds each vector as int8 codes with a scale per row (of
// the vector normalised, when the distance is cosine); the float32 vectors
// stay on disk (vectors.vec). Below ANN.MinRows documents (150,000 by default) a
// search is exact: Retrieve scans the codes of every eligible row (an AVX2
// kernel on amd64, portable Go elsewhere), the tenant's and those a
// metadata filter matches, taken from per-pair and per-tenant postings
// (postings.go); the codes bound each row's true score from above and
// below, and only rows whose upper bound reaches the k-th best lower bound
// are scored in float32, read from disk (quant.go has the bound,
// rescore.go the scoring). The answer is the one a float32 scan of every
// row gives, ties included, for a quarter of the memory traffic. The scan
// is split across GOMAXPROCS goroutines once the collection is large
// enough to pay for them.
//
// From ANN.MinRows documents on, a background build (annbuild.go) trains
// an IVF index (ivf.go, kmeans.go): k-means centroids over a sample of the
// codes, and the rows listed by nearest centroid, renumbered so that each
// list is contiguous in memory. A search then ranks the centroids and
// scans, with the same bounds and rescoring, only the eligible rows of the
// best lists, as many as the share of eligible rows calls for (filters and
// tenants are applied while probing, not after); when the eligible rows
// are few enough that scanning them all costs less, it scans them all,
// exactly. The IVF is derived and never persisted: Open rebuilds it in the
// background, searching exactly meanwhile. docs/vector.md has the measured
// recall, latencies and CPU per query.
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
