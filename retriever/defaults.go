package retriever

import "time"

// SourceDefault is what a query that says nothing about a source gets
// from the server's defaults: whether the source takes part, its fusion
// weight, and the deadline its calls are judged by.
type SourceDefault struct {
	Name string
	// Enabled: configured and on by default. Reason says why not
	// ("not configured", "disabled").
	Enabled bool
	Reason  string
	Weight  float64
	Timeout time.Duration
}

// SourceDefaults reports the defaults of vector, keyword, graph and
// graph_expand, in that order, as the planner applies them to a query that
// sets nothing: the one place that decides what "server default" means.
func (r *HybridRetriever) SourceDefaults() []SourceDefault {
	p := r.plan(&Query{})
	out := make([]SourceDefault, 0, len(p.src)+1)
	for _, s := range append(p.src[:], p.expand) {
		out = append(out, SourceDefault{Name: s.name, Enabled: s.enabled, Reason: s.reason, Weight: s.weight, Timeout: s.dl.judged})
	}
	return out
}
