package sourcestats

import (
	"context"
	"errors"

	"github.com/ragd/ragd/internal/history"
	"github.com/ragd/ragd/retriever"
)

// Retriever is what Observed wraps; *retriever.HybridRetriever implements
// it (and Observed implements api.Searcher).
type Retriever interface {
	Retrieve(ctx context.Context, q retriever.Query) (*retriever.Result, error)
}

// Observed feeds every query's per-source statuses and what its caller got
// (retriever.AnswerOf) into Window and, when set, History: those of the
// Result, or of the *retriever.NotEnoughSourcesError when too few sources
// answered. Invalid and cancelled queries are not recorded.
type Observed struct {
	Retriever
	Window  *Window
	History *history.Recorder
}

// Retrieve runs q on the wrapped retriever and records the outcome.
func (o Observed) Retrieve(ctx context.Context, q retriever.Query) (*retriever.Result, error) {
	res, err := o.Retriever.Retrieve(ctx, q)
	var ne *retriever.NotEnoughSourcesError
	switch {
	case res != nil:
		o.observe(q.Tenant, res.Sources, retriever.AnswerOf(res, err))
	case errors.As(err, &ne):
		o.observe(q.Tenant, ne.Sources, retriever.AnswerOf(res, err))
	}
	return res, err
}

func (o Observed) observe(tenant string, sources map[string]retriever.SourceStatus, a retriever.Answer) {
	o.Window.Observe(tenant, sources, a)
	if o.History != nil {
		o.History.ObserveQuery(sources, a)
	}
}
