package retriever

import (
	"context"

	"github.com/ragd/ragd/spi"
)

// hydrate loads the documents for ids (the returned page) from the
// hydrators in order: ids one hydrator lacks, or all of them when it fails,
// go to the next. It never fails: ids nobody provided are recorded in
// res.Missing, each hydrator's outcome in res.Hydration, and an unhealthy
// hydrator (failed, timed out on an operator's deadline, circuit open)
// marks the result degraded. Vectors are stripped; a document the
// query's tenant may not see (spi.Visible) is not accepted. With no hydrators
// configured, hydration is off: documents stay nil and nothing is missing.
func (r *HybridRetriever) hydrate(ctx context.Context, ids []string, tenant string, res *Result) []*spi.Document {
	docs := make([]*spi.Document, len(ids))
	res.Missing = []string{}
	if len(r.cfg.Hydrators) == 0 {
		return docs // hydration is off
	}
	res.Hydration = make(map[string]SourceStatus, len(r.cfg.Hydrators))
	pos := make(map[string]int, len(ids))
	for i, id := range ids {
		pos[id] = i
	}
	remaining := ids
	timeout := orDur(r.cfg.Defaults.HydrateTimeout, DefaultHydrateTimeout)
	for _, h := range r.cfg.Hydrators {
		if len(remaining) == 0 {
			res.Hydration[h.Name] = SourceStatus{Status: StatusSkipped, Error: "nothing to hydrate"}
			continue
		}
		if ctx.Err() != nil {
			a := ended(ctx)
			res.Hydration[h.Name] = a.sourceStatus(0)
			res.Degraded = res.Degraded || a.unhealthy
			continue
		}
		if g := r.gate(h.Name); g != nil {
			if err := g.Check(); err != nil {
				a := rejected(err)
				res.Hydration[h.Name] = a.sourceStatus(0)
				res.Degraded = res.Degraded || a.unhealthy
				continue
			}
		}
		ask := remaining
		// Hydration is not admitted through the gate (not limited, not
		// counted): only its open circuit is honoured, above.
		got, a := call(r, ctx, nil, fixed(timeout), func(ctx context.Context) ([]spi.Document, error) {
			d, _, err := h.Hydrator.Hydrate(ctx, ask)
			return d, err
		})
		r.m.hydrator(h.Name, a)
		if a.status != StatusOK {
			res.Hydration[h.Name] = a.sourceStatus(0)
			res.Degraded = res.Degraded || a.unhealthy
			r.logDrop("hydrator "+h.Name, a, "")
			continue
		}
		found := 0
		for _, d := range got {
			i, ok := pos[d.ID]
			if !ok || docs[i] != nil || !spi.Visible(tenant, d.Tenant) {
				continue
			}
			d.Vector = nil
			docs[i] = &d
			found++
		}
		res.Hydration[h.Name] = a.sourceStatus(found)
		next := make([]string, 0, len(remaining)-found)
		for _, id := range remaining {
			if docs[pos[id]] == nil {
				next = append(next, id)
			}
		}
		remaining = next
	}
	res.Missing = append(res.Missing, remaining...)
	return docs
}
