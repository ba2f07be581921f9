// Package vcache keeps embeddings so that no text is embedded twice.
//
// With a real model, embedding is the expensive step of ragd: tens of
// milliseconds a document on a CPU, against microseconds for everything
// else a write does. Two caches sit in front of an spi.Embedder:
//
//   - Store is a persistent, content-addressed cache of vectors in one bbolt
//     file. An entry's key is the SHA-256 of the embedder's identity (the
//     vector space: kind, model, revision, prefixes), the role ("document"
//     or "query"), the tenant the text was sent for (spi.WithTenant marks
//     the call; none for untenanted texts) and the text; its value is the vector's float32 bits,
//     exactly as the embedder returned them, so a vector read back equals
//     the one computed. Store.Wrap puts it in front of an embedder: the
//     write path, `ragd reembed` (an interrupted run resumes without
//     re-embedding what it did) and `ragd eval` (a re-run embeds nothing)
//     use it. The cache is bounded by Config.MaxBytes: when an insert goes
//     over, the least recently used entries are evicted down to 90 % of
//     it. Recency is approximate to keep reads read-only: an entry is
//     moved to the young end on a hit only when it is in the older half of
//     the cache. Texts are never stored, only their hashes.
//   - NewLRU is a small in-memory LRU of query vectors (keyed by the same
//     hash), for the queries users repeat.
//
// Both keep each tenant's texts apart (TenantKey): a text one tenant sent
// is never a hit for another, so neither a faster answer nor a hit counter
// tells a tenant what another asked or wrote.
//
// Both are safe for concurrent use and pass every error of the embedder
// through unchanged, so the callers' error classification (the breaker's,
// the write path's bisection of rejected batches) sees the embedder's own.
package vcache
