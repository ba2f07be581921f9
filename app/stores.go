package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/ragd/ragd/backends/graph"
	graphembedded "github.com/ragd/ragd/backends/graph/embedded"
	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/backends/vector"
	vectorembedded "github.com/ragd/ragd/backends/vector/embedded"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/embedder/builtin"
	"github.com/ragd/ragd/spi"
)

// openStores opens the embedder and every configured store. The vector
// store is the system of record; the keyword index and the graph are
// derived from it through its change log.
func (a *App) openStores(ctx context.Context) error {
	emb, err := OpenEmbedders(ctx, a.Config, EmbedderOptions{Logger: a.Logger, Fallback: a.modelFallback, PullProgress: a.pullProgress})
	if err != nil {
		return err
	}
	a.useEmbedders(emb)
	err = a.openVector(ctx, emb.Document.Dimension())
	if keep := keptPrecision(a.Config, emb, err); keep != "" {
		// A store of the model's vectors in the other precision,
		// embedder.precision left out: the store keeps its precision.
		a.closers = a.closers[:len(a.closers)-1] // emb, added last
		emb.Close()
		cfg := *a.Config
		cfg.Embedder.Precision = keep
		a.Logger.Info("app: the vector store holds the model's vectors in another precision than this CPU's default; keeping it (set embedder.precision and run ragd reembed to change it)",
			slog.String("precision", keep), slog.String("default", builtin.DefaultPrecision()))
		if emb, err = OpenEmbedders(ctx, &cfg, EmbedderOptions{Logger: a.Logger, PullProgress: a.pullProgress}); err != nil {
			return err
		}
		a.useEmbedders(emb)
		err = a.openVector(ctx, emb.Document.Dimension())
	}
	if err != nil {
		if fb := a.EmbedderFallback; fb != nil {
			return fallbackRefused(err, fb)
		}
		return err
	}
	if emb.Metrics != nil {
		if err := a.Registry.Register(emb.Metrics); err != nil {
			return fmt.Errorf("app: embedder metrics: %w", err)
		}
	}
	if err := a.openVectorCaches(); err != nil {
		return err
	}
	// A missing or corrupt keyword index is made anew, empty, and filled
	// from the system of record in the background (join.go); everything
	// else a derived store lacks comes from the record's change log
	// (wirePipeline).
	if err := a.openKeyword(ctx); err != nil {
		return err
	}
	if err := a.openGraph(ctx); err != nil {
		return err
	}
	return nil
}

// checkedEmbedder is the embedder identity the vector store checks at open:
// none while re-embedding (Options.Reembed), which records it at the end.
func (a *App) checkedEmbedder() string {
	if a.reembed {
		return ""
	}
	return a.EmbedderIdentity
}

// useEmbedders makes emb the app's embedders (closed with the app).
func (a *App) useEmbedders(emb *Embedders) {
	a.closers = append(a.closers, emb)
	a.Embedder, a.QueryEmbedder = emb.Document, emb.Query
	a.EmbedderIdentity = emb.Identity
	a.EmbedderFallback = emb.Fallback
	a.embedderCPU = emb.CPU
	a.embedderServiceTime = emb.ServiceTime
	a.embedderKind = emb.Kind(a.Config)
}

// keptPrecision is the precision to reopen the built-in model with when
// the vector store refused emb only for its precision: the store holds the
// same model's vectors in the other one and embedder.precision was left
// out (the CPU's default, builtin.DefaultPrecision). "" otherwise.
func keptPrecision(cfg *config.Config, emb *Embedders, err error) string {
	if err == nil || cfg.Embedder.Kind != config.KindBuiltin || cfg.Embedder.Precision != "" || emb.Fallback != nil {
		return ""
	}
	var recorded string
	var ee *vectorembedded.EmbedderChangedError
	var pe *vector.EmbedderChangedError
	switch {
	case errors.As(err, &ee):
		recorded = ee.Recorded
	case errors.As(err, &pe):
		recorded = pe.Recorded
	default:
		return ""
	}
	for _, p := range []string{config.PrecisionFP32, config.PrecisionInt8} {
		if id := builtin.WithPrecision(emb.Identity, p); id != emb.Identity && id == recorded {
			return p
		}
	}
	return ""
}

