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

// memStore is an in-memory record store without a change log (a
// keyword-only deployment), with fault injection: err fails every call,
// failIDs fails the named documents with a *spi.BatchError.
type memStore struct {
	mu      sync.Mutex
	docs    map[string]spi.Document
	err     error
	failIDs map[string]error
	dim     int // reported through spi.Dimensioner when non-zero
	upserts int
	deletes int
	// afterRead, when set, runs at the end of each Hydrate, after the read.
	afterRead func()
}

var (
	_ spi.Indexer = (*memStore)(nil)
	_ spi.Scanner = (*memStore)(nil)
)

func newStore() *memStore { return &memStore{docs: map[string]spi.Document{}} }

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

func (s *memStore) Hydrate(_ context.Context, ids []string) ([]spi.Document, []string, error) {
	s.mu.Lock()
	defer func() {
		hook := s.afterRead
		s.mu.Unlock()
		if hook != nil {
			hook()
		}
	}()
	var docs []spi.Document
	var missing []string
	for _, id := range ids {
		if d, ok := s.docs[id]; ok {
			docs = append(docs, d)
		} else {
			missing = append(missing, id)
		}
	}
	return docs, missing, nil
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

// faultyApplier wraps a real derived store. While err is set, every call
// fails with it; while block is set, ApplyChanges waits for the channel to
// close (a hung server) or ctx to end; while maxBatch is set, a batch of
// more changes runs out of time (a store too slow for large batches).
type faultyApplier struct {
	spi.ChangeApplier
	mu       sync.Mutex
	err      error
	block    chan struct{}
	maxBatch int
	calls    int   // ApplyChanges calls
	seqs     int   // AppliedSeq calls
	sizes    []int // len(changes) of every ApplyChanges call
}

func (f *faultyApplier) setMaxBatch(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.maxBatch = n
}

func (f *faultyApplier) set(err error, block chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err, f.block = err, block
}

func (f *faultyApplier) ApplyChanges(ctx context.Context, log string, cs []spi.Change, through uint64) error {
	f.mu.Lock()
	err, block, maxBatch := f.err, f.block, f.maxBatch
	f.calls++
	f.sizes = append(f.sizes, len(cs))
	f.mu.Unlock()
	if maxBatch > 0 && len(cs) > maxBatch {
		return fmt.Errorf("faulty: apply of %d changes: %w: %w", len(cs), spi.ErrUnavailable, context.DeadlineExceeded)
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return fmt.Errorf("faulty: %w: %w", spi.ErrUnavailable, ctx.Err())
		}
	}
	if err != nil {
		return err
	}
	return f.ChangeApplier.ApplyChanges(ctx, log, cs, through)
}

func (f *faultyApplier) AppliedSeq(ctx context.Context, log string) (uint64, error) {
	f.mu.Lock()
	err := f.err
	f.seqs++
	f.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return f.ChangeApplier.AppliedSeq(ctx, log)
}

// faultyRecord wraps the real record store. CommitFn, when set, replaces
// Commit (it may call next); VisitFn, when set, runs before Versions
// passes each document on.
type faultyRecord struct {
	spitestRecord
	mu       sync.Mutex
	CommitFn func(ctx context.Context, ws []spi.Write, next func(context.Context, []spi.Write) ([]spi.WriteResult, error)) ([]spi.WriteResult, error)
	// CurrentFn, when set, replaces Current.
	CurrentFn func(ctx context.Context, ids []string) ([]spi.Change, error)
	VisitFn   func(id string)
}

func (f *faultyRecord) setVisit(fn func(id string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.VisitFn = fn
}

func (f *faultyRecord) Versions(ctx context.Context, fn func(id string, version uint64) error) error {
	f.mu.Lock()
	visit := f.VisitFn
	f.mu.Unlock()
	return f.spitestRecord.Versions(ctx, func(id string, v uint64) error {
		if visit != nil {
			visit(id)
		}
		return fn(id, v)
	})
}

// spitestRecord is the record's full capability set.
type spitestRecord interface {
	spi.ChangeLog
	spi.Indexer
	spi.Hydrator
	spi.Dimensioner
}

func (f *faultyRecord) setCommit(fn func(ctx context.Context, ws []spi.Write, next func(context.Context, []spi.Write) ([]spi.WriteResult, error)) ([]spi.WriteResult, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.CommitFn = fn
}

func (f *faultyRecord) Commit(ctx context.Context, ws []spi.Write) ([]spi.WriteResult, error) {
	f.mu.Lock()
	fn := f.CommitFn
	f.mu.Unlock()
	if fn != nil {
		return fn(ctx, ws, f.spitestRecord.Commit)
	}
	return f.spitestRecord.Commit(ctx, ws)
}

func (f *faultyRecord) setCurrent(fn func(ctx context.Context, ids []string) ([]spi.Change, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.CurrentFn = fn
}

func (f *faultyRecord) Current(ctx context.Context, ids []string) ([]spi.Change, error) {
	f.mu.Lock()
	fn := f.CurrentFn
	f.mu.Unlock()
	if fn != nil {
		return fn(ctx, ids)
	}
	return f.spitestRecord.Current(ctx, ids)
}
