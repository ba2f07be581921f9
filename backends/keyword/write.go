package keyword

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"sync"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/document"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/ragd/ragd/spi"
)

// writeOp is one Upsert or Delete recorded while a Rebuild runs, replayed on
// the new index before it goes live.
type writeOp struct {
	docs []spi.Document
	del  []string
}

// Upsert inserts or replaces documents by id. All documents are validated
// first: an empty id, an id longer than idtable.MaxLen (16 MiB) or an
// empty metadata key rejects the whole call with an error wrapping
// spi.ErrInvalidQuery. Documents are written in bleve
// batches of Config.BatchSize, each atomic and durable when it returns; a
// call within one batch is atomic. When a later batch fails, the error is a
// *spi.BatchError naming the documents not written. Vector, Entities and
// Links are not kept.
func (b *Backend) Upsert(ctx context.Context, docs []spi.Document) error {
	for _, d := range docs {
		if err := validateDoc(d); err != nil {
			return fmt.Errorf("keyword: upsert: %w", err)
		}
	}
	if len(docs) == 0 {
		return nil
	}
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	st, unlock, err := b.acquire(ctx)
	if err != nil {
		return fmt.Errorf("keyword: upsert: %w", err)
	}
	defer unlock()
	n, err := writeDocs(ctx, st, docs, b.cfg.BatchSize)
	if n > 0 && b.pending != nil {
		*b.pending = append(*b.pending, writeOp{docs: copyDocs(docs[:n])})
	}
	if err == nil {
		return nil
	}
	if n == 0 {
		return fmt.Errorf("keyword: upsert: %w", err)
	}
	failed := make(map[string]error, len(docs)-n)
	for _, d := range docs[n:] {
		failed[d.ID] = fmt.Errorf("keyword: upsert: %w", err)
	}
	return &spi.BatchError{Failed: failed}
}

// writeDocs indexes docs in batches of size and returns how many were
// written. Callers serialise writes to s.
func writeDocs(ctx context.Context, s *store, docs []spi.Document, size int) (int, error) {
	for start := 0; start < len(docs); start += size {
		if err := ctxErr(ctx); err != nil {
			return start, err
		}
		end := min(start+size, len(docs))
		if err := writeBatch(s, spi.LastByID(docs[start:end], spi.DocumentID), nil, nil); err != nil {
			return start, err
		}
	}
	return len(docs), nil
}

// logWrite is what an apply of the change log adds to a batch (apply.go):
// each upserted document's version (a stored field), the tombstones to
// keep and to drop (internal keys) and the new checkpoint.
type logWrite struct {
	versions map[string][]byte // id -> version of an upserted document
	tombs    map[string][]byte // id -> tombstone of a deleted document
	drop     []string          // ids whose tombstones go
	applied  []byte            // the new checkpoint; nil keeps it
}

// writeBatch applies upserts and deletes, and lw, as one atomic bleve
// batch, then mirrors it in the postings and s.tombs. A nil lw is a write
// outside the change log, which leaves no version and no tombstone.
func writeBatch(s *store, docs []spi.Document, del []string, lw *logWrite) error {
	if lw == nil {
		lw = &logWrite{}
	}
	old, err := s.goneTerms(docs, del)
	if err != nil {
		return fmt.Errorf("%w: read replaced documents: %v", spi.ErrUnavailable, err)
	}
	batch := s.idx.NewBatch()
	built, lens := buildDocsLayout(docs, s.an, s.lean)
	vers := make([][]byte, len(docs))
	var gone []string // ids whose tombstone the batch deletes
	dropTomb := func(id string) {
		if _, ok := s.tombs[id]; ok {
			batch.DeleteInternal([]byte(versionPrefix + id))
			gone = append(gone, id)
		}
	}
	for i, d := range docs {
		// A document's version is a stored field of the document, not a
		// bleve internal key: scorch rewrites every internal key into
		// each persisted snapshot, so one key per document made every
		// batch cost as much as the whole index (43 docs/s at 100k).
		if v, ok := lw.versions[d.ID]; ok {
			vers[i] = v
			built[i].AddField(document.NewTextFieldCustom(fieldVersion, nil, v, optsStored, nil))
		}
		dropTomb(d.ID)
		if err := batch.IndexAdvanced(built[i]); err != nil {
			return fmt.Errorf("%w: %v", spi.ErrInvalidQuery, err)
		}
	}
	for _, id := range del {
		batch.Delete(id)
		if v, ok := lw.tombs[id]; ok {
			batch.SetInternal([]byte(versionPrefix+id), v)
		} else {
			dropTomb(id)
		}
	}
	for _, id := range lw.drop {
		dropTomb(id)
	}
	if lw.applied != nil {
		batch.SetInternal(appliedKey, lw.applied)
	}
	if err := s.idx.Batch(batch); err != nil {
		return fmt.Errorf("%w: batch: %v", spi.ErrUnavailable, err)
	}
	for _, id := range gone {
		delete(s.tombs, id)
	}
	for id, v := range lw.tombs {
		s.tombs[id] = v
	}
	s.impact.apply(docs, built, lens, vers, del, old)
	return nil
}

