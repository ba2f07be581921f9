package keyword

import (
	"context"
	"fmt"

	"github.com/ragd/ragd/spi"
)

// Hydrate returns the stored documents for ids in the order of ids, each
// once, and the ids not in the index in missing. All documents come from
// one index snapshot. Vector, Entities and Links are always empty: the
// keyword index does not keep them. A lean index (Config.Lean) keeps no
// title and text: its Hydrate is Config.Bodies's (the record's documents,
// as the record holds them now), or wraps spi.ErrUnsupported without it.
func (b *Backend) Hydrate(ctx context.Context, ids []string) ([]spi.Document, []string, error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	if b.cfg.Lean {
		if b.cfg.Bodies != nil {
			return b.cfg.Bodies.Hydrate(ctx, ids)
		}
		return nil, nil, fmt.Errorf("keyword: hydrate: %w: a lean index keeps no title and text", spi.ErrUnsupported)
	}
	st, unlock, err := b.acquire(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("keyword: hydrate: %w", err)
	}
	defer unlock()
	adv, err := st.idx.Advanced()
	if err != nil {
		return nil, nil, fmt.Errorf("keyword: hydrate: %w: %v", spi.ErrUnavailable, err)
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, nil, fmt.Errorf("keyword: hydrate: %w: %v", spi.ErrUnavailable, err)
	}
	defer r.Close()

	seen := make(map[string]struct{}, len(ids))
	var docs []spi.Document
	var missing []string
	for _, id := range ids {
		if _, dup := seen[id]; dup {
			continue
		}
		seen[id] = struct{}{}
		if err := ctxErr(ctx); err != nil {
			return nil, nil, fmt.Errorf("keyword: hydrate: %w", err)
		}
		stored, err := r.Document(id)
		if err != nil {
			return nil, nil, fmt.Errorf("keyword: hydrate: %w: %v", spi.ErrUnavailable, err)
		}
		if stored == nil {
			missing = append(missing, id)
			continue
		}
		d, err := readDoc(id, stored)
		if err != nil {
			return nil, nil, fmt.Errorf("keyword: hydrate: %w", err)
		}
		docs = append(docs, d)
	}
	return docs, missing, nil
}