func (a *App) openVector(ctx context.Context, dim int) error {
	c := a.Config.Backends.Vector
	switch c.Kind {
	case config.KindNone:
		return nil
	case config.KindEmbedded:
		s, err := vectorembedded.Open(ctx, vectorembedded.Config{
			Dir:       a.Config.Path(c.Dir),
			Dimension: dim,
			Embedder:  a.checkedEmbedder(),
			Distance:  vectorembedded.Distance(c.Distance),
			ANN:       vectorembedded.ANN{MinRows: c.ANN.MinRows, Probe: c.ANN.Probe},
			Now:       a.now,
			Logger:    a.Logger,
		})
		if err != nil {
			return fmt.Errorf("app: backends.vector (embedded): %w", err)
		}
		a.Vector = s
		a.closers = append(a.closers, s)
	case config.KindPgvector:
		vc := vector.Config{
			DSN:       c.DSN,
			Dimension: dim,
			Embedder:  a.checkedEmbedder(),
			Distance:  vector.Distance(c.Distance),
			Table:     c.Table,
			HNSW:      vector.HNSW{EfSearch: c.EFSearch},
			// The bulk index build waits for the derived stores to catch
			// up: they share the machine's CPU with PostgreSQL.
			Index:          vector.IndexConfig{BuildMemoryMB: c.IndexBuildMemMB, Busy: a.derivedBehind},
			MaxConns:       int32(c.MaxConns),
			ConnectTimeout: config.Millis(c.ConnectTimeoutMS),
			Now:            a.now,
			Logger:         a.Logger,
		}
		lv := &lazyVector{dim: dim, lazy: lazy[vectorStore]{
			name:   "vector (pgvector)",
			open:   func(ctx context.Context) (vectorStore, error) { return vector.Open(ctx, vc) },
			logger: a.Logger,
			now:    a.now,
		}}
		if err := lv.start(ctx); err != nil {
			return fmt.Errorf("app: backends.vector (pgvector): %w", err)
		}
		a.Vector = lv
		a.closers = append(a.closers, lv)
		a.background(lv.runIndexer)
	}
	return nil
}

func (a *App) openKeyword(ctx context.Context) error {
	c := a.Config.Backends.Keyword
	switch c.Kind {
	case config.KindNone:
		return nil
	case config.KindOpenSearch:
		// Derived from the record's change log like Neo4j: an empty
		// cluster fills itself from the log (or, once the log is
		// compacted, from the record's documents).
		return a.openOpenSearch(ctx)
	}
	kc := keyword.Config{Dir: a.Config.Path(c.Dir), TitleBoost: c.TitleBoost, MaxK: a.Config.Retriever.MaxWindow, Logger: a.Logger, Now: a.now,
		SettleAfter: config.Millis(c.SettleAfterMS), SettleWithin: config.Seconds(float64(c.SettleWithinS))}
	record, derived := a.Vector.(spi.ChangeLog)
	// Beside the embedded record, on the same disk and in the same
	// process, the index keeps no second copy of titles and texts (nor
	// their term positions, which only Syntax phrases use): as a hydrator
	// it reads the record's, so a page still hydrates while the vector
	// source's circuit is open (docs/keyword.md, "Lean index"). Beside
	// PostgreSQL it keeps them, to hydrate a page while PostgreSQL is down.
	if kc.Lean = a.keywordLean(); kc.Lean {
		kc.Bodies = a.Vector
	}
	if !derived {
		// The keyword index is the record (or there is none to fill it from).
		b, err := keyword.Open(kc)
		if err != nil {
			return fmt.Errorf("app: backends.keyword: %w", err)
		}
		a.Keyword = b
		a.closers = append(a.closers, b)
		return nil
	}
	b, err := keyword.OpenOrRebuild(ctx, kc, emptyScanner{})
	if err != nil {
		return fmt.Errorf("app: backends.keyword: %w", err)
	}
	a.closers = append(a.closers, b)
	n, err := b.DocCount(ctx)
	if err != nil {
		return fmt.Errorf("app: backends.keyword: %w", err)
	}
	if n > 0 {
		a.Keyword = b
		return nil
	}
	j := newJoiningKeyword(b, record, a.Logger, a.now)
	j.joined = func() {
		if a.Breakers != nil {
			if br, ok := a.Breakers.Lookup(spi.SourceKeyword); ok {
				br.CloseUnlessHeld() // a maintenance hold (restored at start) stays
			}
		}
	}
	a.Keyword, a.joining = j, j
	a.background(j.run)
	return nil
}

