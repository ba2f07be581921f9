package retriever

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/ragd/ragd/spi"
)

// HybridRetriever fans queries out to the configured sources, fuses their
// answers and hydrates the returned page. It is safe for concurrent use.
type HybridRetriever struct {
	cfg    Config
	limits Limits
	log    *slog.Logger
	now    func() time.Time
	m      *metrics
	tracer trace.Tracer
}

// New validates cfg, applies defaults and registers the metrics.
func New(cfg Config) (*HybridRetriever, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &HybridRetriever{cfg: cfg, limits: cfg.Limits.withDefaults(), log: cfg.Logger, now: cfg.Now, tracer: newTracer(cfg.TracerProvider)}
	if r.limits.VectorDimension == 0 {
		r.limits.VectorDimension = max(cfg.embedderDim(), cfg.storeDim())
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	r.m = m
	return r, nil
}

// Limits returns the effective limits, for callers that validate a Query
// before calling Retrieve (Retrieve validates again).
func (r *HybridRetriever) Limits() Limits { return r.limits }

// stage1Outcome is one stage-1 goroutine's result slot.
type stage1Outcome struct {
	refs []spi.Ref
	a    attempt
	ran  bool // a goroutine was started for this source
}

// Retrieve runs q. It returns a *QueryError (wrapping spi.ErrInvalidQuery)
// for a bad query, a *NotEnoughSourcesError (matching ErrNotEnoughSources)
// when fewer than min_sources stage-1 sources answered, and ctx's error when
// the caller cancels. Any other failure degrades the Result instead of
// failing it. No goroutine started by Retrieve outlives it; sources must
// honour ctx as the spi contract requires.
func (r *HybridRetriever) Retrieve(ctx context.Context, q Query) (*Result, error) {
	start := r.now()
	if err := q.Validate(r.limits); err != nil {
		r.m.failed("invalid")
		return nil, err
	}
	if err := r.canceled(ctx); err != nil {
		return nil, err
	}
	p := r.plan(&q)
	text := strings.TrimSpace(q.Text) != ""

	bctx, cancel := context.WithTimeoutCause(ctx, p.budget, &deadlineError{budget: true, after: p.budget})
	defer cancel()

	// Stage 1: decide per source, then fan out.
	var out [len(stage1)]stage1Outcome
	statuses := make(map[string]SourceStatus, 4)
	runnable := 0
	for i := range stage1 {
		sp := &p.src[i]
		st, retryIn, run := r.admit(sp, &q, text)
		if run || st == StatusCircuitOpen {
			runnable++
		}
		if !run {
			statuses[sp.name] = SourceStatus{Status: st, Error: sp.reason, RetryInMS: retryIn.Milliseconds()}
			r.traceSkipped(ctx, sp.name, statuses[sp.name])
			if st == StatusCircuitOpen {
				out[i].a = attempt{status: st, msg: sp.reason, unhealthy: true, retryIn: retryIn}
				r.m.source(sp.name, out[i].a)
			}
			continue
		}
		out[i].ran = true
	}
	if runnable < p.minSources {
		r.m.failed("invalid")
		return nil, r.tooFewRunnable(&p, statuses, runnable)
	}
	var g errgroup.Group
	for i := range stage1 {
		if !out[i].ran {
			continue
		}
		sp, slot := p.src[i], &out[i]
		fn := r.stage1Func(sp, &q)
		g.Go(func() error {
			sctx, span := r.traceSource(bctx, sp.name)
			slot.refs, slot.a = call(r, sctx, sp.timeout, fn)
			r.endSource(span, sp.name, slot.a.sourceStatus(len(slot.refs)))
			return nil
		})
	}
	_ = g.Wait() // the goroutines never return errors; failures are in the slots
	if err := r.canceled(ctx); err != nil {
		return nil, err
	}

	healthy := 0
	lists := make([]RankedList, 0, len(stage1)+1)
	res := &Result{Offset: p.offset, Limit: p.limit, Fusion: p.settings()}
	for i := range stage1 {
		sp, o := &p.src[i], &out[i]
		if !o.ran {
			res.markAttempt(o.a)
			continue
		}
		if len(o.refs) > sp.k {
			o.refs = o.refs[:sp.k]
		}
		statuses[sp.name] = o.a.sourceStatus(len(o.refs))
		r.m.source(sp.name, o.a)
		res.markAttempt(o.a)
		if o.a.status != StatusOK {
			r.logDrop(sp.name, o.a, q.Text)
			continue
		}
		healthy++
		lists = append(lists, RankedList{Source: sp.name, Weight: sp.weight, Refs: o.refs})
	}
	if healthy < p.minSources {
		statuses[spi.SourceGraphExpand] = SourceStatus{Status: StatusSkipped, Error: "stage 1 failed"}
		r.m.failed("not_enough_sources")
		return nil, &NotEnoughSourcesError{Required: p.minSources, Healthy: healthy, Sources: statuses}
	}
	// Stage-1 ranking; Parts only when they will be shown and no
	// expansion is going to re-rank.
	rk := r.fuse(ctx, lists, &p, q.Explain && !p.expand.enabled)

	// Stage 2: expand from the top fused seeds through the graph.
	var expanded bool
	ectx, espan := r.traceExpansion(bctx)
	lists, expanded = r.expand(ectx, &p, &q, rk, lists, statuses, res)
	r.endSource(espan, spi.SourceGraphExpand, statuses[spi.SourceGraphExpand])
	if expanded || (q.Explain && rk.parts == nil && rk.len() > 0) {
		rk = r.fuse(ctx, lists, &p, q.Explain)
	}
	if err := r.canceled(ctx); err != nil {
		return nil, err
	}

	// The page, cut from the fixed window, then hydration of the page only.
	res.Total = min(rk.len(), p.window)
	lo, hi := p.offset, min(p.offset+p.limit, res.Total)
	if lo > hi {
		lo = hi
	}
	res.Hits = make([]Hit, hi-lo)
	ids := make([]string, hi-lo)
	for j := lo; j < hi; j++ {
		h := &res.Hits[j-lo]
		*h = Hit{ID: rk.id(j), Rank: j + 1, Score: rk.score(j)}
		ids[j-lo] = h.ID
		if q.Explain {
			h.Explain = explain(lists, rk.partsOf(j))
		}
	}
	hctx, hspan := r.traceStage(bctx, spanHydration)
	docs := r.hydrate(hctx, ids, q.Tenant, res)
	endHydration(hspan, res)
	for i := range res.Hits {
		res.Hits[i].Document = docs[i]
	}
	if err := r.canceled(ctx); err != nil {
		return nil, err
	}
	if len(res.Missing) > 0 {
		res.Partial = true
	}
	res.Sources = statuses
	took := r.now().Sub(start)
	res.TookMS = durMS(took)
	r.m.query(res, took)
	traceResult(ctx, res)
	r.log.LogAttrs(ctx, slog.LevelDebug, "retriever: query",
		slog.Int("hits", len(res.Hits)), slog.Int("total", res.Total),
		slog.Bool("partial", res.Partial), slog.Bool("degraded", res.Degraded),
		slog.Duration("took", took))
	return res, nil
}

// canceled returns the caller's cancellation, counted, or nil while ctx is
// live.
func (r *HybridRetriever) canceled(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		r.m.failed("canceled")
		return fmt.Errorf("retriever: retrieve: %w", err)
	}
	return nil
}

