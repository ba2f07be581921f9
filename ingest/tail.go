package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ragd/ragd/spi"
)

// Backoff between failed applies to a derived store.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
	// growAfter is how many batches in a row must apply in time before a
	// batch size shrunk by a timeout doubles again.
	growAfter = 8
	// recheckEvery is how often a running applier checks that the
	// record's log has not gone back behind its store (it also does at
	// start).
	recheckEvery = 5 * time.Minute
)

// tailer applies the record's change log to one derived store: it reads
// the entries after the store's checkpoint, applies them (the store keeps
// the checkpoint with its data), and waits for more. One tailer per store
// and process; replicas sharing a store (Neo4j) each run one, and when the
// record offers leases (spi.ApplyLeaser) only the lease holder's applies:
// the others follow the store's checkpoint. (Without leases, or while a
// lease changes hands, two may apply at once, which the store's version
// guard makes harmless.)
type tailer struct {
	p       *Pipeline
	name    string
	store   spi.ChangeApplier
	shared  bool
	batch   int
	poll    time.Duration
	timeout time.Duration
	wake    chan struct{}
	// awake is closed once the store is kept current: at once, or when
	// Pipeline.Wake wakes a dormant store.
	awake    chan struct{}
	wakeOnce sync.Once

	// applyMu serialises applies, checks and repairs of this store, and
	// guards the fields up to mu.
	applyMu   sync.Mutex
	size      int  // entries per apply: batch, less after timeouts (fit)
	fits      int  // applies in time since size last changed
	resyncing bool // a resynchronisation from the record is under way (check.go)
	ready     bool // the checkpoint was loaded
	logID     string
	checkedAt time.Time // last check of the log's end against the checkpoint

	mu      sync.Mutex
	seq     uint64        // the checkpoint as last applied or loaded
	moved   chan struct{} // closed (and replaced) when seq advances
	lastErr string        // the last apply failure, cleared by a success
}

// poke wakes the tailer after a local commit.
func (t *tailer) poke() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// dormant reports whether the store waits to be woken.
func (t *tailer) dormant() bool {
	select {
	case <-t.awake:
		return false
	default:
		return true
	}
}

// applied returns the checkpoint.
func (t *tailer) applied() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seq
}

func (t *tailer) advance(seq uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastErr = ""
	if seq > t.seq {
		t.seq = seq
		close(t.moved)
		t.moved = make(chan struct{})
	}
}

func (t *tailer) setErr(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastErr = safeError(context.Background(), t.name, err)
}

