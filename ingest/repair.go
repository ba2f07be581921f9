package ingest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/ragd/ragd/spi"
)

// repairOp is the pending operation for one document in one derived store:
// write doc, or delete the id when doc is nil. A later failure for the same
// id replaces the earlier op, so the queue always holds the newest intent.
type repairOp struct {
	doc *spi.Document
	seq uint64
}

// enqueueLocked records a failed derived write; p.qmu must be held.
func (p *Pipeline) enqueueLocked(store, id string, doc *spi.Document) {
	q := p.queue[store]
	if q == nil {
		q = map[string]repairOp{}
		p.queue[store] = q
	}
	if _, exists := q[id]; !exists && len(q) >= p.maxQueue {
		p.dropped[store]++
		p.log.Error("ingest: repair queue full; the store needs a rebuild", "store", store, "id", id, "max", p.maxQueue)
		return
	}
	p.seq++
	var cp *spi.Document
	if doc != nil {
		d := *doc
		cp = &d
	}
	q[id] = repairOp{doc: cp, seq: p.seq}
}

// Pending describes one derived store's repair backlog.
type Pending struct {
	// Queued is the number of documents waiting for Repair.
	Queued int `json:"queued"`
	// Dropped counts failures that did not fit in the queue since the last
	// successful RebuildDerived: when non-zero, only a rebuild makes the
	// store consistent again.
	Dropped int `json:"dropped"`
}

// Pending returns the repair backlog of every derived store that has one.
func (p *Pipeline) Pending() map[string]Pending {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	out := map[string]Pending{}
	for _, d := range p.derived {
		if q, n := len(p.queue[d.Name]), p.dropped[d.Name]; q > 0 || n > 0 {
			out[d.Name] = Pending{Queued: q, Dropped: n}
		}
	}
	return out
}

// RepairResult summarises one Repair call.
type RepairResult struct {
	// Repaired is the number of queued operations that succeeded.
	Repaired int `json:"repaired"`
	// Remaining is the number still queued afterwards.
	Remaining int `json:"remaining"`
}

// Repair replays the queued derived-store writes and deletes, store by
// store, in id order. Operations that succeed leave the queue; the others
// stay for the next call. The error joins each failing store's error. The
// wiring calls Repair periodically and after a breaker closes.
func (p *Pipeline) Repair(ctx context.Context) (RepairResult, error) {
	var out RepairResult
	var errs []error
	for _, d := range p.derived {
		n, err := p.repairStore(ctx, d)
		out.Repaired += n
		if err != nil {
			errs = append(errs, fmt.Errorf("ingest: repair %s: %w", d.Name, err))
		}
	}
	p.qmu.Lock()
	for _, q := range p.queue {
		out.Remaining += len(q)
	}
	p.qmu.Unlock()
	return out, errors.Join(errs...)
}

func (p *Pipeline) repairStore(ctx context.Context, d NamedIndexer) (int, error) {
	mu := p.storeMu[d.Name]
	mu.Lock()
	defer mu.Unlock()
	p.qmu.Lock()
	snap := maps.Clone(p.queue[d.Name])
	p.qmu.Unlock()
	if len(snap) == 0 {
		return 0, nil
	}
	var upserts []spi.Document
	var deletes []string
	for _, id := range slices.Sorted(maps.Keys(snap)) {
		if op := snap[id]; op.doc != nil {
			upserts = append(upserts, *op.doc)
		} else {
			deletes = append(deletes, id)
		}
	}
	done := 0
	// settle removes the ops that succeeded, unless a newer op replaced them.
	settle := func(ids []string, failed map[string]error) {
		p.qmu.Lock()
		defer p.qmu.Unlock()
		for _, id := range ids {
			if _, bad := failed[id]; bad {
				continue
			}
			if cur, ok := p.queue[d.Name][id]; ok && cur.seq == snap[id].seq {
				delete(p.queue[d.Name], id)
				done++
			}
		}
	}
	var firstErr error
	for batch := range slices.Chunk(upserts, p.batch) {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		err := d.Indexer.Upsert(ctx, batch)
		ids := make([]string, len(batch))
		for k := range batch {
			ids[k] = batch[k].ID
		}
		settle(ids, failures(err, batch))
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for chunk := range slices.Chunk(deletes, p.batch) {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		err := d.Indexer.Delete(ctx, chunk)
		var failed map[string]error
		if err != nil {
			failed = make(map[string]error, len(chunk))
			for _, id := range chunk {
				failed[id] = err
			}
			if firstErr == nil {
				firstErr = err
			}
		}
		settle(chunk, failed)
	}
	if done > 0 {
		p.log.Info("ingest: repaired derived store", "store", d.Name, "repaired", done, "failed", len(snap)-done)
	}
	return done, firstErr
}

// Rebuild copies every document src holds into dst, batch documents per
// Upsert (default 64), and returns how many were written. It is the
// fallback when a derived store lost writes (repair queue overflow, a
// corrupt or missing index): start dst empty for an exact copy, since
// Rebuild adds and replaces but never deletes.
func Rebuild(ctx context.Context, src spi.Scanner, dst spi.Indexer, batch int) (n int, err error) {
	if batch <= 0 {
		batch = DefaultBatchSize
	}
	buf := make([]spi.Document, 0, batch)
	var writeErr error
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		if err := dst.Upsert(ctx, buf); err != nil {
			writeErr = fmt.Errorf("ingest: rebuild: write: %w", err)
			return writeErr
		}
		n += len(buf)
		buf = make([]spi.Document, 0, batch) // dst may keep the slice it was given
		return nil
	}
	err = src.Scan(ctx, func(d spi.Document) error {
		buf = append(buf, d)
		if len(buf) >= batch {
			return flush()
		}
		return nil
	})
	if writeErr != nil {
		return n, writeErr
	}
	if err != nil {
		return n, fmt.Errorf("ingest: rebuild: scan: %w", err)
	}
	if err := flush(); err != nil {
		return n, err
	}
	return n, nil
}

// ErrNoScanner means RebuildDerived cannot read the record store.
var ErrNoScanner = errors.New("ingest: the record store cannot be scanned (no spi.Scanner)")

// RebuildDerived repopulates the named derived store from the record store
// (which must implement spi.Scanner) and clears that store's queued writes
// and dropped count; queued deletes stay for Repair. Writes to the store
// wait while it runs.
func (p *Pipeline) RebuildDerived(ctx context.Context, name string) (int, error) {
	src, ok := p.record.Indexer.(spi.Scanner)
	if !ok {
		return 0, ErrNoScanner
	}
	i := slices.IndexFunc(p.derived, func(d NamedIndexer) bool { return d.Name == name })
	if i < 0 {
		return 0, fmt.Errorf("%w: no derived store named %q", ErrConfig, name)
	}
	d := p.derived[i]
	mu := p.storeMu[name]
	mu.Lock()
	defer mu.Unlock()
	p.qmu.Lock()
	seq := p.seq
	p.qmu.Unlock()
	n, err := Rebuild(ctx, src, d.Indexer, p.batch)
	if err != nil {
		return n, err
	}
	p.qmu.Lock()
	for id, op := range p.queue[name] {
		if op.doc != nil && op.seq <= seq {
			delete(p.queue[name], id)
		}
	}
	p.dropped[name] = 0
	p.qmu.Unlock()
	p.log.Info("ingest: rebuilt derived store", "store", name, "documents", n)
	return n, nil
}
