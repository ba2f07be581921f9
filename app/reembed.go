package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/spi"
)

// embedderRecorder is the capability of vector stores that record which
// embedder made their vectors (both built-in stores have it).
type embedderRecorder interface {
	RecordEmbedder(ctx context.Context, id string) error
}

// ReembedBatch is the number of documents Reembed embeds and writes at a
// time.
const ReembedBatch = 64

// Reembed rebuilds every stored vector from its document's title and text
// with the configured embedder, batch by batch, and then records the
// embedder's identity with the store. Open the app with Options.Reembed.
// Documents keep their id, tenant, text, metadata, entities and links; the
// keyword index and the graph hold no vectors and are left alone. progress,
// when set, is called after each batch. An interrupted run can be run
// again: until it completes, the store keeps the old identity and ragd
// refuses to start on it; the vectors it made are in the vector cache
// (when configured), so the next run embeds only what is left.
func (a *App) Reembed(ctx context.Context, progress func(done, total int)) (int, error) {
	scanner, ok1 := a.Vector.(spi.Scanner)
	rec, ok2 := a.Vector.(embedderRecorder)
	idx, ok3 := a.Vector.(spi.Indexer)
	if !ok1 || !ok2 || !ok3 {
		return 0, errors.New("app: reembed: the configured vector store cannot be re-embedded")
	}
	var ids []string
	if err := scanner.Scan(ctx, func(d spi.Document) error {
		ids = append(ids, d.ID)
		return nil
	}); err != nil {
		return 0, fmt.Errorf("app: reembed: scan: %w", err)
	}
	done := 0
	for start := 0; start < len(ids); start += ReembedBatch {
		batch := ids[start:min(start+ReembedBatch, len(ids))]
		docs, _, err := a.Vector.Hydrate(ctx, batch)
		if err != nil {
			return done, fmt.Errorf("app: reembed: read: %w", err)
		}
		if err := a.embedPerTenant(ctx, docs); err != nil {
			return done, fmt.Errorf("app: reembed: embed: %w", err)
		}
		if err := idx.Upsert(ctx, docs); err != nil {
			return done, fmt.Errorf("app: reembed: write: %w", err)
		}
		done += len(docs)
		if progress != nil {
			progress(done, len(ids))
		}
	}
	if err := rec.RecordEmbedder(ctx, a.EmbedderIdentity); err != nil {
		return done, fmt.Errorf("app: reembed: record the embedder: %w", err)
	}
	a.Logger.Info("app: vectors rebuilt with the configured embedder", slog.Int("documents", done))
	return done, nil
}

// embedPerTenant sets the vectors of docs, one embedding call per tenant
// (spi.WithTenant), so the vector cache keeps each tenant's texts apart
// as the write path does.
func (a *App) embedPerTenant(ctx context.Context, docs []spi.Document) error {
	byTenant := map[string][]int{}
	var order []string
	for i, d := range docs {
		if _, ok := byTenant[d.Tenant]; !ok {
			order = append(order, d.Tenant)
		}
		byTenant[d.Tenant] = append(byTenant[d.Tenant], i)
	}
	for _, tenant := range order {
		idx := byTenant[tenant]
		texts := make([]string, len(idx))
		for k, i := range idx {
			texts[k] = ingest.DefaultEmbedText(docs[i])
		}
		vecs, err := a.DocumentEmbedder.Embed(spi.WithTenant(ctx, tenant), texts)
		if err == nil && len(vecs) != len(texts) {
			err = fmt.Errorf("embedder returned %d vectors for %d texts", len(vecs), len(texts))
		}
		if err != nil {
			return err
		}
		for k, i := range idx {
			docs[i].Vector = vecs[k]
		}
	}
	return nil
}
