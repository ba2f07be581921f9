// Package app wires ragd together from a loaded rag.yaml: the embedder, the
// three stores, one circuit breaker per backend, the hybrid retriever, the
// write pipeline and the HTTP API. cmd/ragd only parses flags and calls it,
// so end-to-end tests reuse the exact wiring the binary runs.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"

	"github.com/ragd/ragd/api"
	graphembedded "github.com/ragd/ragd/backends/graph/embedded"
	"github.com/ragd/ragd/backends/keyword/opensearch"
	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/embedder/vcache"
	"github.com/ragd/ragd/guard"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/ingest/keyphrase"
	"github.com/ragd/ragd/internal/events"
	"github.com/ragd/ragd/internal/faults"
	"github.com/ragd/ragd/internal/history"
	"github.com/ragd/ragd/internal/sourcestats"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// Options are the process-level dependencies New does not read from
// rag.yaml.
type Options struct {
	// Logger receives JSON logs; nil builds one on stderr at the configured
	// level.
	Logger *slog.Logger
	// Registry receives every metric; nil creates a fresh registry with the
	// Go and process collectors.
	Registry *prometheus.Registry
	// Now is the clock for breakers and stores; nil means time.Now.
	Now func() time.Time
	// Version is reported by the API.
	Version string
	// TracerProvider, when set, makes the spans instead of the one
	// rag.yaml's tracing section describes (tests pass an in-memory one).
	TracerProvider trace.TracerProvider
	// Reembed opens the vector store without checking that its vectors
	// come from the configured embedder, for Reembed.
	Reembed bool
	// ModelFallback lets ragd start on the hashing embedder when the
	// configured built-in model cannot be had (`ragd serve`: the service
	// comes up and says so loudly; see App.EmbedderFallback). Without it a
	// missing model fails New with the fix.
	ModelFallback bool
	// PullProgress receives the progress of a model pulled at start; nil
	// shows none.
	PullProgress io.Writer
	// KeepState keeps the console's state in data_dir — the timeline
	// (events.jsonl, bounded) and the maintenance holds (holds.json) — so
	// both survive a restart. ragd serve sets it; tools that open the
	// stores beside a running server leave it off.
	KeepState bool
}

// App is a wired ragd instance. Close releases every store.
type App struct {
	Config   *config.Config
	Logger   *slog.Logger
	Registry *prometheus.Registry
	// Breakers is nil when breakers are disabled in rag.yaml.
	Breakers *breaker.Registry

	// Embedder, Vector, Keyword and Graph are the stores (nil when not
	// configured); Guards put each behind its circuit and concurrency
	// limit, keyed by spi.GatedSources names. Embedder embeds documents,
	// QueryEmbedder query text (they differ for models that mark queries,
	// such as e5); EmbedderIdentity names the vector space both produce,
	// which the vector store records.
	Embedder         spi.Embedder
	QueryEmbedder    spi.Embedder
	EmbedderIdentity string
	// DocumentEmbedder is what the write path and Reembed embed with:
	// Embedder behind DocumentGuard (a breaker of its own), a bounded
	// number of batches in flight and the persistent VectorCache (nil when
	// off). QueryEmbedder is behind the in-memory query LRU when one is
	// configured. See embedders.go.
	DocumentEmbedder spi.Embedder
	DocumentGuard    *guard.Guard
	VectorCache      *vcache.Store
	// EmbedderFallback is set while the hashing embedder stands in for a
	// built-in model that could not be had (Options.ModelFallback): the
	// health report, `ragd status` and the start-up log say so.
	EmbedderFallback *Fallback
	Vector           spi.VectorRetrievalBackend
	Keyword          spi.KeywordRetrievalBackend
	Graph            spi.GraphRetrievalBackend
	Guards           map[string]*guard.Guard
	// Faults is the run-time fault injector in front of the read path,
	// nil unless server.debug_faults is on.
	Faults *faults.Injector
	read   readPath
	// joining is the keyword index while it is built from the record
	// (nil when it was whole at open).
	joining *joiningKeyword

	Retriever *retriever.HybridRetriever
	Pipeline  *ingest.Pipeline
	// pipeline is Pipeline for background work started before it exists
	// (the pgvector indexer asks whether the derived stores are behind).
	pipeline atomic.Pointer[ingest.Pipeline]

	// Events is the console's timeline; SourceStats its per-source window
	// and History its last 15 minutes, fed by the queries and requests
	// the API answers.
	Events      *events.Ring
	SourceStats *sourcestats.Window
	History     *history.Recorder
	console     console

	embedderCPU bool
	// embedderServiceTime is Embedders.ServiceTime: set for a model that
	// batches its queries, whose query guard then admits by expected wait.
	embedderServiceTime func() time.Duration
	embedderKind        string // the kind running: the configured one, or hashing as a fallback
	modelFallback       bool
	pullProgress        io.Writer
	queryCache          *vcache.LRU

	now            func() time.Time
	version        string
	reembed        bool
	closers        []io.Closer
	tracer         trace.TracerProvider
	breakerMetrics *api.BreakerMetrics

	bgCtx    context.Context // background work owned by the app, cancelled by Close
	bgCancel context.CancelFunc
	bgWG     sync.WaitGroup
}

