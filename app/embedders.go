package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"

	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/embedder/hashing"
	"github.com/ragd/ragd/embedder/vcache"
	"github.com/ragd/ragd/guard"
	"github.com/ragd/ragd/spi"
)

// Embedding is the expensive step of ragd with a real model, so it gets
// three things here (docs/embedders.md):
//
//   - two guards: query embedding keeps the "embedder" guard the retriever
//     uses (adaptive limit, breaker); document embedding (ingest, reembed)
//     goes through a guard of its own ("document_embedder": its breaker)
//     and a fixed number of batch slots that a batch waits for, so a bulk
//     ingest can neither trip the query embedder's breaker nor take its
//     slots, nor pull its adaptive limit down with slow 64-text batches;
//   - a persistent vector cache in front of document embedding, so a text
//     is embedded once per embedder (re-ingests, interrupted reembeds,
//     `ragd eval` re-runs);
//   - an in-memory LRU of query vectors.

// Embedders are the configured embedder on its own: the embedder for
// document texts, the one for query texts (they differ for models that
// mark queries, such as e5) and the identity of the vector space both
// produce, which the vector store records. App opens them with the
// stores; commands that need no store (ragd embed) open them alone.
type Embedders struct {
	Document, Query spi.Embedder
	Identity        string
	// CPU marks a model that runs in this process on the CPU: document
	// embedding then runs one batch at a time.
	CPU bool
	// ServiceTime, set for a model that queues and batches its queries (the
	// built-in one), is what one more waiting query adds to a query's wait;
	// the query guard then admits by expected wait (guard.NewWaitLimit).
	ServiceTime func() time.Duration
	// Fallback is set when the hashing embedder stands in for a missing
	// built-in model (EmbedderOptions.Fallback).
	Fallback *Fallback
	// Metrics, when set, exports the model's own figures (the built-in
	// one's passes, batch sizes and waits).
	Metrics prometheus.Collector
	closers []io.Closer
}

// Kind is the kind of embedder actually running: the configured one, or
// hashing while it stands in for a missing model.
func (e *Embedders) Kind(cfg *config.Config) string {
	if e.Fallback != nil {
		return config.KindHashing
	}
	return cfg.Embedder.Kind
}

// OpenEmbedders opens the embedder rag.yaml configures. A built-in model
// missing from the model cache is pulled first (within
// embedder.pull_timeout_s); one that cannot be had is an error naming the
// fix, or, with o.Fallback, the hashing embedder with Embedders.Fallback.
func OpenEmbedders(ctx context.Context, cfg *config.Config, o EmbedderOptions) (*Embedders, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	logger := o.Logger
	switch cfg.Embedder.Kind {
	case config.KindHashing:
		e, err := hashing.New(hashing.Config{Dimension: cfg.Embedder.Dimension})
		if err != nil {
			return nil, fmt.Errorf("app: embedder: %w", err)
		}
		return &Embedders{Document: e, Query: e, Identity: "kind=hashing fingerprint=" + e.Fingerprint()}, nil
	case config.KindBuiltin:
		return openBuiltin(ctx, cfg, o)
	case config.KindOpenAI:
		e, err := openOpenAIEmbedder(ctx, cfg, logger)
		if err != nil {
			return nil, err
		}
		return &Embedders{Document: e, Query: e.ForQueries(), Identity: e.Identity()}, nil
	}
	return nil, fmt.Errorf("app: embedder.kind %q: %w", cfg.Embedder.Kind, errNotConfigured)
}

// Close releases the model, if the embedder holds one.
func (e *Embedders) Close() error {
	var errs []error
	for i := len(e.closers) - 1; i >= 0; i-- {
		errs = append(errs, e.closers[i].Close())
	}
	e.closers = nil
	return errors.Join(errs...)
}

