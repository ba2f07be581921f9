package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	graphembedded "github.com/ragd/ragd/backends/graph/embedded"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/spi"
)

// wakingGraph is the embedded graph store beside a record with a change
// log. It is built only once something reads it. With the shipped
// rag.yaml nothing does (the graph source has weight 0 and the expansion
// is off), and keeping a graph nobody queries cost a third of ingestion's
// CPU, about 400 MiB of disk and its read model's heap at 100,000
// documents. So the store stays closed and its change-log applier dormant
// (ingest.NamedApplier.Dormant) until it is woken:
//
//   - at start, when rag.yaml's defaults read the graph source or its
//     expansion (wirePipeline);
//   - by the first query of an operator (spi.IsOperator: an admin key
//     bound to no tenant) that asks for the graph (a source or expansion
//     switched on in the request), or by Wake (ragd eval). Another key's
//     query asking for it is answered without it (spi.ErrDormant) and
//     leaves it dormant: building it costs every tenant.
//
// Waking opens the file (it may hold an earlier build, with its
// checkpoint) and lets the applier catch up from the change log, or from
// the record's documents when compaction removed entries it needs. Until
// the store has applied the log up to the head read when it woke, graph
// queries fail with spi.ErrNotReady saying so (which the graph's breaker
// does not count), and its health is down with the progress: a partial
// graph is never served as if it were whole.
// The store stays awake until the process ends; the next process decides
// again from its configuration.
type wakingGraph struct {
	open   func(ctx context.Context) (*graphembedded.Store, error)
	logger *slog.Logger
	now    func() time.Time
	// Set by attach, before any query.
	pipeline *ingest.Pipeline
	spawn    func(func(ctx context.Context))

	mu      sync.Mutex
	st      *graphembedded.Store // nil until opened
	woken   bool                 // a wake is under way or done
	serving bool                 // caught up with the head read at waking
	target  uint64               // that head (0 until read)
	lastTry time.Time            // the last failed open
	err     error                // why the last wake failed
	closed  bool
}

// graphWakeHook, when set, is called by every wake once the store is open
// and its applier woken, before the head is read (a test hook; see
// export_test.go).
var graphWakeHook func()

var (
	_ spi.GraphRetrievalBackend = (*wakingGraph)(nil)
	_ spi.ChangeApplier         = (*wakingGraph)(nil)
	_ spi.DocCounter            = (*wakingGraph)(nil)
	_ spi.Closer                = (*wakingGraph)(nil)
)

func newWakingGraph(open func(ctx context.Context) (*graphembedded.Store, error), logger *slog.Logger, now func() time.Time) *wakingGraph {
	return &wakingGraph{open: open, logger: logger, now: now}
}

// attach gives the store the pipeline whose dormant applier it wakes and
// the app's background runner.
func (g *wakingGraph) attach(p *ingest.Pipeline, spawn func(func(ctx context.Context))) {
	g.pipeline, g.spawn = p, spawn
}

// wakeNow wakes the store at start: the file is opened now, so an error
// (a file locked by another process) fails start-up as it always did; the
// catch-up runs in the background.
func (g *wakingGraph) wakeNow(ctx context.Context) error {
	st, err := g.open(ctx)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.st, g.woken = st, true
	g.mu.Unlock()
	g.spawn(g.catchUp)
	return nil
}

// wake starts waking the store in the background, unless it is awake, a
// wake is under way, or the last one failed less than ReconnectInterval
// ago.
func (g *wakingGraph) wake() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.woken || g.closed || g.pipeline == nil || (!g.lastTry.IsZero() && g.now().Sub(g.lastTry) < ReconnectInterval) {
		return
	}
	g.woken = true
	g.logger.Info("app: the graph was asked for and is dormant (nothing read it until now); building it from the change log")
	g.spawn(func(ctx context.Context) {
		st, err := g.open(ctx)
		g.mu.Lock()
		if err != nil || g.closed {
			if err == nil {
				err = errors.New("closed")
				st.Close()
			}
			g.woken, g.err, g.lastTry = false, err, g.now()
			g.mu.Unlock()
			g.logger.Error("app: opening the graph store failed", slog.String("error", err.Error()))
			return
		}
		g.st = st
		g.mu.Unlock()
		g.catchUp(ctx)
	})
}

