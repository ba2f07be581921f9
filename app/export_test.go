package app

import (
	"context"
	"errors"
	"github.com/ragd/ragd/api"
	"log/slog"
	"time"

	"github.com/ragd/ragd/config"
)

// Lazy is lazy[string] for tests of the reconnect logic.
type Lazy = lazy[string]

// NewLazy returns a lazy backend that opens with open.
func NewLazy(open func(ctx context.Context) (string, error), now func() time.Time) *Lazy {
	return &Lazy{name: "test", open: open, logger: slog.New(slog.DiscardHandler), now: now}
}

func (l *lazy[T]) Get(ctx context.Context) (T, error) { return l.get(ctx) }

// SetJoinHook makes every keyword load from the record call f once it has
// read the log's head; the returned function removes it.
func SetJoinHook(f func()) (restore func()) {
	joinLoadStarted = f
	return func() { joinLoadStarted = nil }
}

// Ready is the /readyz condition of a.
func (a *App) Ready(ctx context.Context) error { return a.ready(ctx) }

// ModelDir is modelDir, for tests of finding and pulling the model.
func ModelDir(ctx context.Context, cfg *config.Config, o EmbedderOptions) (string, string, error) {
	return modelDir(ctx, cfg, o)
}

// FallbackFor is what serve runs on when err (from ModelDir) says the model
// is missing.
func FallbackFor(cfg *config.Config, err error) (*Embedders, error) {
	var me *modelError
	if !errors.As(err, &me) {
		return nil, err
	}
	return hashingFallback(cfg, me, slog.New(slog.DiscardHandler))
}

// SetGraphWakeHook makes every wake of the embedded graph call f once its
// applier is woken, before it reads the head it must reach; the returned
// function removes it.
func SetGraphWakeHook(f func()) (restore func()) {
	graphWakeHook = f
	return func() { graphWakeHook = nil }
}

// QueryServiceTime is the built-in model's measured time per query, or 0
// for other embedders.
func (a *App) QueryServiceTime() time.Duration {
	if a.embedderServiceTime == nil {
		return 0
	}
	return a.embedderServiceTime()
}

// Steps of a save of the maintenance holds (holdsWaiting, holdsRead).
const (
	HoldsWaiting = holdsWaiting
	HoldsRead    = holdsRead
)

// SetHoldsSaveHook makes every save of the maintenance holds call f at
// each of its steps (HoldsWaiting, HoldsRead); the returned function
// removes it.
func SetHoldsSaveHook(f func(step string)) (restore func()) {
	holdsSaveHook = f
	return func() { holdsSaveHook = nil }
}

// APIBreakers is the breakers the API acts on.
func (a *App) APIBreakers() api.Breakers { return a.apiBreakers() }