// admit decides whether a stage-1 source runs: it returns run=true, or the
// status it gets without running (disabled, skipped, circuit_open), setting
// sp.reason.
func (r *HybridRetriever) admit(sp *sourcePlan, q *Query, text bool) (Status, time.Duration, bool) {
	if !sp.enabled {
		return StatusDisabled, 0, false
	}
	var backend any
	switch sp.name {
	case spi.SourceVector:
		backend = r.cfg.Vector
		if len(q.Vector) == 0 {
			if !text {
				sp.reason = "no query vector and no text"
				return StatusSkipped, 0, false
			}
			if r.cfg.Embedder == nil {
				sp.reason = "no query vector and no embedder configured"
				return StatusSkipped, 0, false
			}
		}
	case spi.SourceKeyword:
		backend = r.cfg.Keyword
	case spi.SourceGraph:
		backend = r.cfg.Graph
	}
	if sp.name != spi.SourceVector && !text {
		sp.reason = "no query text"
		return StatusSkipped, 0, false
	}
	if retryIn, open := openBreaker(backend); open {
		sp.reason = "circuit open"
		return StatusCircuitOpen, retryIn, false
	}
	if sp.name == spi.SourceVector && len(q.Vector) == 0 {
		if retryIn, open := openBreaker(r.cfg.Embedder); open {
			sp.reason = "embedder: circuit open"
			return StatusCircuitOpen, retryIn, false
		}
	}
	return "", 0, true
}