// waitFor waits until the checkpoint reaches seq; false when ctx ended
// first.
func (t *tailer) waitFor(ctx context.Context, seq uint64) bool {
	for {
		t.mu.Lock()
		if t.seq >= seq {
			t.mu.Unlock()
			return true
		}
		ch := t.moved
		t.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// run applies the log, once the store is awake, until ctx ends.
func (t *tailer) run(ctx context.Context) {
	select {
	case <-t.awake:
	case <-ctx.Done():
		return
	}
	backoff := minBackoff
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		n, err := t.step(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := time.Duration(0)
		switch {
		case err != nil:
			t.setErr(err)
			t.p.metrics.applyError(t.name)
			t.p.logger.Warn("ingest: applying the change log failed; retrying", "store", t.name, "retry_in", backoff, "err", err)
			wait, backoff = backoff, min(2*backoff, maxBackoff)
		case n == 0:
			backoff = minBackoff
			wait = t.poll
		default:
			backoff = minBackoff
			continue
		}
		// A failing store is not retried faster because writes arrive.
		wake := t.wake
		if err != nil {
			wake = nil
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-wake:
		}
	}
}

// step applies the next batch of entries and returns how many it applied.
func (t *tailer) step(ctx context.Context) (int, error) {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	if t.resyncing {
		return 0, nil // a check is resynchronising the store (check.go)
	}
	if err := t.prepare(ctx); err != nil {
		return 0, err
	}
	if leader, err := t.leads(ctx); err != nil || !leader {
		return 0, err
	}
	changes, err := t.next(ctx)
	if err != nil || len(changes) == 0 {
		return 0, err
	}
	err = t.apply(ctx, changes, changes[len(changes)-1].Seq)
	t.fit(ctx, len(changes), err)
	if err != nil {
		return 0, err
	}
	return len(changes), nil
}

// leads reports whether this process applies the log to the store: always
// for a store of its own; for a shared one when it holds the store's lease
// (or the record has none). A follower reads the store's checkpoint
// instead, which the holder moves. Callers hold applyMu, after prepare.
func (t *tailer) leads(ctx context.Context) (bool, error) {
	l, ok := t.p.log.(spi.ApplyLeaser)
	if !t.shared || !ok {
		return true, nil
	}
	held, err := l.ApplyLease(ctx, t.name+"@"+t.logID)
	if err != nil || held {
		return held, err
	}
	seq, err := t.store.AppliedSeq(ctx, t.logID)
	if err != nil {
		return false, err
	}
	t.advance(seq)
	return false, nil
}

// limit is the number of entries the next apply reads.
func (t *tailer) limit() int {
	if t.size <= 0 {
		t.size = t.batch
	}
	return t.size
}

// fit adapts the batch size to what the store applies in time: an apply
// of n entries that ran out of time (while ctx still runs) halves it, so
// a batch too slow for the store is never retried as it is forever; after
// growAfter applies in time it doubles again, up to the configured batch.
// A single entry that runs out of time is retried as it is (with backoff):
// the store is down or hung, and nothing can be skipped.
func (t *tailer) fit(ctx context.Context, n int, err error) {
	switch {
	case err == nil:
		if t.fits++; t.size < t.batch && t.fits >= growAfter {
			t.size, t.fits = min(t.batch, 2*t.size), 0
		}
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) && n > 1:
		t.size, t.fits = max(1, n/2), 0
		t.p.logger.Warn("ingest: applying a batch to a derived store ran out of time; applying smaller batches",
			"store", t.name, "entries", n, "next_batch", t.size, "timeout", t.timeout)
	}
}

// next reads the entries after the checkpoint. It never lets the store
// pass entries it has not applied: when the first entry read is not the
// one after the checkpoint and compaction removed entries above the
// checkpoint (another replica compacted while this store was away or
// failing), it resynchronises the store from the record instead and
// returns no entries (the caller reads again from the new checkpoint).
// A gap compaction does not explain is a hole in the sequence
// (PostgreSQL's may skip numbers) and is read past. Callers hold applyMu.
func (t *tailer) next(ctx context.Context) ([]spi.Change, error) {
	from := t.applied()
	changes, err := t.p.log.Changes(ctx, from, t.limit())
	if err != nil || len(changes) == 0 || changes[0].Seq == from+1 {
		return changes, err
	}
	ls, err := t.p.log.LogState(ctx)
	if err != nil || ls.Compacted <= from {
		return changes, err
	}
	t.p.logger.Warn("ingest: the change log was compacted past this store's checkpoint; resynchronising it from the record",
		"store", t.name, "applied", from, "compacted", ls.Compacted)
	return nil, t.resync(ctx)
}

// prepare loads the checkpoint on first use and, at start and every
// recheckEvery, checks that the record's log has not gone back behind the
// store (a record restored from a backup). Callers hold applyMu.
func (t *tailer) prepare(ctx context.Context) error {
	if t.ready && t.p.now().Sub(t.checkedAt) < recheckEvery {
		return nil
	}
	ls, err := t.p.log.LogState(ctx)
	if err != nil {
		return err
	}
	if !t.ready {
		seq, err := t.store.AppliedSeq(ctx, ls.ID)
		if err != nil {
			return err
		}
		t.logID, t.ready = ls.ID, true
		t.advance(seq)
	}
	if t.applied() > ls.Last {
		// The record is older than the store: it was restored from a
		// backup. Entries written from now on would reuse sequences the
		// store has passed, so applying cannot go on.
		t.ready = false
		return fmt.Errorf("ingest: %s: %w: the store applied the log up to %d but the record's log ends at %d (restored from a backup?); rebuild the store (docs/ingest.md)",
			t.name, spi.ErrUnavailable, t.applied(), ls.Last)
	}
	t.checkedAt = t.p.now()
	return nil
}

// apply applies changes and moves the checkpoint to through. A batch the
// store rejects as invalid is bisected; a single change it rejects is
// skipped (logged and counted), so one bad document cannot stop the store.
func (t *tailer) apply(ctx context.Context, changes []spi.Change, through uint64) error {
	actx, cancel := context.WithTimeout(ctx, t.timeout)
	end := noEnd
	if len(changes) > 0 {
		actx, end = t.p.storeSpan(actx, spanApply, t.name, len(changes))
	}
	err := t.store.ApplyChanges(actx, t.logID, changes, through)
	if err != nil && actx.Err() != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
		// The apply's own deadline passed, whatever the store made of it.
		err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	cancel()
	if err != nil {
		end(len(changes))
	} else {
		end(0)
	}
	if err == nil {
		t.advance(through)
		t.p.metrics.applied(t.name, len(changes))
		return nil
	}
	if !errors.Is(err, spi.ErrInvalidQuery) || ctx.Err() != nil {
		return fmt.Errorf("ingest: apply to %s: %w", t.name, err)
	}
	if len(changes) <= 1 {
		if len(changes) == 1 {
			t.p.metrics.skipped(t.name)
			t.p.logger.Error("ingest: a derived store rejects a document the record holds; skipping it (ragd check lists it)",
				"store", t.name, "id", changes[0].ID, "version", changes[0].Version, "err", err)
		}
		return t.apply(ctx, nil, through)
	}
	half := len(changes) / 2
	if err := t.apply(ctx, changes[:half], changes[half-1].Seq); err != nil {
		return err
	}
	return t.apply(ctx, changes[half:], through)
}
