package sourcestats

import (
	"context"
	"errors"

	"github.com/ragd/ragd/retriever"
)

// Retriever is what Observed wraps; *retriever.HybridRetriever implements
// it (and Observed implements api.Searcher).
type Retriever interface {
	Retrieve(ctx context.Context, q retriever.Query) (*retriever.Result, error)
}

// Observed feeds every query's per-source statuses into Window: those of
// the Result, or of the *retriever.NotEnoughSourcesError when too few
// sources answered. Invalid and cancelled queries are not recorded.
type Observed struct {
	Retriever
	Window *Window
}

// Retrieve runs q on the wrapped retriever and records the outcome.
func (o Observed) Retrieve(ctx context.Context, q retriever.Query) (*retriever.Result, error) {
	res, err := o.Retriever.Retrieve(ctx, q)
	var ne *retriever.NotEnoughSourcesError
	switch {
	case res != nil:
		o.Window.Observe(q.Tenant, res.Sources)
	case errors.As(err, &ne):
		o.Window.Observe(q.Tenant, ne.Sources)
	}
	return res, err
}