// openVectorCaches puts the query LRU in front of QueryEmbedder and opens
// the persistent cache, when configured. The hashing embedder gets
// neither: it computes a vector faster than a lookup. A cache file held
// by another process (a server running on the same data directory) is
// skipped with a warning.
func (a *App) openVectorCaches() error {
	c := a.Config.Embedder
	if a.embedderKind == config.KindHashing {
		return nil
	}
	if c.Cache.QueryEntries > 0 {
		l, err := vcache.NewLRU(a.QueryEmbedder, a.EmbedderIdentity, vcache.RoleQuery, c.Cache.QueryEntries)
		if err != nil {
			return fmt.Errorf("app: embedder.cache.query_entries: %w", err)
		}
		a.QueryEmbedder, a.queryCache = l, l
	}
	if c.Cache.MaxMB > 0 {
		dir := a.Config.Path(c.Cache.Dir)
		s, err := vcache.Open(vcache.Config{Dir: dir, MaxBytes: int64(c.Cache.MaxMB) << 20, Logger: a.Logger})
		switch {
		case errors.Is(err, vcache.ErrLocked):
			a.Logger.Warn("app: the vector cache is in use by another process; embedding without it",
				slog.String("dir", dir))
		case err != nil:
			a.Logger.Warn("app: the vector cache cannot be opened; embedding without it",
				slog.String("dir", dir), slog.String("error", err.Error()))
		default:
			a.VectorCache = s
			a.closers = append(a.closers, s)
		}
	}
	if a.VectorCache != nil || a.queryCache != nil {
		if err := a.Registry.Register(vcache.NewCollector(a.VectorCache, a.queryCache)); err != nil {
			return fmt.Errorf("app: vector cache metrics: %w", err)
		}
	}
	return nil
}

// wireDocumentEmbedder builds DocumentEmbedder: Embedder behind the
// document guard, the batch slots and the persistent cache (outermost, so
// a hit takes no slot and counts nothing).
func (a *App) wireDocumentEmbedder() {
	if a.Embedder == nil {
		return
	}
	e := a.Embedder
	if a.DocumentGuard != nil {
		e = guard.Embedder(e, a.DocumentGuard)
	}
	e = &slotEmbedder{e: e, slots: semaphore.NewWeighted(int64(a.documentSlots()))}
	if a.VectorCache != nil {
		e = a.VectorCache.Wrap(e, a.EmbedderIdentity, vcache.RoleDocument)
	}
	a.DocumentEmbedder = e
}

// documentSlots is the number of document batches embedded at once: one
// for a model on this machine's CPU (a batch keeps every core busy, and
// queries need some left), embedder.document_concurrency otherwise.
func (a *App) documentSlots() int {
	if a.embedderCPU && a.Config.Embedder.DocumentConcurrency == 0 {
		return 1
	}
	e := a.Config.Embedder
	e.Kind = a.embedderKind
	return e.DocumentSlots()
}

// MaxQueuedQueries bounds the query embeddings in flight for a model that
// batches its queries, whatever its measured speed allows.
const MaxQueuedQueries = 1024

// queryLimiter is the concurrency limit of query embedding. A model that
// queues and batches its queries (Embedders.ServiceTime) gets a wait limit:
// a query is admitted while its expected wait, queries in flight times the
// measured time per query, fits 80 % of retriever.embed_timeout_ms (or of
// what is left of its own budget), at least GOMAXPROCS and at most
// MaxQueuedQueries. Others get the adaptive limit of the shared concurrency
// settings; an in-process model without batching, about one call per core
// (more only queue on the CPU), up to twice that while latency holds.
// concurrency.overrides.embedder chooses the adaptive limit with its
// settings in every case.
func (a *App) queryLimiter(base, override config.LimitSettings) (guard.Limiter, error) {
	n := runtime.GOMAXPROCS(0)
	if a.embedderServiceTime != nil && override == (config.LimitSettings{}) {
		return guard.NewWaitLimit(guard.WaitConfig{Deadline: a.sourceTimeout(spi.SourceEmbedder),
			ServiceTime: a.embedderServiceTime, Min: n, Max: max(n, MaxQueuedQueries), Now: a.now})
	}
	if a.embedderCPU {
		base = config.LimitSettings{MinLimit: n, InitialLimit: n, MaxLimit: 2 * n}
	}
	l := limitSettings(base, override)
	return guard.NewAdaptive(guard.AdaptiveConfig{Min: l.MinLimit, Max: l.MaxLimit, Initial: l.InitialLimit})
}

// slotEmbedder lets at most slots calls through at once; the others wait,
// as long as their context allows.
type slotEmbedder struct {
	e     spi.Embedder
	slots *semaphore.Weighted
}

func (s *slotEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := s.slots.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	defer s.slots.Release(1)
	return s.e.Embed(ctx, texts)
}

func (s *slotEmbedder) Dimension() int { return s.e.Dimension() }

// Unwrap returns the embedder behind the slots.
func (s *slotEmbedder) Unwrap() spi.Embedder { return s.e }