// stage1Func returns the call a stage-1 source makes.
func (r *HybridRetriever) stage1Func(sp sourcePlan, q *Query) func(context.Context) ([]spi.Ref, error) {
	switch sp.name {
	case spi.SourceVector:
		return func(ctx context.Context) ([]spi.Ref, error) {
			vec := q.Vector
			if len(vec) == 0 {
				vs, err := r.cfg.Embedder.Embed(ctx, []string{q.Text})
				if err != nil {
					return nil, &embedError{err: err}
				}
				if len(vs) != 1 || !finite(vs[0]) || (r.limits.VectorDimension > 0 && len(vs[0]) != r.limits.VectorDimension) {
					return nil, &embedError{err: fmt.Errorf("unusable embedding")}
				}
				vec = vs[0]
			}
			return r.cfg.Vector.Retrieve(ctx, spi.VectorRequest{Vector: vec, K: sp.k, Tenant: q.Tenant, Filter: q.Filter})
		}
	case spi.SourceKeyword:
		return func(ctx context.Context) ([]spi.Ref, error) {
			return r.cfg.Keyword.Retrieve(ctx, spi.KeywordRequest{Text: q.Text, K: sp.k, Tenant: q.Tenant, Filter: q.Filter})
		}
	default:
		return func(ctx context.Context) ([]spi.Ref, error) {
			return r.cfg.Graph.MatchEntities(ctx, spi.KeywordRequest{Text: q.Text, K: sp.k, Tenant: q.Tenant, Filter: q.Filter})
		}
	}
}

// expand runs stage 2 and records its status. It returns the lists with the
// expansion appended and whether it was.
func (r *HybridRetriever) expand(ctx context.Context, p *plan, q *Query, rk ranking, lists []RankedList, statuses map[string]SourceStatus, res *Result) ([]RankedList, bool) {
	e := &p.expand
	skip := func(st Status, msg string, retryIn time.Duration) ([]RankedList, bool) {
		statuses[e.name] = SourceStatus{Status: st, Error: msg, RetryInMS: retryIn.Milliseconds()}
		a := attempt{status: st, unhealthy: st == StatusCircuitOpen || st == StatusTimeout}
		res.markAttempt(a)
		if st == StatusCircuitOpen {
			r.m.source(e.name, a)
		}
		return lists, false
	}
	if !e.enabled {
		return skip(StatusDisabled, e.reason, 0)
	}
	n := min(p.seeds, rk.len())
	if n == 0 {
		return skip(StatusSkipped, "no seeds", 0)
	}
	if ctx.Err() != nil {
		return skip(StatusTimeout, context.Cause(ctx).Error(), 0)
	}
	if retryIn, open := openBreaker(r.cfg.Graph); open {
		return skip(StatusCircuitOpen, "circuit open", retryIn)
	}
	// The graph just failed or timed out in stage 1: asking it again would
	// spend the rest of the budget on a sick backend and leave none for
	// hydration.
	if st := statuses[spi.SourceGraph].Status; st == StatusError || st == StatusTimeout {
		return skip(StatusSkipped, "graph source failed in stage 1", 0)
	}
	seeds := make([]string, n)
	for i := range seeds {
		seeds[i] = rk.id(i)
	}
	opts := spi.ExpandOptions{Hops: p.hops, Limit: e.k, Tenant: q.Tenant, Filter: q.Filter}
	refs, a := call(r, ctx, e.timeout, func(ctx context.Context) ([]spi.Ref, error) {
		return r.cfg.Graph.Expand(ctx, seeds, opts)
	})
	if len(refs) > e.k {
		refs = refs[:e.k]
	}
	statuses[e.name] = a.sourceStatus(len(refs))
	r.m.source(e.name, a)
	res.markAttempt(a)
	if a.status != StatusOK {
		r.logDrop(e.name, a, q.Text)
		return lists, false
	}
	return append(lists, RankedList{Source: e.name, Weight: e.weight, Refs: refs}), true
}

