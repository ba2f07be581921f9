package ingest_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/ragd/ragd/spi"
)

// memStore is an in-memory spi.Indexer and spi.Scanner with fault
// injection: err fails every call, failIDs fails the named documents with a
// *spi.BatchError.
type memStore struct {
	mu      sync.Mutex
	docs    map[string]spi.Document
	err     error
	failIDs map[string]error
	dim     int // reported through spi.Dimensioner when non-zero
	upserts int
	deletes int
}

var (
	_ spi.Indexer = (*memStore)(nil)
	_ spi.Scanner = (*memStore)(nil)
)

func newStore() *memStore { return &memStore{docs: map[string]spi.Document{}} }

func (s *memStore) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func (s *memStore) setFail(ids map[string]error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failIDs = ids
}

func (s *memStore) Upsert(ctx context.Context, docs []spi.Document) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.upserts++
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mem: upsert: %w", err)
	}
	if s.err != nil {
		return s.err
	}
	failed := map[string]error{}
	for _, d := range docs {
		if err, bad := s.failIDs[d.ID]; bad {
			failed[d.ID] = err
			continue
		}
		s.docs[d.ID] = d
	}
	if len(failed) > 0 {
		return &spi.BatchError{Failed: failed}
	}
	return nil
}

func (s *memStore) Delete(ctx context.Context, ids []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deletes++
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.err != nil {
		return s.err
	}
	for _, id := range ids {
		delete(s.docs, id)
	}
	return nil
}

func (s *memStore) Scan(ctx context.Context, fn func(spi.Document) error) error {
	s.mu.Lock()
	docs := make([]spi.Document, 0, len(s.docs))
	for _, id := range slices.Sorted(maps.Keys(s.docs)) {
		docs = append(docs, s.docs[id])
	}
	err := s.err
	s.mu.Unlock()
	if err != nil {
		return err
	}
	for _, d := range docs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(d); err != nil {
			return err
		}
	}
	return nil
}

func (s *memStore) ids() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.docs))
}

func (s *memStore) get(id string) (spi.Document, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.docs[id]
	return d, ok
}

// dimStore adds spi.Dimensioner to memStore.
type dimStore struct{ *memStore }

func (d dimStore) Dimension() int { return d.dim }

// fakeEmbedder returns a deterministic vector per text; EmbedFn overrides.
type fakeEmbedder struct {
	dim     int
	mu      sync.Mutex
	calls   [][]string
	EmbedFn func(ctx context.Context, texts []string) ([][]float32, error)
}

func (f *fakeEmbedder) Dimension() int { return f.dim }

func (f *fakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.mu.Lock()
	f.calls = append(f.calls, slices.Clone(texts))
	f.mu.Unlock()
	if f.EmbedFn != nil {
		return f.EmbedFn(ctx, texts)
	}
	return vectors(f.dim, texts), nil
}

func vectors(dim int, texts []string) [][]float32 {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, dim)
		v[0] = float32(len(t))
		v[dim-1] = 1
		if strings.Contains(t, "aero") {
			v[1] = 1
		}
		out[i] = v
	}
	return out
}

func (f *fakeEmbedder) batches() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}
