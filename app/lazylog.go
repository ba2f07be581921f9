package app

import (
	"context"
	"fmt"
	"time"

	"github.com/ragd/ragd/spi"
)

// The change-log capabilities of the lazily opened server stores: the
// PostgreSQL record (spi.ChangeLog) and the Neo4j graph
// (spi.ChangeApplier). Until the server is reachable every call fails fast
// with spi.ErrUnavailable, which the write path answers (record) or
// retries (graph).

var (
	_ spi.ChangeLog     = (*lazyVector)(nil)
	_ spi.ApplyLeaser   = (*lazyVector)(nil)
	_ spi.ChangeApplier = (*lazyGraph)(nil)
)

// ApplyLease passes through to the record once it is connected (replicas
// elect the one that applies the log to Neo4j, which they share).
func (v *lazyVector) ApplyLease(ctx context.Context, name string) (bool, error) {
	b, err := v.get(ctx)
	if err != nil {
		return false, err
	}
	l, ok := b.(spi.ApplyLeaser)
	if !ok {
		return true, nil // no leases: every process applies
	}
	return l.ApplyLease(ctx, name)
}

func (v *lazyVector) changeLog(ctx context.Context) (spi.ChangeLog, error) {
	b, err := v.get(ctx)
	if err != nil {
		return nil, err
	}
	l, ok := b.(spi.ChangeLog)
	if !ok {
		return nil, fmt.Errorf("%s: %w: no change log", v.name, spi.ErrUnsupported)
	}
	return l, nil
}

func (v *lazyVector) Commit(ctx context.Context, writes []spi.Write) ([]spi.WriteResult, error) {
	l, err := v.changeLog(ctx)
	if err != nil {
		return nil, err
	}
	return l.Commit(ctx, writes)
}

func (v *lazyVector) Changes(ctx context.Context, after uint64, limit int) ([]spi.Change, error) {
	l, err := v.changeLog(ctx)
	if err != nil {
		return nil, err
	}
	return l.Changes(ctx, after, limit)
}

func (v *lazyVector) Current(ctx context.Context, ids []string) ([]spi.Change, error) {
	l, err := v.changeLog(ctx)
	if err != nil {
		return nil, err
	}
	return l.Current(ctx, ids)
}

func (v *lazyVector) LogState(ctx context.Context) (spi.LogState, error) {
	l, err := v.changeLog(ctx)
	if err != nil {
		return spi.LogState{}, err
	}
	return l.LogState(ctx)
}

func (v *lazyVector) Versions(ctx context.Context, fn func(id string, version uint64) error) error {
	l, err := v.changeLog(ctx)
	if err != nil {
		return err
	}
	return l.Versions(ctx, fn)
}

func (v *lazyVector) CompactLog(ctx context.Context, before time.Time, upTo uint64) (int, error) {
	l, err := v.changeLog(ctx)
	if err != nil {
		return 0, err
	}
	return l.CompactLog(ctx, before, upTo)
}

func (g *lazyGraph) applier(ctx context.Context) (spi.ChangeApplier, error) {
	b, err := g.get(ctx)
	if err != nil {
		return nil, err
	}
	a, ok := b.(spi.ChangeApplier)
	if !ok {
		return nil, fmt.Errorf("%s: %w: cannot apply the change log", g.name, spi.ErrUnsupported)
	}
	return a, nil
}

func (g *lazyGraph) ApplyChanges(ctx context.Context, log string, changes []spi.Change, through uint64) error {
	a, err := g.applier(ctx)
	if err != nil {
		return err
	}
	return a.ApplyChanges(ctx, log, changes, through)
}

func (g *lazyGraph) AppliedSeq(ctx context.Context, log string) (uint64, error) {
	a, err := g.applier(ctx)
	if err != nil {
		return 0, err
	}
	return a.AppliedSeq(ctx, log)
}

func (g *lazyGraph) Versions(ctx context.Context, log, after string, limit int) ([]spi.IDVersion, error) {
	a, err := g.applier(ctx)
	if err != nil {
		return nil, err
	}
	return a.Versions(ctx, log, after, limit)
}
