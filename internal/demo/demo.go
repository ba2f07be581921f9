// Package demo bundles ragd's sample corpus: two dozen short documents about
// resilient retrieval (circuit breakers, BM25, HNSW, rank fusion, graphs),
// with entities and links, loaded by `ragd serve --demo`.
package demo

import (
	"bytes"
	_ "embed"
	"fmt"

	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/spi"
)

//go:embed sample.jsonl
var sample []byte

// Documents returns the sample corpus, in file order.
func Documents() ([]spi.Document, error) {
	var docs []spi.Document
	for line, err := range ingest.ReadDocuments(bytes.NewReader(sample), ingest.FormatJSONL) {
		if err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		docs = append(docs, line.Doc)
	}
	return docs, nil
}
