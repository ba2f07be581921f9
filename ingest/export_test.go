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
