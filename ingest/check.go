package ingest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sort"
	"time"

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

// Check compares every derived store with the record, by ids and
// versions, after letting each store catch up with the log (a store
// shared by replicas whose apply lease another process holds: after
// waiting for the holder to catch it up, see follow). With repair,
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
	if t.resyncing {
		return StoreCheck{Store: t.name}, fmt.Errorf("ingest: %s: %w: the store is being resynchronised from the record; check again later", t.name, spi.ErrUnavailable)
	}
	if err := t.prepare(ctx); err != nil {
		return StoreCheck{Store: t.name}, err
	}
	ls, err := t.p.log.LogState(ctx)
	if err != nil {
		return StoreCheck{Store: t.name}, err
	}
	var fw followWait
	for t.applied() < ls.Last {
		from := t.applied()
		if t.shared {
			follow, err := t.followed(ctx, &fw)
			if err != nil {
				return StoreCheck{Store: t.name}, err
			}
			if follow {
				continue
			}
		}
		changes, err := t.next(ctx)
		if err != nil {
			return StoreCheck{Store: t.name}, err
		}
		if len(changes) == 0 {
			if t.applied() > from {
				continue // resynchronised past a compaction
			}
			break
		}
		if err := t.apply(ctx, changes, changes[len(changes)-1].Seq); err != nil {
			return StoreCheck{Store: t.name}, err
		}
	}
	return t.compare(ctx, repair, true)
}

// follow is the catch-up of check on a store shared by replicas (Neo4j,
// OpenSearch) whose apply lease another process holds: that process
// applies the log, and this one waits for the store's checkpoint instead
// of applying the same entries a second time (they would be repeats the
// version guard refuses, but each one costs the store a write
// transaction, and racing the holder's transactions on the same entities
// makes both retry). It reports true after one wait, with t's checkpoint
// refreshed; false when this process is to apply itself: it holds the
// lease (or the record offers none), or the holder's checkpoint has not
// moved for the apply timeout (stopped, or cut off from the store), which
// is as safe as any repeat; the check then applies the rest itself. w
// carries the wait across calls. Callers hold applyMu; follow releases it
// while it waits.
func (t *tailer) follow(ctx context.Context, w *followWait) (bool, error) {
	if w.stalled {
		return false, nil
	}
	leader, err := t.leads(ctx) // a follower's leads reads the checkpoint
	if err != nil || leader {
		return false, err
	}
	now := t.p.now()
	switch {
	case w.since.IsZero() || t.applied() > w.seen:
		w.since, w.seen = now, t.applied()
	case now.Sub(w.since) >= t.timeout:
		t.p.logger.Warn("ingest: check: the store's lease holder has not moved its checkpoint; applying here",
			"store", t.name, "applied", t.applied(), "waited", now.Sub(w.since))
		w.stalled = true
		return false, nil
	}
	if t.p.checkWaitHook != nil {
		t.p.checkWaitHook(t.name)
	}
	t.applyMu.Unlock()
	defer t.applyMu.Lock()
	timer := time.NewTimer(t.poll)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-timer.C:
	}
	return true, nil
}

// followed is follow for the check's loop: after a wait, a
// resynchronisation another step began meanwhile ends the check as check
// does when it finds one under way.
func (t *tailer) followed(ctx context.Context, w *followWait) (bool, error) {
	waited, err := t.follow(ctx, w)
	if err == nil && waited && t.resyncing {
		err = fmt.Errorf("ingest: %s: %w: the store is being resynchronised from the record; check again later", t.name, spi.ErrUnavailable)
	}
	return waited, err
}

// followWait is a check's wait for a shared store's lease holder: when
// the checkpoint was last seen to move, where to, and whether the holder
// was given up on.
type followWait struct {
	since   time.Time
	seen    uint64
	stalled bool
}

// resync repairs the store from the record after compaction removed
// entries it had not applied. Until it succeeds the store's applier
// applies nothing (step) and checks wait (check), since moving the
// checkpoint past the gap would lose what the gap held. Callers hold
// applyMu.
func (t *tailer) resync(ctx context.Context) error {
	t.resyncing = true
	defer func() { t.resyncing = false }()
	// No count after the repair: nobody reads this report, and its reads
	// of the record (applyMu released) would leave the store marked as
	// resynchronising, and a check refused, after it is current again.
	_, err := t.compare(ctx, true, false)
	return err
}

// compare diffs the store against the record and, with repair, rewrites
// what differs and moves the checkpoint to the log's head as of the
// comparison; with recount, a repair is followed by a second comparison
// that counts what remains. It goes a page of t.batch documents at a
// time and holds applyMu only while it compares a page: callers hold
// applyMu, compare releases it while it reads the record's next page and
// holds it again when it returns.
func (t *tailer) compare(ctx context.Context, repair, recount bool) (StoreCheck, error) {
	sc := StoreCheck{Store: t.name, Applied: t.applied()}
	ls, err := t.p.log.LogState(ctx)
	if err != nil {
		return sc, err
	}
	if err := t.diff(ctx, &sc, repair); err != nil || !repair {
		return sc, err
	}
	// Everything up to the head as of the comparison is now in the store:
	// each document either matched the record or was rewritten with its
	// state read after the comparison began.
	if err := t.apply(ctx, nil, ls.Last); err != nil {
		return sc, err
	}
	if sc.Repaired > 0 {
		t.p.logger.Warn("ingest: repaired a derived store from the record", "store", t.name, "documents", sc.Repaired)
	}
	if sc.Repaired > 0 && recount {
		var after StoreCheck
		if err := t.diff(ctx, &after, false); err != nil {
			return sc, err
		}
		sc.Remaining = after.Differences()
	}
	return sc, nil
}

