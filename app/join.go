package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/spi"
)

// joinBatch is how many documents one bulk apply writes to the keyword
// index while it is filled from the record.
const joinBatch = 1000

// joiningKeyword is the keyword index of a process that opens it empty
// while the record has a change log: a replica joining with a new data
// directory, or an index that was lost or corrupt and was made anew. It is
// filled from the record in bulk (load), not entry by entry: every
// document the record holds, with its version, in batches of joinBatch,
// then the checkpoint set to the log's head as read before the first page.
// Entries committed meanwhile are applied afterwards by the change-log
// applier, whose first call (AppliedSeq) waits for the load; versions make
// applying them again harmless.
//
// Until the load is done the source answers spi.ErrUnavailable, its health
// is down with the progress and /readyz says not ready: an incomplete
// keyword index is never served as if it were whole.
type joiningKeyword struct {
	*keyword.Backend
	record spi.ChangeLog
	logger *slog.Logger
	now    func() time.Time

	done   chan struct{} // closed when the load has finished
	loaded atomic.Int64  // documents written so far
	// joined is called once the load has finished: the source's breaker,
	// which counted the refusals meanwhile, is closed at once.
	joined func()
}

// joinLoadStarted, when set, is called by every load once it has read the
// log's head and before the first page (a test hook; see export_test.go).
var joinLoadStarted func()

var _ spi.ChangeApplier = (*joiningKeyword)(nil)

func newJoiningKeyword(b *keyword.Backend, record spi.ChangeLog, logger *slog.Logger, now func() time.Time) *joiningKeyword {
	return &joiningKeyword{Backend: b, record: record, logger: logger, now: now, done: make(chan struct{})}
}

// isJoined reports whether the load has finished.
func (j *joiningKeyword) isJoined() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// progress describes the load for health and errors.
func (j *joiningKeyword) progress() string {
	return fmt.Sprintf("the keyword index is being built from the record: %d documents so far", j.loaded.Load())
}

// Retrieve fails with spi.ErrUnavailable until the index is whole (the
// source's breaker counts it, as it counts a server backend not yet
// connected; the load closes it when it ends).
func (j *joiningKeyword) Retrieve(ctx context.Context, req spi.KeywordRequest) ([]spi.Ref, error) {
	if !j.isJoined() {
		return nil, fmt.Errorf("keyword: %w: %s", spi.ErrUnavailable, j.progress())
	}
	return j.Backend.Retrieve(ctx, req)
}

// Health is down, with the progress, until the index is whole.
func (j *joiningKeyword) Health(ctx context.Context) spi.Health {
	if !j.isJoined() {
		return spi.Health{Status: spi.StatusDown, Detail: j.progress()}
	}
	return j.Backend.Health(ctx)
}

// AppliedSeq waits for the load, so the change-log applier starts from the
// head it ends at.
func (j *joiningKeyword) AppliedSeq(ctx context.Context, log string) (uint64, error) {
	select {
	case <-j.done:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return j.Backend.AppliedSeq(ctx, log)
}

// ready is the /readyz condition while the keyword index is being built.
func (j *joiningKeyword) ready(context.Context) error {
	if !j.isJoined() {
		return errors.New(j.progress())
	}
	return nil
}

// run loads until it succeeds or ctx ends, retrying a failed load (the
// record unreachable) every ReconnectInterval.
func (j *joiningKeyword) run(ctx context.Context) {
	for {
		err := j.load(ctx)
		if err == nil {
			close(j.done)
			if j.joined != nil {
				j.joined()
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		j.logger.Warn("app: building the keyword index from the record failed; retrying",
			slog.String("error", err.Error()), slog.Duration("retry_in", ReconnectInterval))
		select {
		case <-ctx.Done():
			return
		case <-time.After(ReconnectInterval):
		}
	}
}

// load writes every document of the record to the index with its version
// and moves the checkpoint to the log's head as read first. Documents
// written during the load are seen in a state at least as new as the head
// (or not at all); their entries come after it.
func (j *joiningKeyword) load(ctx context.Context) error {
	ls, err := j.record.LogState(ctx)
	if err != nil {
		return err
	}
	start := j.now()
	j.loaded.Store(0)
	if joinLoadStarted != nil {
		joinLoadStarted()
	}
	ids := make([]string, 0, joinBatch)
	flush := func() error {
		if len(ids) == 0 {
			return nil
		}
		cur, err := j.record.Current(ctx, ids)
		if err != nil {
			return err
		}
		changes := make([]spi.Change, 0, len(cur))
		for _, c := range cur {
			if c.Doc != nil {
				changes = append(changes, spi.Change{Seq: c.Version, Op: spi.OpUpsert, ID: c.ID, Doc: c.Doc, Version: c.Version})
			}
		}
		if err := j.Backend.ApplyChanges(ctx, ls.ID, changes, 0); err != nil {
			return err
		}
		j.loaded.Add(int64(len(changes)))
		ids = ids[:0]
		return nil
	}
	err = j.record.Versions(ctx, func(id string, _ uint64) error {
		ids = append(ids, id)
		if len(ids) == joinBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = j.Backend.ApplyChanges(ctx, ls.ID, nil, ls.Last)
	}
	if err != nil {
		return fmt.Errorf("app: keyword index from the record: %w", err)
	}
	j.logger.Info("app: keyword index built from the record",
		slog.Int64("documents", j.loaded.Load()), slog.Uint64("checkpoint", ls.Last), slog.Duration("elapsed", j.now().Sub(start)))
	return nil
}

// emptyScanner has no documents: OpenOrRebuild with it makes a missing
// or corrupt index anew, empty, for joiningKeyword to fill.
type emptyScanner struct{}

func (emptyScanner) Scan(context.Context, func(spi.Document) error) error { return nil }
