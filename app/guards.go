package app

import (
	"context"
	"fmt"
	"time"

	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/guard"
	"github.com/ragd/ragd/internal/faults"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// probeText is the recovery probes' query: plain words every analyzer
// keeps, no user data.
const probeText = "ragd recovery probe"

// readPath is what queries (and the recovery probes) call: the stores, or
// the stores behind the fault injector when server.debug_faults is on.
type readPath struct {
	vector   spi.VectorRetrievalBackend
	keyword  spi.KeywordRetrievalBackend
	graph    spi.GraphRetrievalBackend
	embedder spi.Embedder
}

func (a *App) wireReadPath() {
	a.read = readPath{a.Vector, a.Keyword, a.Graph, a.QueryEmbedder}
	if !a.Config.Server.DebugFaults {
		return
	}
	a.Logger.Warn("ragd: FAULT INJECTION IS ON (server.debug_faults: true): an admin can make any source slow, hung or failing " +
		"through /debug/faults; for drills only, never in production")
	a.Faults = faults.New()
	if a.Vector != nil {
		a.read.vector = a.Faults.Vector(a.Vector)
	}
	if a.Keyword != nil {
		a.read.keyword = a.Faults.Keyword(a.Keyword)
	}
	if a.Graph != nil {
		a.read.graph = a.Faults.Graph(a.Graph)
	}
	if a.QueryEmbedder != nil {
		a.read.embedder = a.Faults.Embedder(a.QueryEmbedder)
	}
}

// wireGuards builds one guard per gated source: the backend's circuit
// (breaker plus background recovery probe; the expansion shares the
// graph's) and an adaptive concurrency limit. It needs the stores open, for
// the probes.
func (a *App) wireGuards() error {
	a.Guards = map[string]*guard.Guard{}
	circuits := map[string]*guard.Circuit{}
	if a.Breakers != nil {
		warmup := config.Seconds(a.Config.Breakers.WarmupTimeoutS)
		for _, name := range spi.Backends() {
			p := guard.ProbeConfig{Warmup: warmup, Target: a.sourceTimeout(name), Logger: a.Logger}
			if warmup > 0 {
				p.Probe = a.probe(name)
			}
			c := guard.NewCircuit(a.Breakers.Get(name), p)
			circuits[name] = c
			if c.Probed() {
				a.background(c.Run)
			}
		}
		circuits[spi.SourceGraphExpand] = circuits[spi.SourceGraph]
	}
	cc := a.Config.Concurrency
	for _, name := range spi.GatedSources() {
		if !a.configured(name) {
			continue
		}
		gc := guard.Config{Circuit: circuits[name], Now: a.now}
		if cc.Enabled {
			var lim guard.Limiter
			var err error
			if name == spi.SourceEmbedder {
				lim, err = a.queryLimiter(cc.LimitSettings, cc.Overrides[name])
			} else {
				l := limitSettings(cc.LimitSettings, cc.Overrides[name])
				lim, err = guard.NewAdaptive(guard.AdaptiveConfig{Min: l.MinLimit, Max: l.MaxLimit, Initial: l.InitialLimit})
			}
			if err != nil {
				return fmt.Errorf("app: concurrency.%s: %w", name, err)
			}
			gc.Limiter = lim
		}
		if gc.Circuit == nil && gc.Limiter == nil {
			continue
		}
		a.Guards[name] = guard.New(name, gc)
	}
	// Document embedding: its own breaker; its concurrency is the fixed
	// number of batch slots a batch waits for (wireDocumentEmbedder), not
	// an adaptive limit that sheds.
	if c := circuits[spi.SourceDocumentEmbedder]; c != nil && a.Embedder != nil {
		a.DocumentGuard = guard.New(spi.SourceDocumentEmbedder, guard.Config{Circuit: c, Now: a.now})
	}
	if err := a.Registry.Register(guard.NewCollector(a.guardList)); err != nil {
		return fmt.Errorf("app: guard metrics: %w", err)
	}
	return nil
}

// guardList returns the guards in spi.GatedSources order, then the
// document embedder's.
func (a *App) guardList() []*guard.Guard {
	var out []*guard.Guard
	for _, name := range spi.GatedSources() {
		if g := a.Guards[name]; g != nil {
			out = append(out, g)
		}
	}
	if a.DocumentGuard != nil {
		out = append(out, a.DocumentGuard)
	}
	return out
}

// configured reports whether gated source name has a backend.
func (a *App) configured(name string) bool {
	switch name {
	case spi.SourceVector:
		return a.Vector != nil
	case spi.SourceKeyword:
		return a.Keyword != nil
	case spi.SourceGraph, spi.SourceGraphExpand:
		return a.Graph != nil
	case spi.SourceEmbedder:
		return a.Embedder != nil
	}
	return false
}

// gates returns the guards as the retriever's gates.
func (a *App) gates() map[string]spi.Gate {
	m := make(map[string]spi.Gate, len(a.Guards))
	for name, g := range a.Guards {
		m[name] = g
	}
	return m
}

// limitSettings applies the non-zero settings of o on top of base.
func limitSettings(base, o config.LimitSettings) config.LimitSettings {
	if o.MinLimit > 0 {
		base.MinLimit = o.MinLimit
	}
	if o.MaxLimit > 0 {
		base.MaxLimit = o.MaxLimit
	}
	if o.InitialLimit > 0 {
		base.InitialLimit = o.InitialLimit
	}
	return base
}

// sourceTimeout is a backend's per-query deadline: a probe answering
// within it finds the backend warm.
func (a *App) sourceTimeout(name string) time.Duration {
	r := a.Config.Retriever
	ms := r.Sources[name].TimeoutMS
	if name == spi.SourceEmbedder || name == spi.SourceDocumentEmbedder {
		ms = r.EmbedTimeoutMS
	}
	if ms <= 0 {
		return retriever.DefaultSourceTimeout
	}
	return config.Millis(ms)
}

// probe returns the recovery probe of backend name: one cheap,
// representative call through the same code path as a query.
func (a *App) probe(name string) func(context.Context) error {
	switch name {
	case spi.SourceVector:
		return func(ctx context.Context) error {
			if a.read.vector == nil || a.read.embedder == nil {
				return nil
			}
			v := make([]float32, a.read.embedder.Dimension())
			v[0] = 1
			_, err := a.read.vector.Retrieve(ctx, spi.VectorRequest{Vector: v, K: 1})
			return err
		}
	case spi.SourceKeyword:
		return func(ctx context.Context) error {
			if a.read.keyword == nil {
				return nil
			}
			_, err := a.read.keyword.Retrieve(ctx, spi.KeywordRequest{Text: probeText, K: 1})
			return err
		}
	case spi.SourceGraph:
		// Both graph calls: a recovering Neo4j plans and caches each query
		// shape once, on the probe's time rather than a user's.
		return func(ctx context.Context) error {
			if a.read.graph == nil {
				return nil
			}
			if _, err := a.read.graph.MatchEntities(ctx, spi.KeywordRequest{Text: probeText, K: 1}); err != nil {
				return err
			}
			_, err := a.read.graph.Expand(ctx, []string{probeText}, spi.ExpandOptions{Hops: 1, Limit: 1})
			return err
		}
	case spi.SourceDocumentEmbedder:
		return func(ctx context.Context) error {
			if a.Embedder == nil {
				return nil
			}
			_, err := a.Embedder.Embed(ctx, []string{probeText})
			return err
		}
	default: // the query embedder
		return func(ctx context.Context) error {
			if a.read.embedder == nil {
				return nil
			}
			_, err := a.read.embedder.Embed(ctx, []string{probeText})
			return err
		}
	}
}

// circuitOf returns the circuit of name's guard, or nil.
func (a *App) circuitOf(name string) *guard.Circuit {
	if g := a.Guards[name]; g != nil {
		return g.Circuit()
	}
	return nil
}

// healthOf is h seen through name's circuit, when it has one.
func (a *App) healthOf(name string, h spi.HealthChecker) spi.HealthChecker {
	if c := a.circuitOf(name); c != nil {
		return guard.Health(h, c)
	}
	return h
}
