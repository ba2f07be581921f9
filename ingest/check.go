package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/ragd/ragd/spi"
)

// ErrNoLog means the record store keeps no change log, so there is
// nothing to check derived stores against.
var ErrNoLog = errors.New("ingest: the record store keeps no change log")

// maxExamples bounds the differences a StoreCheck lists.
const maxExamples = 20

// Difference kinds.
const (
	DiffMissing = "missing" // the record holds the document, the store does not
	DiffStale   = "stale"   // the store holds an older version
	DiffExtra   = "extra"   // the store holds a document the record does not
)

// Difference is one document on which a derived store and the record
// disagree. A version of 0 means "absent" for RecordVersion and "present
// without a version" for StoreVersion.
type Difference struct {
	ID            string `json:"id"`
	Kind          string `json:"kind"`
	RecordVersion uint64 `json:"record_version"`
	StoreVersion  uint64 `json:"store_version"`
}

// StoreCheck compares one derived store with the record.
type StoreCheck struct {
	Store string `json:"store"`
	// Applied is the store's checkpoint when compared.
	Applied uint64 `json:"applied"`
	// RecordDocuments and Documents count what each side holds.
	RecordDocuments int `json:"record_documents"`
	Documents       int `json:"documents"`
	// Missing, Stale and Extra count the differences found; Examples lists
	// up to 20 of them, in id order.
	Missing  int          `json:"missing"`
	Stale    int          `json:"stale"`
	Extra    int          `json:"extra"`
	Examples []Difference `json:"examples,omitempty"`
	// Repaired is the number of documents a repair rewrote or removed;
	// Remaining the differences a comparison after the repair still found.
	Repaired  int `json:"repaired,omitempty"`
	Remaining int `json:"remaining,omitempty"`
	// Error says why the store could not be checked.
	Error string `json:"error,omitempty"`
	// Dormant marks a store that was not checked because it is not kept
	// current (nothing reads it; ingest.NamedApplier.Dormant).
	Dormant bool `json:"dormant,omitempty"`
}

// Differences is the number of differences found.
func (c StoreCheck) Differences() int { return c.Missing + c.Stale + c.Extra }

// CheckReport is the result of Pipeline.Check.
type CheckReport struct {
	// Head is the log's last sequence when the check began.
	Head   uint64       `json:"head"`
	Stores []StoreCheck `json:"stores"`
	// Legacy counts record documents without a version (written before
	// the log existed); a repair gives them one by writing them again.
	Legacy int `json:"legacy,omitempty"`
}

// Check compares every derived store with the record, by ids and
// versions, after letting each store catch up with the log. With repair,
// what differs is rewritten from the record's current documents (missing
// and stale ones written, extra ones deleted) and compared again. Record
// documents written before the log existed are first given a version
// (written again through the log) when repairing. A store that cannot be
// reached is reported with its Error; the others are still checked. A
// dormant store is listed as such and not compared.
func (p *Pipeline) Check(ctx context.Context, repair bool) (CheckReport, error) {
	if p.log == nil {
		return CheckReport{}, ErrNoLog
	}
	ls, err := p.log.LogState(ctx)
	if err != nil {
		return CheckReport{}, fmt.Errorf("ingest: check: %w", err)
	}
	rep := CheckReport{Head: ls.Last}
	if rep.Legacy, err = p.legacy(ctx, repair); err != nil {
		return rep, fmt.Errorf("ingest: check: %w", err)
	}
	for _, t := range p.tailers {
		if t.dormant() {
			rep.Stores = append(rep.Stores, StoreCheck{Store: t.name, Dormant: true})
			continue
		}
		sc, err := t.check(ctx, repair)
		if err != nil {
			if ctx.Err() != nil {
				return rep, fmt.Errorf("ingest: check: %w", ctx.Err())
			}
			sc.Error = safeError(ctx, t.name, err)
			p.logger.Warn("ingest: check of a derived store failed", "store", t.name, "err", err)
		}
		rep.Stores = append(rep.Stores, sc)
	}
	return rep, nil
}

