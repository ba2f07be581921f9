package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/internal/demo"
	"github.com/ragd/ragd/internal/sourcestats"
	"github.com/ragd/ragd/spi"
)

// API builds the HTTP API over the wired components.
func (a *App) API() (*api.Server, error) {
	breakers := a.apiBreakers()
	var docs spi.Hydrator = a.Vector
	if a.Vector == nil {
		docs = firstHydrator(a.Keyword, a.Graph)
	}
	return api.New(api.Config{
		Searcher:  sourcestats.Observed{Retriever: a.Retriever, Window: a.SourceStats, History: a.History},
		Faults:    a.Faults,
		Events:    a.Events,
		Stats:     a.SourceStats,
		History:   a.History,
		Inventory: a.inventory,
		Instance:  a.console.instance,
		StartedAt: a.console.started,

		DisabledSources: a.disabledSources(),
		Writer:          a.Pipeline,
		Documents:       docs,
		Breakers:        breakers,
		Health:          a.Health(),
		Server:          a.Config.Server,
		Ingest:          a.Config.Ingest,
		Auth:            a.Config.Auth,
		Registerer:      a.Registry,
		Gatherer:        a.Registry,
		Logger:          a.Logger,
		Now:             a.now,
		Version:         a.version,
		Ready:           a.ready,

		TracerProvider: a.tracer,
	})
}

// ready is /readyz's own condition: not while the keyword index is being
// built from the record (a joining replica).
func (a *App) ready(ctx context.Context) error {
	if a.joining != nil {
		return a.joining.ready(ctx)
	}
	return nil
}

func firstHydrator(hs ...spi.Hydrator) spi.Hydrator {
	for _, h := range hs {
		if h != nil {
			return h
		}
	}
	return nil
}

// Serve answers HTTP on ln until ctx ends, then stops accepting, lets
// in-flight requests finish within server.shutdown_grace_s, and returns.
// The caller still owns Close.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	srv, err := a.API()
	if err != nil {
		return err
	}
	hs := srv.HTTPServer()

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(srv.Listener(ln)) }()
	a.Logger.Info("ragd: listening", slog.String("addr", ln.Addr().String()), slog.Bool("auth", a.Config.AuthEnabled()))

	select {
	case err := <-errc:
		return fmt.Errorf("app: serve: %w", err)
	case <-ctx.Done():
	}
	grace := time.Duration(a.Config.Server.ShutdownGraceS) * time.Second
	a.Logger.Info("ragd: shutting down", slog.Duration("grace", grace))
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err = hs.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		hs.Close()
		return fmt.Errorf("app: shutdown: %w", err)
	}
	return nil
}

// LoadDemo writes the bundled sample corpus through the pipeline once per
// data directory (demo.Seeded), and returns how many documents were
// written: later calls write nothing, so a restart keeps the user's edits
// and deletions of sample documents.
func (a *App) LoadDemo(ctx context.Context) (int, error) {
	dir := a.Config.DataDir
	if seeded, err := demo.Seeded(dir); err != nil || seeded {
		return 0, err
	}
	docs, err := demo.Documents()
	if err != nil {
		return 0, err
	}
	if h := firstHydrator(a.Vector, a.Keyword, a.Graph); h != nil {
		ids := make([]string, len(docs))
		for i, d := range docs {
			ids[i] = d.ID
		}
		// Loaded by a ragd that kept no marker: record it, load nothing.
		if found, _, err := h.Hydrate(ctx, ids); err == nil && len(found) > 0 {
			return 0, demo.MarkSeeded(dir, a.now())
		}
	}
	var failed []string
	// The demo is queried right away: wait for the derived stores.
	for _, r := range a.Pipeline.Upsert(ctx, docs, ingest.WriteOptions{Wait: time.Minute}) {
		if r.Status == "failed" {
			failed = append(failed, r.ID+": "+r.Error)
		}
	}
	if len(failed) > 0 {
		return len(docs) - len(failed), fmt.Errorf("app: demo corpus: %d documents failed, first: %s", len(failed), failed[0])
	}
	return len(docs), demo.MarkSeeded(dir, a.now())
}

// Listen opens the configured listener.
func Listen(cfg *config.Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return nil, fmt.Errorf("app: server.listen %s: %w", cfg.Server.Listen, err)
	}
	return ln, nil
}
