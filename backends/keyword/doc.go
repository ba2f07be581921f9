// Package keyword is ragd's lexical retrieval backend: an adapter over an
// embedded bleve v2 (scorch) index kept on disk under one directory.
//
// Documents are analysed with an English analyzer (lower-casing, stop words,
// Porter stemming) on title and text. Plain-text queries are answered by
// in-memory block postings with Lucene's BM25 over title and text (the
// title weighted at query time) and block-max pruning (impact.go,
// prune.go); Syntax queries by bleve's own BM25. Tenant and metadata values
// are indexed verbatim (keyword analysis) and used only as non-scoring
// filters.
//
// User query text is matched as plain words: it is analysed and turned into
// term queries, never parsed as bleve query-string syntax, unless the request
// sets Syntax. See docs/keyword.md for the field layout and scoring notes.
//
// The index is a derived copy of the system of record. Open reports an index
// that cannot be opened with an error wrapping ErrCorrupt; OpenOrRebuild
// moves such an index aside and repopulates a fresh one from an spi.Scanner,
// and Rebuild repopulates a running backend without interrupting queries.
package keyword
