package ingest

import (
	"context"
	"fmt"
)

// Step applies the next batch of the change log to the named derived store,
// as its background applier does once per round, and returns how many
// entries it applied. Tests drive appliers with it instead of Run.
func (p *Pipeline) Step(ctx context.Context, store string) (int, error) {
	for _, t := range p.tailers {
		if t.name == store {
			return t.step(ctx)
		}
	}
	return 0, fmt.Errorf("no derived store %q", store)
}

// ApplyLockFree reports whether nothing holds the named store's apply
// lock at this moment (the applier could apply).
func (p *Pipeline) ApplyLockFree(store string) bool {
	for _, t := range p.tailers {
		if t.name == store {
			if !t.applyMu.TryLock() {
				return false
			}
			t.applyMu.Unlock()
			return true
		}
	}
	return false
}

// SetCheckWaitHook makes fn run each time a check waits for a shared
// store's lease holder instead of applying, before it waits.
func (p *Pipeline) SetCheckWaitHook(fn func(store string)) { p.checkWaitHook = fn }