// markAttempt folds an enabled source's outcome into partial and degraded.
func (res *Result) markAttempt(a attempt) {
	switch a.status {
	case StatusError, StatusTimeout, StatusCircuitOpen:
		res.Partial = true
		if a.unhealthy {
			res.Degraded = true
		}
	}
}

func (r *HybridRetriever) tooFewRunnable(p *plan, statuses map[string]SourceStatus, runnable int) error {
	if runnable == 0 {
		return &QueryError{Field: "sources", Message: "no enabled source can serve this query" + describe(statuses)}
	}
	return qerr("min_sources", "%d above the %d source(s) that can serve this query%s", p.minSources, runnable, describe(statuses))
}

// describe lists the stage-1 sources' statuses: "; vector: skipped (...)".
func describe(statuses map[string]SourceStatus) string {
	var b strings.Builder
	writeStatuses(&b, statuses, stage1[:])
	return b.String()
}

// explain builds a hit's per-source breakdown, one entry per fused list.
func explain(lists []RankedList, parts []Contribution) map[string]*Contribution {
	m := make(map[string]*Contribution, len(lists))
	for i, l := range lists {
		if parts[i].Rank == 0 {
			m[l.Source] = nil
			continue
		}
		c := parts[i]
		m[l.Source] = &c
	}
	return m
}

// logDrop logs a dropped source. Invalid-query rejections are logged without
// the error, which might quote the query; other errors are logged with any
// occurrence of the query text redacted.
func (r *HybridRetriever) logDrop(source string, a attempt, text string) {
	attrs := []slog.Attr{slog.String("source", source), slog.String("status", string(a.status)),
		slog.String("reason", a.msg), slog.Duration("took", a.took)}
	if pe, ok := a.err.(*panicError); ok {
		// The panic value could hold anything; runtime errors are safe to show.
		v := fmt.Sprintf("%T", pe.value)
		if re, ok := pe.value.(runtime.Error); ok {
			v = redact(re.Error(), text)
		}
		attrs = append(attrs, slog.String("panic", v), slog.String("stack", string(pe.stack)))
	} else if a.unhealthy && a.err != nil && a.status == StatusError {
		attrs = append(attrs, slog.String("err", redact(a.err.Error(), text)))
	}
	r.log.LogAttrs(context.Background(), slog.LevelWarn, "retriever: source dropped", attrs...)
}

func finite(v []float32) bool {
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}

// redact replaces occurrences of the query text (also escaped as by %q,
// and trimmed) in s.
func redact(s, text string) string {
	quoted := strconv.Quote(text)
	for _, t := range []string{quoted[1 : len(quoted)-1], text, strings.TrimSpace(text)} {
		if t != "" {
			s = strings.ReplaceAll(s, t, "[query]")
		}
	}
	return s
}
