package app

import (
	"context"
	"fmt"
	"os"

	"github.com/ragd/ragd/backends/keyword/opensearch"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/spi"
)

// keywordStore is the capability set of a server keyword store: derived
// from the record's change log, never written otherwise.
type keywordStore interface {
	spi.KeywordRetrievalBackend
	spi.ChangeApplier
	spi.Closer
}

// lazyKeyword is a keywordStore opened on first use (the OpenSearch
// backend), so ragd starts, and answers from its other sources, while the
// cluster is down.
type lazyKeyword struct {
	lazy[keywordStore]
}

var (
	_ keywordStore      = (*lazyKeyword)(nil)
	_ spi.ChangeApplier = (*lazyKeyword)(nil)
)

// openOpenSearch wires backends.keyword of kind opensearch.
func (a *App) openOpenSearch(ctx context.Context) error {
	c := a.Config.Backends.Keyword
	oc := opensearch.Config{
		Hosts:              c.Hosts,
		IndexPrefix:        c.IndexPrefix,
		Shards:             c.Shards,
		Replicas:           c.Replicas,
		Username:           c.Username,
		Password:           c.Password,
		InsecureSkipVerify: c.InsecureSkipVerify,
		TitleBoost:         c.TitleBoost,
		MaxK:               min(a.Config.Retriever.MaxWindow, 10000),
		ConnectTimeout:     config.Millis(c.ConnectTimeoutMS),
		RefreshInterval:    config.Millis(c.RefreshIntervalMS),
		Logger:             a.Logger,
		Now:                a.now,
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(a.Config.Path(c.CAFile))
		if err != nil {
			return fmt.Errorf("app: backends.keyword.ca_file: %w", err)
		}
		oc.CACert = pem
	}
	if err := oc.Validate(); err != nil {
		return fmt.Errorf("app: backends.keyword (opensearch): %w", err)
	}
	lk := &lazyKeyword{lazy: lazy[keywordStore]{
		name:   "keyword (opensearch)",
		open:   func(ctx context.Context) (keywordStore, error) { return opensearch.Open(ctx, oc) },
		logger: a.Logger,
		now:    a.now,
	}}
	if err := lk.start(ctx); err != nil {
		return fmt.Errorf("app: backends.keyword (opensearch): %w", err)
	}
	a.Keyword = lk
	a.closers = append(a.closers, lk)
	return nil
}

func (k *lazyKeyword) Retrieve(ctx context.Context, req spi.KeywordRequest) ([]spi.Ref, error) {
	b, err := k.get(ctx)
	if err != nil {
		return nil, err
	}
	return b.Retrieve(ctx, req)
}

func (k *lazyKeyword) Hydrate(ctx context.Context, ids []string) ([]spi.Document, []string, error) {
	b, err := k.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	return b.Hydrate(ctx, ids)
}

func (k *lazyKeyword) Health(ctx context.Context) spi.Health {
	return k.health(ctx, func(b keywordStore) spi.Health { return b.Health(ctx) })
}

func (k *lazyKeyword) ApplyChanges(ctx context.Context, log string, changes []spi.Change, through uint64) error {
	b, err := k.get(ctx)
	if err != nil {
		return err
	}
	return b.ApplyChanges(ctx, log, changes, through)
}

func (k *lazyKeyword) AppliedSeq(ctx context.Context, log string) (uint64, error) {
	b, err := k.get(ctx)
	if err != nil {
		return 0, err
	}
	return b.AppliedSeq(ctx, log)
}

func (k *lazyKeyword) Versions(ctx context.Context, log, after string, limit int) ([]spi.IDVersion, error) {
	b, err := k.get(ctx)
	if err != nil {
		return nil, err
	}
	return b.Versions(ctx, log, after, limit)
}

func (k *lazyKeyword) Close() error { return k.close() }
