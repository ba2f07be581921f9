// Package vector is ragd's PostgreSQL + pgvector backend: the semantic
// (nearest-neighbour) retrieval source and, when PostgreSQL is configured,
// the system of record for documents.
//
// One table holds every document — id, tenant, title, text, metadata
// (jsonb), entities, links, the embedding as vector(D) and updated_at — so
// derived indexes (the keyword index, the graph) can be rebuilt from it with
// Scan. Open creates the extension, the table and its indexes idempotently:
// an HNSW index on the embedding with the configured distance, a btree on
// tenant and a GIN (jsonb_path_ops) index on metadata.
//
// Retrieve pushes the tenant and metadata filters into SQL and runs the
// query with pgvector's iterative index scan (pgvector 0.8+) so that a
// filtered query still fills k. Scores are similarities, higher is closer:
//
//	cosine         1 - cosine distance          in [-1, 1]
//	l2             1 / (1 + euclidean distance)  in (0, 1]
//	inner_product  the inner product             unbounded
//
// Ties are broken by ascending id. Under cosine distance a zero vector has
// no direction; it is rejected with spi.ErrInvalidQuery on both Upsert and
// Retrieve (pgvector would not index it and would score it NaN).
//
// Errors: a connection that cannot be made or is lost, a server shutting
// down or a backend-side timeout wraps spi.ErrUnavailable; connecting fails
// within Config.ConnectTimeout (2s by default) so circuit breakers see fast
// failures. A bad vector, filter or document wraps spi.ErrInvalidQuery and is
// reported before the database is touched. A cancelled context yields an
// error wrapping ctx.Err(), never spi.ErrUnavailable.
package vector