// errStop ends a Versions visit early.
var errStop = errors.New("ingest: stop")

// diff compares the store with the record a page at a time, merging the
// two in id order, fills sc's counts and examples and, with repair,
// rewrites each page's differences. The record's page is read without
// applyMu and may be stale by the time the store's is read under it: a
// document that looks different is confirmed with the record's current
// state (spi.ChangeLog.Current), which repairs write, so neither a write
// nor an apply between the two reads counts as a difference. Callers hold
// applyMu; diff releases it while it reads the record.
func (t *tailer) diff(ctx context.Context, sc *StoreCheck, repair bool) error {
	page := t.batch
	var recErr error
	next, stop := iter.Pull2(func(yield func(string, uint64) bool) {
		recErr = t.p.log.Versions(ctx, func(id string, v uint64) error {
			if !yield(id, v) {
				return errStop
			}
			return nil
		})
	})
	defer stop()
	rec := make([]spi.IDVersion, 0, page)
	storeAfter := ""
	for done := false; !done; {
		rec = rec[:0]
		t.applyMu.Unlock()
		for len(rec) < page {
			id, v, ok := next()
			if !ok {
				done = true
				break
			}
			rec = append(rec, spi.IDVersion{ID: id, Version: v})
		}
		t.applyMu.Lock()
		if recErr != nil && !errors.Is(recErr, errStop) {
			return recErr
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// The store's documents up to the record page's last id (all the
		// rest after the record's last page), read under applyMu.
		hi := ""
		if !done && len(rec) > 0 {
			hi = rec[len(rec)-1].ID
		}
		var have []spi.IDVersion
		for {
			got, err := t.store.Versions(ctx, t.logID, storeAfter, page)
			if err != nil {
				return err
			}
			n := len(got)
			if hi != "" {
				n = sort.Search(len(got), func(i int) bool { return got[i].ID > hi })
			}
			have = append(have, got[:n]...)
			if n > 0 {
				storeAfter = got[n-1].ID
			}
			if n < len(got) || len(got) < page {
				break
			}
		}
		sc.RecordDocuments += len(rec)
		sc.Documents += len(have)
		if err := t.diffPage(ctx, sc, rec, have, repair); err != nil {
			return err
		}
	}
	return nil
}

// diffPage compares one page of the record with the store's documents in
// the same id range, both in id order, confirms each difference with the
// record's current state and, with repair, rewrites what differs.
func (t *tailer) diffPage(ctx context.Context, sc *StoreCheck, rec, have []spi.IDVersion, repair bool) error {
	var suspects []string
	stored := map[string]uint64{} // the store's version of each suspect it holds
	i, j := 0, 0
	for i < len(rec) || j < len(have) {
		switch {
		case j == len(have) || (i < len(rec) && rec[i].ID < have[j].ID):
			suspects = append(suspects, rec[i].ID)
			i++
		case i == len(rec) || have[j].ID < rec[i].ID:
			suspects = append(suspects, have[j].ID)
			stored[have[j].ID] = have[j].Version
			j++
		default:
			if rec[i].Version != have[j].Version {
				suspects = append(suspects, rec[i].ID)
				stored[have[j].ID] = have[j].Version
			}
			i, j = i+1, j+1
		}
	}
	if len(suspects) == 0 {
		return nil
	}
	slices.Sort(suspects)
	suspects = slices.Compact(suspects) // an order the store disagrees on can list one twice
	cur, err := t.p.log.Current(ctx, suspects)
	if err != nil {
		return err
	}
	var fix []spi.Change
	for _, c := range cur {
		sv, held := stored[c.ID]
		var d Difference
		switch {
		case c.Doc != nil && !held:
			d = Difference{ID: c.ID, Kind: DiffMissing, RecordVersion: c.Version}
			sc.Missing++
		case c.Doc != nil && sv != c.Version:
			d = Difference{ID: c.ID, Kind: DiffStale, RecordVersion: c.Version, StoreVersion: sv}
			sc.Stale++
		case c.Doc == nil && held:
			d = Difference{ID: c.ID, Kind: DiffExtra, StoreVersion: sv}
			sc.Extra++
		default:
			continue // changed between the two reads; the log brings it
		}
		if len(sc.Examples) < maxExamples {
			sc.Examples = append(sc.Examples, d)
		}
		fix = append(fix, c)
	}
	if !repair {
		return nil
	}
	for chunk := range slices.Chunk(fix, t.batch) {
		if err := t.apply(ctx, chunk, 0); err != nil {
			return err
		}
		sc.Repaired += len(chunk)
	}
	return nil
}
