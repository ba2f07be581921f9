package app

import (
	"fmt"

	"github.com/ragd/ragd/internal/events"
	"github.com/ragd/ragd/internal/sourcestats"
)

// wireConsole creates what the operator console reads besides the API's own
// status: the event timeline (breaker transitions, bursts) and the
// per-source window of recent queries.
func (a *App) wireConsole() error {
	a.Events = events.NewRing(events.DefaultCapacity, a.now)
	w, err := sourcestats.New(sourcestats.Config{Publish: a.publish, Now: a.now})
	if err != nil {
		return fmt.Errorf("app: source stats: %w", err)
	}
	a.SourceStats = w
	return nil
}

// publish adds e to the timeline (the breakers' and the window's hook).
func (a *App) publish(e events.Event) {
	if a.Events != nil {
		a.Events.Publish(e)
	}
}
