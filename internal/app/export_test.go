package app

import (
	"context"
	"log/slog"
	"time"
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
