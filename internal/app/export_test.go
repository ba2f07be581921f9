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

// SetGraphWakeHook makes every wake of the embedded graph call f once its
// applier is woken, before it reads the head it must reach; the returned
// function removes it.
func SetGraphWakeHook(f func()) (restore func()) {
	graphWakeHook = f
	return func() { graphWakeHook = nil }
}
