package spi

import "context"

// VectorRequest asks a vector backend for the K nearest documents to Vector.
// Tenant, when non-empty, restricts results to that tenant; Filter restricts
// them by metadata. Filtering is applied before the top-K cut, so a filtered
// request still returns up to K results when that many documents match.
type VectorRequest struct {
	Vector []float32
	K      int
	Tenant string
	Filter Filter
}

// KeywordRequest asks a keyword backend for the K best lexical matches to
// Text. Text is matched as plain words: characters such as ':' '(' '"' carry
// no meaning unless Syntax is true, in which case Text is parsed as the
// backend's own query language and a parse failure wraps ErrInvalidQuery.
type KeywordRequest struct {
	Text   string
	K      int
	Tenant string
	Filter Filter
	Syntax bool
}

// ExpandOptions bounds a graph expansion. Hops is 1 or 2; Limit caps the
// number of returned documents; Tenant, when non-empty, is never crossed:
// every document on a path, seeds and intermediate documents included,
// belongs to it.
//
// Filter, when non-empty, restricts the returned documents by metadata with
// the semantics of Filter.Match (docs/api.md, "Filters"). It applies
// to returned documents only: seeds and the intermediate documents a path
// passes through need not satisfy it, and a document that fails it is not
// returned but still connects the documents beyond it. Filtering does not
// change distances, paths or scores: the result is the unfiltered ranking
// with non-matching documents removed, cut at Limit afterwards, so a
// filtered expansion still returns up to Limit documents when that many
// match. An invalid filter (Filter.Validate) wraps ErrInvalidQuery.
type ExpandOptions struct {
	Hops   int
	Limit  int
	Tenant string
	Filter Filter
}

// Hydrator loads full documents by id.
type Hydrator interface {
	// Hydrate returns the documents for ids that exist, in the order of ids,
	// and the ids that do not exist in missing. A missing id is not an error.
	// Duplicate ids are returned once.
	Hydrate(ctx context.Context, ids []string) (docs []Document, missing []string, err error)
}

// HealthChecker reports a backend's health. It must return within ctx's
// deadline and never panic; an unreachable backend is StatusDown, not an error.
type HealthChecker interface {
	Health(ctx context.Context) Health
}

// VectorRetrievalBackend is the semantic (nearest-neighbour) source.
type VectorRetrievalBackend interface {
	// Retrieve returns up to req.K refs ordered by descending similarity
	// (higher is closer; for cosine distance, similarity = 1 - distance).
	// A vector whose length differs from the store's dimension, or that holds
	// NaN or Inf, wraps ErrInvalidQuery. K < 1 wraps ErrInvalidQuery.
	Retrieve(ctx context.Context, req VectorRequest) ([]Ref, error)
	Hydrator
	HealthChecker
}

// KeywordRetrievalBackend is the lexical (BM25) source.
type KeywordRetrievalBackend interface {
	// Retrieve returns up to req.K refs ordered by descending relevance score.
	// Text with nothing to search (empty, or no word the backend indexes:
	// punctuation, stop words) returns ErrNothingToSearch without searching.
	Retrieve(ctx context.Context, req KeywordRequest) ([]Ref, error)
	Hydrator
	HealthChecker
}

// GraphRetrievalBackend is the relational source.
type GraphRetrievalBackend interface {
	// Expand returns documents related to seeds through shared entities or
	// links, within opts.Hops, ordered by the backend's documented ranking
	// rule. Seeds themselves are never returned; documents of another tenant
	// are never returned (nor passed through) when opts.Tenant is set, and
	// documents failing opts.Filter are never returned. Unknown seeds are
	// ignored. Invalid options wrap ErrInvalidQuery; no seeds at all
	// returns ErrNothingToSearch without contacting the backend.
	Expand(ctx context.Context, seeds []string, opts ExpandOptions) ([]Ref, error)

	// MatchEntities is the graph's first-stage retrieval: entities whose
	// names match req.Text, then the documents that mention them, ranked by
	// the backend's documented rule. A text with no word the backend
	// matches on (empty, punctuation only) returns ErrNothingToSearch
	// without contacting the backend; an invalid request (K, filter) wraps
	// ErrInvalidQuery first.
	MatchEntities(ctx context.Context, req KeywordRequest) ([]Ref, error)

	// Query runs a read-only, parameterised query in the backend's native
	// language and returns its rows as column → value maps. Writes are
	// rejected. Backends without a query language return ErrUnsupported.
	Query(ctx context.Context, query string, params map[string]any) ([]map[string]any, error)

	Hydrator
	HealthChecker
}

// Embedder turns texts into vectors of a fixed dimension.
type Embedder interface {
	// Embed returns one vector per text, in order, each of length Dimension()
	// with finite components (spi.CheckEmbeddings; a guard counts an answer
	// that breaks this as a failure of the embedder).
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Dimension is the length of every vector Embed returns.
	Dimension() int
}

// EmbedCache is an optional capability of an Embedder with a cache in
// front: Cached returns the vector Embed would return for text, for the
// tenant ctx is marked with (WithTenant), when the cache holds it,
// computing nothing (a copy the caller may modify). A caller may then skip
// the embedder's gate: nothing reaches the model, so there is nothing to
// admit, and a cache hit must not count as evidence that the model
// answers. A cache keeps each tenant's texts apart: a text another tenant
// sent is not a hit.
type EmbedCache interface {
	Cached(ctx context.Context, text string) ([]float32, bool)
}

// Indexer is the write side of a store.
type Indexer interface {
	// Upsert inserts or replaces documents by id. It is atomic per call where
	// the store allows it; otherwise it returns a *BatchError naming the
	// documents that were not written. Invalid documents wrap ErrInvalidQuery.
	Upsert(ctx context.Context, docs []Document) error
	// Delete removes documents by id. Unknown ids are ignored.
	Delete(ctx context.Context, ids []string) error
}

// Scanner is an optional capability of a system-of-record store: it visits
// every stored document, in id order, so derived indexes can be rebuilt.
// Returning an error from fn stops the scan and returns that error.
type Scanner interface {
	Scan(ctx context.Context, fn func(Document) error) error
}

// Dimensioner is an optional capability of a vector store: the dimension of
// the vectors it holds, checked against the embedder at start.
type Dimensioner interface {
	Dimension() int
}

// Closer is an optional capability: release pools, files and drivers.
type Closer interface {
	Close() error
}
