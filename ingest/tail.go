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
	// recheckEvery is how often a running applier looks at the log's
	// compaction watermark (it also does at start).
	recheckEvery = 5 * time.Minute
)

// tailer applies the record's change log to one derived store: it reads
// the entries after the store's checkpoint, applies them (the store keeps
// the checkpoint with its data), and waits for more. One tailer per store
// and process; replicas sharing a store (Neo4j) each run one, which the
// store's version guard makes harmless.
type tailer struct {
	p       *Pipeline
	name    string
	store   spi.ChangeApplier
	batch   int
	poll    time.Duration
	timeout time.Duration
	wake    chan struct{}
	// awake is closed once the store is kept current: at once, or when
	// Pipeline.Wake wakes a dormant store.
	awake    chan struct{}
	wakeOnce sync.Once

	// applyMu serialises applies, checks and repairs of this store.
	applyMu   sync.Mutex
	ready     bool // the checkpoint was loaded
	logID     string
	checkedAt time.Time // last look at the compaction watermark

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
	if err := t.prepare(ctx); err != nil {
		return 0, err
	}
	changes, err := t.p.log.Changes(ctx, t.applied(), t.batch)
	if err != nil || len(changes) == 0 {
		return 0, err
	}
	if err := t.apply(ctx, changes, changes[len(changes)-1].Seq); err != nil {
		return 0, err
	}
	return len(changes), nil
}

// prepare loads the checkpoint on first use and, at start and every
// recheckEvery, resynchronises the store if compaction removed entries it
// had not applied. Callers hold applyMu.
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
	if ls.Compacted > t.applied() {
		t.p.logger.Warn("ingest: the change log was compacted past this store's checkpoint; resynchronising it from the record",
			"store", t.name, "applied", t.applied(), "compacted", ls.Compacted)
		if _, err := t.compare(ctx, true); err != nil {
			return err
		}
	}
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