// New opens every configured store and wires the retriever and the write
// pipeline. On error, whatever was opened is closed again.
func New(ctx context.Context, cfg *config.Config, opts Options) (_ *App, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &App{Config: cfg, Logger: opts.Logger, Registry: opts.Registry, now: opts.Now, version: opts.Version, reembed: opts.Reembed,
		modelFallback: opts.ModelFallback && !opts.Reembed, pullProgress: opts.PullProgress}
	if a.Logger == nil {
		a.Logger = NewLogger(os.Stderr, cfg.Log.Level)
	}
	if a.Registry == nil {
		a.Registry = prometheus.NewRegistry()
		a.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if a.now == nil {
		a.now = time.Now
	}
	a.bgCtx, a.bgCancel = context.WithCancel(context.Background())
	if err := a.wireConsole(opts.KeepState); err != nil {
		return nil, err
	}
	if err := a.wireTracing(ctx, opts.TracerProvider); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()

	if cfg.Breakers.Enabled {
		if a.breakerMetrics, err = api.RegisterBreakerMetrics(a.Registry, nil); err != nil {
			return nil, fmt.Errorf("app: breaker metrics: %w", err)
		}
		if a.Breakers, err = newBreakers(cfg, a.now, a.onTransition); err != nil {
			return nil, err
		}
		a.breakerMetrics.SetBreakers(a.Breakers)
	}
	if err := a.openStores(ctx); err != nil {
		return nil, err
	}
	a.wireReadPath()
	if err := a.wireGuards(); err != nil {
		return nil, err
	}
	a.wireDocumentEmbedder()
	if err := a.wireRetriever(); err != nil {
		return nil, err
	}
	if err := a.wirePipeline(); err != nil {
		return nil, err
	}
	a.Logger.Info("ragd: ready to serve",
		slog.String("vector", cfg.Backends.Vector.Kind),
		slog.String("keyword", cfg.Backends.Keyword.Kind),
		slog.String("graph", cfg.Backends.Graph.Kind),
		slog.String("embedder", a.embedderKind),
		slog.Bool("breakers", cfg.Breakers.Enabled))
	a.startConsole()
	return a, nil
}

func (a *App) wireRetriever() error {
	c := a.Config.Retriever
	d := retriever.Defaults{
		Limit:      c.Limit,
		Window:     c.Window,
		Fusion:     retriever.FusionOptions{Mode: c.Fusion, K: c.RRFK},
		MinSources: c.MinSources,
		Budget:     config.Millis(c.BudgetMS),
		Sources:    map[string]retriever.SourceOptions{},
		Expand: retriever.ExpandOptions{
			Enabled: c.Expand.Enabled,
			Seeds:   c.Expand.Seeds,
			Hops:    c.Expand.Hops,
			Limit:   c.Expand.Limit,
		},
	}
	off := false
	if w := c.Expand.Weight; w != nil {
		// The retriever reads weight 0 as "default"; in rag.yaml it means
		// the list takes no part in the ranking.
		if *w == 0 {
			d.Expand.Enabled = &off
		}
		d.Expand.Weight = *w
	}
	for _, name := range spi.RetrievalSources() {
		sc := c.Sources[name]
		o := retriever.SourceOptions{Enabled: sc.Enabled, K: sc.K, TimeoutMS: sc.TimeoutMS, Weight: a.Config.SourceWeightFor(name, a.embedderKind)}
		if o.Weight == 0 {
			o.Enabled = &off
		}
		d.Sources[name] = o
	}
	d.Sources[spi.SourceGraphExpand] = retriever.SourceOptions{TimeoutMS: c.Expand.TimeoutMS}

	d.EmbedTimeout = config.Millis(c.EmbedTimeoutMS)
	// Hydrators carry their source's name, so the retriever skips a store
	// whose circuit is open at once (the next store covers) instead of
	// costing every page its hydration deadline.
	var hydrators []retriever.NamedHydrator
	if a.Vector != nil {
		hydrators = append(hydrators, retriever.NamedHydrator{Name: spi.SourceVector, Hydrator: a.Vector})
	}
	if a.Keyword != nil {
		hydrators = append(hydrators, retriever.NamedHydrator{Name: spi.SourceKeyword, Hydrator: a.Keyword})
	}
	if a.Graph != nil {
		hydrators = append(hydrators, retriever.NamedHydrator{Name: spi.SourceGraph, Hydrator: a.Graph})
	}
	r, err := retriever.New(retriever.Config{
		Vector:    a.read.vector,
		Keyword:   a.read.keyword,
		Graph:     a.read.graph,
		Embedder:  a.read.embedder,
		Gates:     a.gates(),
		Hydrators: hydrators,
		Defaults:  d,
		Limits: retriever.Limits{
			MaxLimit:  c.MaxLimit,
			MaxWindow: c.MaxWindow,
			MaxOffset: c.MaxOffset,
			MaxK:      c.MaxWindow,
		},
		Registerer: a.Registry,
		Logger:     a.Logger,
		Now:        a.now,

		TracerProvider: a.tracer,
	})
	if err != nil {
		return fmt.Errorf("app: retriever: %w", err)
	}
	a.Retriever = r
	return nil
}

// wirePipeline builds the write path: the vector store is the record
// (with its change log) and the keyword index and the graph apply that log
// in the background until Close. Without a vector store the keyword index
// (or the graph) is the record and nothing is derived.
func (a *App) wirePipeline() error {
	c := a.Config.Ingest
	pc := ingest.Config{
		Embedder:   a.DocumentEmbedder,
		BatchSize:  c.BatchSize,
		Limits:     ingest.Limits{MaxTextBytes: c.MaxTextBytes},
		Poll:       time.Duration(c.ApplyPollMS) * time.Millisecond,
		Retention:  time.Duration(c.LogRetentionH) * time.Hour,
		Registerer: a.Registry,
		Logger:     a.Logger,
		Now:        a.now,

		TracerProvider: a.tracer,
	}
	if c.LogRetentionH == 0 {
		pc.Retention = -1
	}
	type named struct {
		name  string
		store any
	}
	var stores []named
	if a.Vector != nil {
		stores = append(stores, named{spi.SourceVector, a.Vector})
	}
	if a.Keyword != nil {
		stores = append(stores, named{spi.SourceKeyword, a.Keyword})
	}
	if a.Graph != nil {
		stores = append(stores, named{spi.SourceGraph, a.Graph})
	}
	for i, st := range stores {
		if i == 0 {
			rec, ok := st.store.(spi.Indexer)
			if !ok {
				return fmt.Errorf("app: the %s store cannot be written", st.name)
			}
			pc.Record, pc.RecordName = rec, st.name
			continue
		}
		ap, ok := st.store.(spi.ChangeApplier)
		if !ok {
			return fmt.Errorf("app: the %s store cannot apply the change log", st.name)
		}
		_, waking := st.store.(*wakingGraph)
		// Neo4j and OpenSearch are one store for every replica: the
		// replica holding its apply lease applies the log to it, the
		// others follow. OpenSearch and the embedded graph take larger
		// batches.
		_, neo4j := st.store.(*lazyGraph)
		_, search := st.store.(*lazyKeyword)
		shared, batch := neo4j || search, 0
		switch {
		case search:
			batch = opensearch.ApplyBatch
		case waking:
			batch = cmp.Or(a.Config.Backends.Graph.ApplyBatch, graphembedded.ApplyBatch)
		}
		pc.Derived = append(pc.Derived, ingest.NamedApplier{Name: st.name, Applier: ap, Dormant: waking, Shared: shared, ApplyBatch: batch})
	}
	if c.ExtractEntities {
		x, err := keyphrase.New(keyphrase.Config{})
		if err != nil {
			return fmt.Errorf("app: entity extractor: %w", err)
		}
		pc.Extractor = x
	}
	p, err := ingest.New(pc)
	if err != nil {
		return fmt.Errorf("app: ingest pipeline: %w", err)
	}
	a.Pipeline = p
	a.pipeline.Store(p)
	if g, ok := a.Graph.(*wakingGraph); ok {
		g.attach(p, a.background)
		if a.readsGraph() {
			if err := g.wakeNow(a.bgCtx); err != nil {
				return err
			}
		}
	}
	a.background(p.Run)
	if c.CheckAtStart && len(pc.Derived) > 0 {
		a.background(a.checkAtStart)
	}
	return nil
}

// readsGraph reports whether a query that sets nothing reads the graph:
// the graph source or its expansion is on in rag.yaml's defaults.
func (a *App) readsGraph() bool {
	for _, d := range a.Retriever.SourceDefaults() {
		if (d.Name == spi.SourceGraph || d.Name == spi.SourceGraphExpand) && d.Enabled {
			return true
		}
	}
	return false
}

// WakeGraph builds the embedded graph if nothing read it so far (see
// wakingGraph) and waits until it serves, or ctx ends. Other graph stores
// are always kept; for them it returns at once.
func (a *App) WakeGraph(ctx context.Context) error {
	if g, ok := a.Graph.(*wakingGraph); ok {
		return g.waitServing(ctx)
	}
	return nil
}

// checkAtStart compares the derived stores with the record once, repairing
// what differs; a record that is not reachable yet is retried.
func (a *App) checkAtStart(ctx context.Context) {
	for wait := time.Second; ; wait = min(2*wait, time.Minute) {
		rep, err := a.Pipeline.Check(ctx, true)
		if err == nil {
			for _, s := range rep.Stores {
				level := slog.LevelInfo
				if s.Differences() > 0 || s.Error != "" {
					level = slog.LevelWarn
				}
				a.Logger.Log(ctx, level, "app: start-up check of a derived store against the record",
					slog.String("store", s.Store), slog.Int("missing", s.Missing), slog.Int("stale", s.Stale),
					slog.Int("extra", s.Extra), slog.Int("repaired", s.Repaired), slog.String("error", s.Error))
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		a.Logger.Warn("app: start-up check postponed", slog.String("error", err.Error()), slog.Duration("retry_in", wait))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// Health returns every configured component's health checker, by the
// names the API reports: vector, keyword, graph and embedder.
func (a *App) Health() map[string]spi.HealthChecker {
	m := map[string]spi.HealthChecker{}
	if a.Vector != nil {
		m[spi.SourceVector] = a.healthOf(spi.SourceVector, a.Vector)
	}
	if a.Keyword != nil {
		m[spi.SourceKeyword] = a.healthOf(spi.SourceKeyword, a.Keyword)
	}
	if a.Graph != nil {
		m[spi.SourceGraph] = a.healthOf(spi.SourceGraph, a.Graph)
	}
	if a.Embedder != nil {
		m[spi.SourceEmbedder] = a.healthOf(spi.SourceEmbedder, embedderHealth{e: a.Embedder, fallback: a.EmbedderFallback})
	}
	return m
}

// background runs fn on its own goroutine; Close cancels ctx and waits.
func (a *App) background(fn func(ctx context.Context)) {
	a.bgWG.Add(1)
	go func() {
		defer a.bgWG.Done()
		fn(a.bgCtx)
	}()
}

// Close stops background work and releases every store, in reverse order of
// opening.
func (a *App) Close() error {
	a.bgCancel()
	a.bgWG.Wait()
	var errs []error
	if a.console.running {
		a.console.running = false
		a.publishServer(events.ServerStopped)
	}
	if a.Events != nil {
		errs = append(errs, a.Events.Close())
	}
	for i := len(a.closers) - 1; i >= 0; i-- {
		errs = append(errs, a.closers[i].Close())
	}
	a.closers = nil
	return errors.Join(errs...)
}

// NewLogger builds the JSON logger ragd writes operational events with.
func NewLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}
