// Package demo bundles ragd's sample corpus: two dozen short documents about
// resilient retrieval (circuit breakers, BM25, HNSW, rank fusion, graphs),
// with entities and links, loaded by `ragd serve --demo` once per data
// directory (see Seeded).
package demo

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ragd/ragd/ingest/corpus"
	"github.com/ragd/ragd/spi"
)

//go:embed sample.jsonl
var sample []byte

// Documents returns the sample corpus, in file order.
func Documents() ([]spi.Document, error) {
	var docs []spi.Document
	for line, err := range corpus.ReadDocuments(bytes.NewReader(sample), corpus.FormatJSONL) {
		if err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		docs = append(docs, line.Doc)
	}
	return docs, nil
}

// MarkerFile, in the data directory, records that the sample corpus was
// loaded there, so that later starts with --demo leave the documents as
// the user made them: edited, deleted or untouched.
const MarkerFile = "demo-seeded"

// Seeded reports whether the sample corpus was loaded into dataDir.
func Seeded(dataDir string) (bool, error) {
	_, err := os.Stat(filepath.Join(dataDir, MarkerFile))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("demo: %w", err)
}

// MarkSeeded records in dataDir that the sample corpus was loaded.
func MarkSeeded(dataDir string, now time.Time) error {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	msg := "the ragd sample corpus was loaded here at " + now.UTC().Format(time.RFC3339) +
		"; ragd serve --demo does not load it again while this file exists\n"
	if err := os.WriteFile(filepath.Join(dataDir, MarkerFile), []byte(msg), 0o644); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}