// keywordLean reports whether the bleve keyword index is lean
// (keyword.Config.Lean): derived from the embedded record.
func (a *App) keywordLean() bool {
	b := a.Config.Backends
	_, derived := a.Vector.(spi.ChangeLog)
	return derived && b.Keyword.Kind == config.KindBleve && b.Vector.Kind == config.KindEmbedded
}

func (a *App) openGraph(ctx context.Context) error {
	c := a.Config.Backends.Graph
	switch c.Kind {
	case config.KindNone:
		return nil
	case config.KindEmbedded:
		gc := graphembedded.Config{Dir: a.Config.Path(c.Dir), MaxDegree: c.MaxDegree, Logger: a.Logger, Now: a.now}
		open := func(ctx context.Context) (*graphembedded.Store, error) {
			s, err := graphembedded.Open(ctx, gc)
			if errors.Is(err, graphembedded.ErrCorrupt) {
				s, err = a.replaceGraph(ctx, gc, err)
			}
			if err != nil {
				return nil, fmt.Errorf("app: backends.graph (embedded): %w", err)
			}
			return s, nil
		}
		if a.Vector != nil {
			// Derived from the record's change log: built once something
			// reads it (wirePipeline, wakingGraph).
			g := newWakingGraph(open, a.Logger, a.now)
			a.Graph = g
			a.closers = append(a.closers, g)
			return nil
		}
		s, err := open(ctx)
		if err != nil {
			return err
		}
		a.Graph = s
		a.closers = append(a.closers, s)
	case config.KindNeo4j:
		gc := graph.Config{
			URI:            c.URI,
			User:           c.User,
			Password:       c.Password,
			Database:       c.Database,
			ConnectTimeout: config.Millis(c.ConnectTimeoutMS),
			MaxDegree:      c.MaxDegree,
			Logger:         a.Logger,
			Now:            a.now,
		}
		lg := &lazyGraph{lazy: lazy[graphStore]{
			name:   "graph (neo4j)",
			open:   func(ctx context.Context) (graphStore, error) { return graph.Open(ctx, gc) },
			logger: a.Logger,
			now:    a.now,
		}}
		if err := lg.start(ctx); err != nil {
			return fmt.Errorf("app: backends.graph (neo4j): %w", err)
		}
		a.Graph = lg
		a.closers = append(a.closers, lg)
	}
	return nil
}

// replaceGraph moves a corrupt embedded graph file aside and opens a fresh
// one: the graph is derived, and its applier fills it from the record's
// change log (or, when the log was compacted, from the record's documents).
func (a *App) replaceGraph(ctx context.Context, gc graphembedded.Config, cause error) (*graphembedded.Store, error) {
	path := filepath.Join(gc.Dir, graphembedded.FileName)
	aside := path + ".corrupt"
	a.Logger.Warn("app: embedded graph store is corrupt; starting a new one that the change log fills",
		slog.String("path", path), slog.String("moved_to", aside), slog.String("error", cause.Error()))
	if err := os.Rename(path, aside); err != nil {
		return nil, fmt.Errorf("%w (and moving it aside failed: %v)", cause, err)
	}
	return graphembedded.Open(ctx, gc)
}

// fallbackRefused is the start-up error of a vector store that refuses the
// hashing stand-in: it holds the model's vectors (or another dimension).
// The store's own advice, `ragd reembed`, would rebuild them with the
// stand-in; the fix is the model.
func fallbackRefused(err error, fb *Fallback) error {
	var ec *vectorembedded.EmbedderChangedError
	if errors.As(err, &ec) {
		return fmt.Errorf("app: %s holds vectors of embedder [%s], which needs the built-in model %s; the model is unavailable (%s) and the hashing stand-in cannot search these vectors. "+
			"Fix: %s (do not run `ragd reembed`: it would rebuild the vectors with the stand-in): %w", ec.Path, ec.Recorded, fb.Model, fb.Reason, fb.Fix, ErrModel)
	}
	return fmt.Errorf("%w; the built-in model %s is unavailable (%s) and the hashing stand-in does not fit this vector store. Fix: %s", err, fb.Model, fb.Reason, fb.Fix)
}

// derivedBehind reports whether a derived store this process keeps
// current is behind the change log's seq (false before the pipeline
// exists).
func (a *App) derivedBehind(seq uint64) bool {
	p := a.pipeline.Load()
	return p != nil && p.Behind(seq)
}