// goneTerms finds the terms of the live documents that docs replace and
// del deletes: the postings count df and need each removed document's
// terms for it. A full index analyses their stored title and text again;
// a lean one resolves their stored term hashes (terms.go). They read them
// from the index of record rather than keep every document's term list in
// memory (see docs/keyword.md, Memory).
func (s *store) goneTerms(docs []spi.Document, del []string) (map[string]fieldFreqs, error) {
	var ids []string
	for _, d := range docs {
		if s.impact.has(d.ID) {
			ids = append(ids, d.ID)
		}
	}
	for _, id := range del {
		if s.impact.has(id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	adv, err := s.idx.Advanced()
	if err != nil {
		return nil, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out := make(map[string]fieldFreqs, len(ids))
	for _, id := range ids {
		stored, err := r.Document(id)
		if err != nil {
			return nil, err
		}
		if stored == nil {
			continue // the postings find its terms themselves
		}
		var f fieldFreqs
		var hashes []byte
		stored.VisitFields(func(fl index.Field) {
			switch fl.Name() {
			case fieldTitle:
				f.title = termCounts(s.an, fl.Value())
			case fieldText:
				f.text = termCounts(s.an, fl.Value())
			case fieldTerms:
				hashes = fl.Value()
			}
		})
		if s.lean {
			hs, err := decodeTermHashes(hashes)
			if err != nil {
				return nil, fmt.Errorf("%w: document %q: %v", ErrCorrupt, id, err)
			}
			tids, ok := s.impact.resolveTerms(&s.hashes, id, hs)
			if !ok {
				continue
			}
			f = fieldFreqs{tids: tids}
		}
		out[id] = f
	}
	return out, nil
}

// termCounts is the analysed terms of text with their frequencies.
func termCounts(an analysis.Analyzer, text []byte) map[string]int {
	m := map[string]int{}
	for _, tok := range an.Analyze(text) {
		m[string(tok.Term)]++
	}
	return m
}

// buildDocs analyses docs on up to GOMAXPROCS goroutines (the analysis
// scorch would otherwise run on its own worker pool).
func buildDocs(docs []spi.Document, an analysis.Analyzer) ([]*document.Document, []docLens) {
	return buildDocsLayout(docs, an, false)
}

// buildDocsLayout is buildDocs of a lean index when lean is set.
func buildDocsLayout(docs []spi.Document, an analysis.Analyzer, lean bool) ([]*document.Document, []docLens) {
	built := make([]*document.Document, len(docs))
	lens := make([]docLens, len(docs))
	workers := min(runtime.GOMAXPROCS(0), (len(docs)+15)/16)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(docs); i += workers {
				built[i], lens[i] = buildDocLayout(docs[i], an, lean)
			}
		})
	}
	wg.Wait()
	return built, lens
}

// Delete removes documents by id in batches; unknown ids are ignored.
func (b *Backend) Delete(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	st, unlock, err := b.acquire(ctx)
	if err != nil {
		return fmt.Errorf("keyword: delete: %w", err)
	}
	defer unlock()
	n, err := deleteIDs(ctx, st, ids, b.cfg.BatchSize)
	if n > 0 && b.pending != nil {
		*b.pending = append(*b.pending, writeOp{del: append([]string(nil), ids[:n]...)})
	}
	if err != nil {
		return fmt.Errorf("keyword: delete: %w", err)
	}
	return nil
}

func deleteIDs(ctx context.Context, s *store, ids []string, size int) (int, error) {
	for start := 0; start < len(ids); start += size {
		if err := ctxErr(ctx); err != nil {
			return start, err
		}
		end := min(start+size, len(ids))
		if err := writeBatch(s, nil, uniqueIDs(ids[start:end]), nil); err != nil {
			return start, err
		}
	}
	return len(ids), nil
}

func uniqueIDs(ids []string) []string {
	seen := make(map[string]struct{}, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if _, dup := seen[id]; !dup && id != "" {
			seen[id] = struct{}{}
			out = append(out, id)
		}
	}
	return out
}

// copyDocs keeps what the index stores, detached from the caller's maps.
func copyDocs(docs []spi.Document) []spi.Document {
	out := make([]spi.Document, len(docs))
	for i, d := range docs {
		out[i] = spi.Document{ID: d.ID, Tenant: d.Tenant, Title: d.Title, Text: d.Text,
			Metadata: maps.Clone(d.Metadata), UpdatedAt: d.UpdatedAt}
	}
	return out
}
