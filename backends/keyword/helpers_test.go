package keyword_test

import (
	"context"
	"errors"
	"slices"
	"sort"
	"testing"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/spi"
)

// sliceScanner is the system of record for rebuild tests: Scan visits the
// documents in id order, honours ctx and stops on fn's error. onDoc, when
// set, runs before each document is handed over (to pause a rebuild).
type sliceScanner struct {
	docs  []spi.Document
	onDoc func(i int)
}

var _ spi.Scanner = (*sliceScanner)(nil)

func (s *sliceScanner) Scan(ctx context.Context, fn func(spi.Document) error) error {
	docs := slices.Clone(s.docs)
	sort.Slice(docs, func(i, j int) bool { return docs[i].ID < docs[j].ID })
	for i, d := range docs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.onDoc != nil {
			s.onDoc(i)
		}
		if err := fn(d); err != nil {
			return err
		}
	}
	return nil
}

// mustOpen opens a backend in a fresh temp dir (or cfg.Dir) and closes it
// at cleanup.
func mustOpen(tb testing.TB, cfg keyword.Config) *keyword.Backend {
	tb.Helper()
	if cfg.Dir == "" {
		cfg.Dir = tb.TempDir()
	}
	b, err := keyword.Open(cfg)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	return b
}

func mustUpsert(tb testing.TB, b *keyword.Backend, docs ...spi.Document) {
	tb.Helper()
	if err := b.Upsert(context.Background(), docs); err != nil {
		tb.Fatalf("Upsert: %v", err)
	}
}

func mustRetrieve(tb testing.TB, b *keyword.Backend, req spi.KeywordRequest) []spi.Ref {
	tb.Helper()
	if req.K == 0 {
		req.K = 10
	}
	refs, err := b.Retrieve(context.Background(), req)
	if err != nil {
		tb.Fatalf("Retrieve(%q): %v", req.Text, err)
	}
	return refs
}

func isInvalid(err error) bool { return errors.Is(err, spi.ErrInvalidQuery) }