// catchUp wakes the applier and waits until it has applied the log up to
// the head as of now; the store serves from then on.
func (g *wakingGraph) catchUp(ctx context.Context) {
	start := g.now()
	if err := g.pipeline.Wake(spi.SourceGraph); err != nil {
		g.fail(err)
		return
	}
	if graphWakeHook != nil {
		graphWakeHook()
	}
	var head uint64
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, ReconnectInterval) {
		h, err := g.pipeline.Head(ctx)
		if err == nil {
			head = h
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
	g.mu.Lock()
	g.target = head
	g.mu.Unlock()
	if err := g.pipeline.WaitApplied(ctx, spi.SourceGraph, head); err != nil {
		return // closing
	}
	g.mu.Lock()
	g.serving = true
	g.mu.Unlock()
	g.logger.Info("app: the graph store has caught up with the change log and serves",
		slog.Uint64("head", head), slog.Duration("took", g.now().Sub(start)))
}

func (g *wakingGraph) fail(err error) {
	g.mu.Lock()
	g.err = err
	g.mu.Unlock()
	g.logger.Error("app: waking the graph store failed", slog.String("error", err.Error()))
}

// waitServing wakes the graph and waits until it serves or ctx ends.
func (g *wakingGraph) waitServing(ctx context.Context) error {
	for {
		if st, _ := g.serves(); st != nil {
			return nil
		}
		g.wake()
		select {
		case <-ctx.Done():
			return fmt.Errorf("graph: waiting for the build: %w", context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// serves returns the store once it serves, else nil and why not.
func (g *wakingGraph) serves() (*graphembedded.Store, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.serving:
		return g.st, ""
	case !g.woken && g.err != nil:
		return nil, "the graph store could not be opened: " + g.err.Error()
	case !g.woken:
		return nil, "the graph is not built: nothing read it until now (rag.yaml gives the graph source no weight and leaves the expansion off)"
	case g.st == nil || g.target == 0 && !g.serving:
		return nil, "the graph is being built from the change log"
	}
	return nil, fmt.Sprintf("the graph is being built from the change log: %d of %d entries applied", min(g.pipeline.Applied(spi.SourceGraph), g.target), g.target)
}

// reader returns the store for a query, waking it when it sleeps and the
// query is an operator's (spi.IsOperator): building the graph costs every
// tenant CPU, heap and disk, so no tenant's query decides it.
func (g *wakingGraph) reader(ctx context.Context) (*graphembedded.Store, error) {
	st, why := g.serves()
	if st != nil {
		return st, nil
	}
	if !spi.IsOperator(ctx) && !g.waking() {
		return nil, fmt.Errorf("graph: %w: %w: %w: %s; only an operator's query wakes it", spi.ErrDormant, spi.ErrNotReady, spi.ErrUnavailable, why)
	}
	g.wake()
	return nil, fmt.Errorf("graph: %w: %w: %s", spi.ErrNotReady, spi.ErrUnavailable, why)
}

// waking reports whether a wake is under way or done.
func (g *wakingGraph) waking() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.woken
}

// opened returns the open store, without waking it.
func (g *wakingGraph) opened() (*graphembedded.Store, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.st == nil {
		return nil, fmt.Errorf("graph: %w: the graph store is not open (dormant)", spi.ErrUnavailable)
	}
	return g.st, nil
}

// Expand and MatchEntities refuse what the store would refuse without
// reading (no seeds, no word to match, invalid options) the same way,
// without waking it.

func (g *wakingGraph) Expand(ctx context.Context, seeds []string, opts spi.ExpandOptions) ([]spi.Ref, error) {
	if err := graphembedded.CheckExpand(seeds, opts); err != nil {
		return nil, err
	}
	st, err := g.reader(ctx)
	if err != nil {
		return nil, err
	}
	return st.Expand(ctx, seeds, opts)
}

func (g *wakingGraph) MatchEntities(ctx context.Context, req spi.KeywordRequest) ([]spi.Ref, error) {
	if err := graphembedded.CheckMatch(req); err != nil {
		return nil, err
	}
	st, err := g.reader(ctx)
	if err != nil {
		return nil, err
	}
	return st.MatchEntities(ctx, req)
}

// Query is unsupported by the embedded store, awake or not.
func (g *wakingGraph) Query(context.Context, string, map[string]any) ([]map[string]any, error) {
	return nil, fmt.Errorf("graph/embedded: query: %w (no query language; use the neo4j backend)", spi.ErrUnsupported)
}

// Hydrate answers once the store serves; it never wakes it (the record
// hydrates first).
func (g *wakingGraph) Hydrate(ctx context.Context, ids []string) ([]spi.Document, []string, error) {
	st, why := g.serves()
	if st == nil {
		return nil, nil, fmt.Errorf("graph: %w: %w: %s", spi.ErrNotReady, spi.ErrUnavailable, why)
	}
	return st.Hydrate(ctx, ids)
}

// Health is up while dormant (nothing reads the graph, so nothing is
// missing), down with the progress while it is built, then the store's.
func (g *wakingGraph) Health(ctx context.Context) spi.Health {
	st, why := g.serves()
	if st != nil {
		return st.Health(ctx)
	}
	g.mu.Lock()
	dormant := !g.woken && g.err == nil
	g.mu.Unlock()
	if dormant {
		return spi.Health{Status: spi.StatusUp, Detail: "dormant: " + why + "; an operator's query (an admin key of no tenant) that asks for the graph builds it"}
	}
	return spi.Health{Status: spi.StatusDown, Detail: why}
}

// DocCount counts the open store's documents; a dormant one has none to
// count.
func (g *wakingGraph) DocCount(ctx context.Context) (int, error) {
	st, err := g.opened()
	if err != nil {
		return 0, err
	}
	return st.DocCount(ctx)
}

// The change-log applier's calls reach the store once it is open; the
// pipeline makes none while it is dormant.

func (g *wakingGraph) ApplyChanges(ctx context.Context, log string, changes []spi.Change, through uint64) error {
	st, err := g.opened()
	if err != nil {
		return err
	}
	return st.ApplyChanges(ctx, log, changes, through)
}

func (g *wakingGraph) AppliedSeq(ctx context.Context, log string) (uint64, error) {
	st, err := g.opened()
	if err != nil {
		return 0, err
	}
	return st.AppliedSeq(ctx, log)
}

func (g *wakingGraph) Versions(ctx context.Context, log, after string, limit int) ([]spi.IDVersion, error) {
	st, err := g.opened()
	if err != nil {
		return nil, err
	}
	return st.Versions(ctx, log, after, limit)
}

// Close closes the store if it was opened; a wake under way closes what
// it opens.
func (g *wakingGraph) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	if g.st == nil {
		return nil
	}
	st := g.st
	g.st = nil
	g.serving = false
	return st.Close()
}
