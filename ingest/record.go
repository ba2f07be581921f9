package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/ragd/ragd/spi"
)

// recordWriter is how the pipeline writes the system of record: the
// Commit of spi.ChangeLog.
type recordWriter interface {
	Commit(ctx context.Context, writes []spi.Write) ([]spi.WriteResult, error)
}

// directRecord adapts a record store without a change log (a keyword-only
// deployment) to recordWriter. Ownership is checked by a read before the
// write; commits take turns (lock), so the read and the write are one step
// for every writer of this process (one ragd serves a data directory) and
// two tenants creating the same new id cannot both win. Versions are 0.
type directRecord struct {
	ix   spi.Indexer
	lock chan struct{} // capacity 1: held from the ownership read to the write
}

func newDirectRecord(ix spi.Indexer) *directRecord {
	return &directRecord{ix: ix, lock: make(chan struct{}, 1)}
}

func (d *directRecord) Commit(ctx context.Context, writes []spi.Write) ([]spi.WriteResult, error) {
	select {
	case d.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-d.lock }()
	out := make([]spi.WriteResult, len(writes))
	ids := make([]string, len(writes))
	for i, w := range writes {
		ids[i] = w.Doc.ID
	}
	owners := map[string]string{}
	if h, ok := d.ix.(spi.Hydrator); ok {
		found, _, err := h.Hydrate(ctx, ids)
		if err != nil {
			return nil, err
		}
		for _, doc := range found {
			owners[doc.ID] = doc.Tenant
		}
	}
	var ups []spi.Document
	var upIdx []int
	var dels []string
	for i, w := range writes {
		owner, exists := owners[w.Doc.ID]
		switch {
		case w.Op == spi.OpDelete && (!exists || (w.Scope != "" && owner != w.Scope)):
			out[i].Err = spi.ErrNotFound
		case w.Op == spi.OpDelete:
			dels = append(dels, w.Doc.ID)
			out[i].Changed = true
		case w.Scope != "" && w.Doc.Tenant != w.Scope, w.KeepTenant && exists && owner != w.Doc.Tenant:
			out[i].Err = spi.ErrTenantConflict
		default:
			ups = append(ups, w.Doc)
			upIdx = append(upIdx, i)
			out[i].Changed = true
		}
	}
	if len(ups) > 0 {
		err := d.ix.Upsert(ctx, ups)
		var be *spi.BatchError
		switch {
		case errors.As(err, &be):
			for _, i := range upIdx {
				if e, bad := be.Failed[writes[i].Doc.ID]; bad {
					out[i] = spi.WriteResult{Err: e}
				}
			}
		case err != nil:
			return nil, fmt.Errorf("ingest: record: %w", err)
		}
	}
	if len(dels) > 0 {
		if err := d.ix.Delete(ctx, dels); err != nil {
			return nil, fmt.Errorf("ingest: record: %w", err)
		}
	}
	return out, nil
}
