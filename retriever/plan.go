package retriever

import (
	"math"
	"time"

	"github.com/ragd/ragd/spi"
)

// sourcePlan is one source's effective settings for one query.
type sourcePlan struct {
	name    string
	enabled bool   // configured and switched on for this query
	reason  string // why not enabled
	k       int
	weight  float64
	dl      deadline
}

// deadline is a call's deadline and the one its source is judged by.
// timeout is what the call waits (the request's choice, else the
// operator's); judged is always the operator's (Defaults), so a request
// can shorten or lengthen its own wait but never what its source's gate
// hears: see outcome.
type deadline struct {
	timeout, judged time.Duration
}

// fixed is a deadline no request can choose.
func fixed(d time.Duration) deadline { return deadline{timeout: d, judged: d} }

// cause is the context cause of running out of dl: the query's budget, or
// a call's deadline; the caller's when the request chose it shorter than
// the operator's.
func (dl deadline) cause(budget bool) *deadlineError {
	return &deadlineError{budget: budget, caller: dl.timeout < dl.judged, after: dl.timeout}
}

// plan is a query's effective settings: Query over Defaults over built-ins.
type plan struct {
	limit, offset, window int
	mode                  string
	rrfK                  int
	minSources            int
	budget                deadline // timeout is the request's budget_ms, else the operator's; judged the operator's
	src                   [len(stage1)]sourcePlan
	expand                sourcePlan // k is the expansion limit
	seeds, hops           int
	embedTimeout          time.Duration
}

func (r *HybridRetriever) plan(q *Query) plan {
	d := &r.cfg.Defaults
	p := plan{
		limit:        orInt(q.Limit, orInt(d.Limit, DefaultLimit)),
		offset:       q.Offset,
		window:       orInt(q.Window, orInt(d.Window, DefaultWindow)),
		mode:         q.Fusion.Mode,
		minSources:   orInt(q.MinSources, orInt(d.MinSources, DefaultMinSources)),
		embedTimeout: orDur(d.EmbedTimeout, DefaultEmbedTimeout),
	}
	p.budget.judged = orDur(d.Budget, DefaultBudget)
	p.budget.timeout = orDur(ms2dur(q.BudgetMS), p.budget.judged)
	if p.mode == "" {
		p.mode = orStr(d.Fusion.Mode, FusionRRF)
	}
	if p.mode == FusionRRF {
		p.rrfK = orInt(q.Fusion.K, orInt(d.Fusion.K, DefaultRRFK))
	}
	configured := [len(stage1)]bool{r.cfg.Vector != nil, r.cfg.Keyword != nil, r.cfg.Graph != nil}
	for i, name := range stage1 {
		p.src[i] = r.sourcePlan(q, name, configured[i], p.window, DefaultWeight)
	}

	// Stage 2: an ExpandOptions field wins over Sources["graph_expand"],
	// the query over the defaults.
	e := r.sourcePlan(q, spi.SourceGraphExpand, r.cfg.Graph != nil, p.window, DefaultExpandWeight)
	qo, do := q.Sources[spi.SourceGraphExpand], d.Sources[spi.SourceGraphExpand]
	// The precedence below decides, not sourcePlan's reading of
	// Sources["graph_expand"].Enabled alone.
	e.enabled, e.reason = r.cfg.Graph != nil, ""
	if !e.enabled {
		e.reason = "not configured"
	}
	if e.enabled {
		switch {
		case q.Expand.Enabled != nil:
			e.enabled = *q.Expand.Enabled
		case qo.Enabled != nil:
			e.enabled = *qo.Enabled
		case d.Expand.Enabled != nil:
			e.enabled = *d.Expand.Enabled
		case do.Enabled != nil:
			e.enabled = *do.Enabled
		default:
			e.enabled = p.src[2].enabled // on whenever the graph source is
		}
		if !e.enabled {
			e.reason = "disabled"
		}
	}
	e.k = orInt(q.Expand.Limit, orInt(qo.K, orInt(d.Expand.Limit, orInt(do.K, p.window))))
	e.weight = orFloat(q.Expand.Weight, orFloat(qo.Weight, orFloat(d.Expand.Weight, orFloat(do.Weight, DefaultExpandWeight))))
	if qo.TimeoutMS == 0 && do.TimeoutMS == 0 {
		e.dl.timeout = p.src[2].dl.timeout // the graph's own deadline
	}
	if do.TimeoutMS == 0 {
		e.dl.judged = p.src[2].dl.judged
	}
	p.expand = e
	p.seeds = orInt(q.Expand.Seeds, orInt(d.Expand.Seeds, DefaultExpandSeeds))
	p.hops = orInt(q.Expand.Hops, orInt(d.Expand.Hops, DefaultExpandHops))
	return p
}

func (r *HybridRetriever) sourcePlan(q *Query, name string, configured bool, window int, weight float64) sourcePlan {
	d := &r.cfg.Defaults
	qo, do := q.Sources[name], d.Sources[name]
	sp := sourcePlan{
		name:    name,
		enabled: configured,
		k:       orInt(qo.K, orInt(do.K, window)),
		weight:  orFloat(qo.Weight, orFloat(do.Weight, weight)),
	}
	sp.dl.judged = orDur(ms2dur(do.TimeoutMS), orDur(d.SourceTimeout, DefaultSourceTimeout))
	sp.dl.timeout = orDur(ms2dur(qo.TimeoutMS), sp.dl.judged)
	switch {
	case !configured:
		sp.reason = "not configured"
	case qo.Enabled != nil && !*qo.Enabled, qo.Enabled == nil && do.Enabled != nil && !*do.Enabled:
		sp.enabled = false
		sp.reason = "disabled"
	}
	return sp
}

// settings reports the effective fusion settings.
func (p *plan) settings() FusionSettings {
	fs := FusionSettings{Mode: p.mode, K: p.rrfK, Window: p.window, Weights: make(map[string]float64, 4)}
	for _, s := range p.src {
		if s.enabled {
			fs.Weights[s.name] = s.weight
		}
	}
	if p.expand.enabled {
		fs.Weights[p.expand.name] = p.expand.weight
		fs.Expand = &ExpandSettings{Seeds: p.seeds, Hops: p.hops, Limit: p.expand.k, Weight: p.expand.weight}
	}
	return fs
}

// ms2dur converts validated milliseconds; it saturates rather than wrap.
func ms2dur(ms int) time.Duration {
	if int64(ms) > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

func orStr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