// legacy counts the record's documents without a version and, with
// repair, writes them again so that they get one and reach the log.
func (p *Pipeline) legacy(ctx context.Context, repair bool) (int, error) {
	var ids []string
	err := p.log.Versions(ctx, func(id string, v uint64) error {
		if v == 0 {
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil || !repair || len(ids) == 0 {
		return len(ids), err
	}
	for chunk := range slices.Chunk(ids, p.batch) {
		cur, err := p.log.Current(ctx, chunk)
		if err != nil {
			return len(ids), err
		}
		var writes []spi.Write
		for _, c := range cur {
			if c.Doc != nil {
				// Unversioned documents have no content hash: the write is
				// never a no-op.
				writes = append(writes, spi.Write{Op: spi.OpUpsert, Doc: *c.Doc, KeepTenant: true})
			}
		}
		if _, err := p.log.Commit(ctx, writes); err != nil {
			return len(ids), err
		}
	}
	p.logger.Info("ingest: gave record documents written before the change log a version", "documents", len(ids))
	return len(ids), nil
}

// check catches the store up with the log, compares it and, with repair,
// repairs it.
func (t *tailer) check(ctx context.Context, repair bool) (StoreCheck, error) {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	if err := t.prepare(ctx); err != nil {
		return StoreCheck{Store: t.name}, err
	}
	ls, err := t.p.log.LogState(ctx)
	if err != nil {
		return StoreCheck{Store: t.name}, err
	}
	for t.applied() < ls.Last {
		changes, err := t.p.log.Changes(ctx, t.applied(), t.batch)
		if err != nil {
			return StoreCheck{Store: t.name}, err
		}
		if len(changes) == 0 {
			break
		}
		if err := t.apply(ctx, changes, changes[len(changes)-1].Seq); err != nil {
			return StoreCheck{Store: t.name}, err
		}
	}
	return t.compare(ctx, repair)
}

// compare diffs the store against the record and, with repair, rewrites
// what differs and moves the checkpoint to the log's head as of the
// comparison. Callers hold applyMu.
func (t *tailer) compare(ctx context.Context, repair bool) (StoreCheck, error) {
	sc := StoreCheck{Store: t.name}
	ls, err := t.p.log.LogState(ctx)
	if err != nil {
		return sc, err
	}
	diffs, err := t.diff(ctx, &sc)
	if err != nil || !repair {
		return sc, err
	}
	ids := make([]string, len(diffs))
	for i, d := range diffs {
		ids[i] = d.ID
	}
	for chunk := range slices.Chunk(ids, t.batch) {
		cur, err := t.p.log.Current(ctx, chunk)
		if err != nil {
			return sc, err
		}
		if err := t.apply(ctx, cur, 0); err != nil {
			return sc, err
		}
		sc.Repaired += len(chunk)
	}
	// Everything up to the head as of the comparison is now in the store.
	if err := t.apply(ctx, nil, ls.Last); err != nil {
		return sc, err
	}
	if sc.Repaired > 0 {
		t.p.logger.Warn("ingest: repaired a derived store from the record", "store", t.name, "documents", sc.Repaired)
		var after StoreCheck
		if _, err := t.diff(ctx, &after); err != nil {
			return sc, err
		}
		sc.Remaining = after.Differences()
	}
	return sc, nil
}

// diff fills sc's counts and examples and returns every difference.
func (t *tailer) diff(ctx context.Context, sc *StoreCheck) ([]Difference, error) {
	sc.Applied = t.applied()
	rec := map[string]uint64{}
	if err := t.p.log.Versions(ctx, func(id string, v uint64) error { rec[id] = v; return nil }); err != nil {
		return nil, err
	}
	have := map[string]uint64{}
	if err := t.store.Versions(ctx, t.logID, func(id string, v uint64) error { have[id] = v; return nil }); err != nil {
		return nil, err
	}
	sc.RecordDocuments, sc.Documents = len(rec), len(have)
	var diffs []Difference
	for _, id := range slices.Sorted(maps.Keys(rec)) {
		rv := rec[id]
		sv, ok := have[id]
		switch {
		case !ok:
			sc.Missing++
			diffs = append(diffs, Difference{ID: id, Kind: DiffMissing, RecordVersion: rv})
		case sv != rv:
			sc.Stale++
			diffs = append(diffs, Difference{ID: id, Kind: DiffStale, RecordVersion: rv, StoreVersion: sv})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(have)) {
		if _, ok := rec[id]; !ok {
			sc.Extra++
			diffs = append(diffs, Difference{ID: id, Kind: DiffExtra, StoreVersion: have[id]})
		}
	}
	slices.SortFunc(diffs, func(a, b Difference) int { return cmp.Compare(a.ID, b.ID) })
	sc.Examples = diffs[:min(len(diffs), maxExamples)]
	return diffs, nil
}
