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
	r := &HybridRetriever{cfg: cfg, limits: cfg.Limits.WithDefaults(), log: cfg.Logger, now: cfg.Now, tracer: newTracer(cfg.TracerProvider)}
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

// Limits returns the effective limits, which Retrieve validates a Query
// against.
func (r *HybridRetriever) Limits() Limits { return r.limits }

// gate returns the gate of source name, or nil.
func (r *HybridRetriever) gate(name string) spi.Gate { return r.cfg.Gates[name] }

// run is one query's working state.
type run struct {
	r        *HybridRetriever
	q        *Query
	p        plan
	text     bool
	res      *Result
	statuses map[string]SourceStatus
	lists    []RankedList
	healthy  int
	// cached is the query vector the embedder's cache held (admit), used
	// without calling the embedder or its gate.
	cached []float32
}

// stage1Outcome is one stage-1 goroutine's result slot.
type stage1Outcome struct {
	refs []spi.Ref
	a    attempt
	ran  bool // a goroutine was started for this source
	// embed is the embedder's attempt, for the vector source with no
	// query vector (status empty when no embedding was needed or tried).
	embed attempt
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
	// What keeps texts between calls (the embedder's vector caches) keeps
	// them per tenant.
	ctx = spi.WithTenant(ctx, q.Tenant)
	ru := &run{r: r, q: &q, p: r.plan(&q), text: strings.TrimSpace(q.Text) != "", statuses: make(map[string]SourceStatus, 5)}
	ru.res = &Result{Offset: ru.p.offset, Limit: ru.p.limit, Fusion: ru.p.settings()}
	bctx, cancel := context.WithTimeoutCause(ctx, ru.p.budget.timeout, ru.p.budget.cause(true))
	defer cancel()

	if err := ru.stage1(bctx); err != nil {
		return nil, err
	}
	if err := r.canceled(ctx); err != nil {
		return nil, err
	}
	if ru.healthy < ru.p.minSources {
		ru.statuses[spi.SourceGraphExpand] = SourceStatus{Status: StatusSkipped, Error: "stage 1 failed"}
		ne := &NotEnoughSourcesError{Required: ru.p.minSources, Healthy: ru.healthy, Sources: ru.statuses}
		if ne.CallerDeadline() {
			r.m.failed("caller_deadline")
		} else {
			r.m.failed("not_enough_sources")
		}
		return nil, ne
	}
	rk := ru.fuse(bctx)
	if err := r.canceled(ctx); err != nil {
		return nil, err
	}
	ru.page(bctx, rk)
	if err := r.canceled(ctx); err != nil {
		return nil, err
	}
	res := ru.res
	res.Sources = ru.statuses
	traceResult(ctx, res)
	took := r.now().Sub(start)
	res.TookMS = durMS(took)
	r.m.query(res, took)
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

// stage1 decides per source, fans out to the runnable ones and collects
// their lists. It fails only when min_sources cannot be met even before any
// call (a *QueryError).
func (ru *run) stage1(ctx context.Context) error {
	r, p := ru.r, &ru.p
	var out [len(stage1)]stage1Outcome
	runnable := 0
	for i := range stage1 {
		sp := &p.src[i]
		a, run := ru.admit(ctx, sp)
		if run || a.status == StatusCircuitOpen {
			runnable++
		}
		if !run {
			out[i].a = a
			r.traceSkipped(ctx, sp.name, a.sourceStatus(0))
			continue
		}
		out[i].ran = true
	}
	if runnable < p.minSources {
		for i := range stage1 {
			if !out[i].ran {
				ru.statuses[p.src[i].name] = out[i].a.sourceStatus(0)
			}
		}
		r.m.failed("invalid")
		return ru.tooFewRunnable(runnable)
	}
	var g errgroup.Group
	for i := range stage1 {
		if !out[i].ran {
			continue
		}
		sp, slot := p.src[i], &out[i]
		g.Go(func() error {
			sctx, span := r.traceSource(ctx, sp.name)
			ru.callStage1(sctx, sp, slot)
			r.endSource(span, sp.name, slot.a.sourceStatus(len(slot.refs)))
			return nil
		})
	}
	_ = g.Wait() // the goroutines never return errors; failures are in the slots
	for i := range stage1 {
		ru.collect(&p.src[i], &out[i])
	}
	return nil
}

// admit decides whether a stage-1 source runs: run=true, or the attempt it
// gets without running (disabled, skipped, circuit_open).
func (ru *run) admit(ctx context.Context, sp *sourcePlan) (attempt, bool) {
	r, q := ru.r, ru.q
	if !sp.enabled {
		return attempt{status: StatusDisabled, msg: sp.reason}, false
	}
	embed := sp.name == spi.SourceVector && len(q.Vector) == 0
	switch {
	case sp.name != spi.SourceVector && !ru.text:
		return attempt{status: StatusSkipped, msg: "no query text"}, false
	case embed && !ru.text:
		return attempt{status: StatusSkipped, msg: "no query vector and no text"}, false
	case embed && r.cfg.Embedder == nil:
		return attempt{status: StatusSkipped, msg: "no query vector and no embedder configured"}, false
	}
	// An open circuit skips the source without starting any work.
	if g := r.gate(sp.name); g != nil {
		if err := g.Check(); err != nil {
			return rejected(err), false
		}
	}
	if embed {
		ru.cached = r.cachedVector(ctx, q.Text)
	}
	if g := r.gate(spi.SourceEmbedder); embed && ru.cached == nil && g != nil {
		if err := g.Check(); err != nil {
			a := rejected(err)
			a.msg = "embedder: " + a.msg
			return a, false
		}
	}
	return attempt{}, true
}

// callStage1 runs one stage-1 source into slot. The vector source first
// embeds the query text when it has no vector: a step with its own gate and
// deadline, so a slow embedder fails the embedder, never the vector store.
func (ru *run) callStage1(ctx context.Context, sp sourcePlan, slot *stage1Outcome) {
	r, q := ru.r, ru.q
	req := spi.KeywordRequest{Text: q.Text, K: sp.k, Tenant: q.Tenant, Filter: q.Filter}
	switch sp.name {
	case spi.SourceVector:
		vec := q.Vector
		if len(vec) == 0 && ru.cached != nil {
			vec, slot.embed = ru.cached, attempt{status: StatusOK}
		}
		if len(vec) == 0 {
			var a attempt
			ectx, span := r.traceSource(ctx, spi.SourceEmbedder)
			vec, a = ru.embed(ectx)
			r.endSource(span, spi.SourceEmbedder, a.sourceStatus(1))
			slot.embed = a
			if a.status != StatusOK {
				slot.a = a
				slot.a.msg = "embedder: " + a.msg
				return
			}
		}
		slot.refs, slot.a = call(r, ctx, r.gate(sp.name), sp.dl, func(ctx context.Context) ([]spi.Ref, error) {
			return r.cfg.Vector.Retrieve(ctx, spi.VectorRequest{Vector: vec, K: sp.k, Tenant: q.Tenant, Filter: q.Filter})
		})
		slot.a.took += slot.embed.took
	case spi.SourceKeyword:
		slot.refs, slot.a = call(r, ctx, r.gate(sp.name), sp.dl, func(ctx context.Context) ([]spi.Ref, error) {
			return r.cfg.Keyword.Retrieve(ctx, req)
		})
	default:
		slot.refs, slot.a = call(r, ctx, r.gate(sp.name), sp.dl, func(ctx context.Context) ([]spi.Ref, error) {
			return r.cfg.Graph.MatchEntities(ctx, req)
		})
	}
}

// embed turns the query text into a vector through the embedder's gate.
func (ru *run) embed(ctx context.Context) ([]float32, attempt) {
	r := ru.r
	vec, a := call(r, ctx, r.gate(spi.SourceEmbedder), fixed(ru.p.embedTimeout), func(ctx context.Context) ([]float32, error) {
		vs, err := r.cfg.Embedder.Embed(ctx, []string{ru.q.Text})
		if err != nil {
			return nil, err
		}
		if len(vs) != 1 || !r.usableVector(vs[0]) {
			return nil, errUnusableEmbedding
		}
		return vs[0], nil
	})
	return vec, a
}

var errUnusableEmbedding = fmt.Errorf("retriever: the embedder returned an unusable vector")

// cachedVector is text's vector from the embedder's cache (spi.EmbedCache)
// for ctx's tenant, or nil. A hit skips the embedder's gate: the model is not called, so a
// hit neither takes a slot nor counts as the model answering (which would
// excuse a hung model's timeouts as busy), and an open embedder breaker
// does not stop a query the cache can serve.
func (r *HybridRetriever) cachedVector(ctx context.Context, text string) []float32 {
	c, ok := r.cfg.Embedder.(spi.EmbedCache)
	if !ok {
		return nil
	}
	v, hit := c.Cached(ctx, text)
	if !hit || !r.usableVector(v) {
		return nil
	}
	return v
}

// usableVector reports whether v can be searched with.
func (r *HybridRetriever) usableVector(v []float32) bool {
	return len(v) > 0 && finite(v) && (r.limits.VectorDimension == 0 || len(v) == r.limits.VectorDimension)
}

// collect records one stage-1 source's outcome and keeps its list when ok.
func (ru *run) collect(sp *sourcePlan, o *stage1Outcome) {
	r := ru.r
	if o.embed.status != "" {
		ru.statuses[spi.SourceEmbedder] = o.embed.sourceStatus(1)
		r.m.source(spi.SourceEmbedder, o.embed)
		markAttempt(ru.res, o.embed)
	}
	if len(o.refs) > sp.k {
		o.refs = o.refs[:sp.k]
	}
	ru.statuses[sp.name] = o.a.sourceStatus(len(o.refs))
	markAttempt(ru.res, o.a)
	if o.a.status == StatusDisabled || o.a.status == StatusSkipped {
		if o.ran {
			// The backend had nothing to search: no backend call, so no
			// source metric, but the source answered (nothing can match),
			// so it counts toward min_sources.
			ru.healthy++
		}
		return
	}
	r.m.source(sp.name, o.a)
	if o.a.status != StatusOK {
		r.logDrop(sp.name, o.a, ru.q.Text)
		return
	}
	ru.healthy++
	ru.lists = append(ru.lists, RankedList{Source: sp.name, Weight: sp.weight, Refs: o.refs})
}

// fuse ranks the stage-1 lists, runs stage 2 and re-ranks with the
// expansion when it answered.
func (ru *run) fuse(ctx context.Context) ranking {
	r, p, q := ru.r, &ru.p, ru.q
	// Parts only when they will be shown and no expansion is going to re-rank.
	rk := r.fuse(ctx, ru.lists, p, q.Explain && !p.expand.enabled)
	ectx, espan := r.traceExpansion(ctx)
	expanded := ru.expand(ectx, rk)
	r.endSource(espan, spi.SourceGraphExpand, ru.statuses[spi.SourceGraphExpand])
	if expanded || (q.Explain && rk.parts == nil && rk.len() > 0) {
		rk = r.fuse(ctx, ru.lists, p, q.Explain)
	}
	return rk
}

// expand runs stage 2 from the top fused seeds and records its status. It
// reports whether the expansion's list was added.
func (ru *run) expand(ctx context.Context, rk ranking) bool {
	r, p, q := ru.r, &ru.p, ru.q
	e := &p.expand
	skip := func(a attempt) bool {
		ru.statuses[e.name] = a.sourceStatus(0)
		markAttempt(ru.res, a)
		if a.status == StatusCircuitOpen || a.status == StatusShed {
			r.m.source(e.name, a)
		}
		return false
	}
	if !e.enabled {
		return skip(attempt{status: StatusDisabled, msg: e.reason})
	}
	n := min(p.seeds, rk.len())
	if n == 0 {
		return skip(attempt{status: StatusSkipped, msg: "no seeds"})
	}
	if ctx.Err() != nil {
		return skip(ended(ctx))
	}
	g := r.gate(spi.SourceGraphExpand)
	if g != nil {
		if err := g.Check(); err != nil {
			return skip(rejected(err))
		}
	}
	// The graph just failed or timed out in stage 1: asking it again would
	// spend the rest of the budget on a sick backend and leave none for
	// hydration. One the query's own deadline cut off is not sick, but it
	// did not answer within what this query allows, which the expansion
	// inherits.
	switch ru.statuses[spi.SourceGraph].Status {
	case StatusError, StatusTimeout:
		return skip(attempt{status: StatusSkipped, msg: "graph source failed in stage 1"})
	case StatusCallerDeadline:
		return skip(attempt{status: StatusSkipped, msg: "graph source ran out of the query's deadline in stage 1"})
	}
	seeds := make([]string, n)
	for i := range seeds {
		seeds[i] = rk.id(i)
	}
	opts := spi.ExpandOptions{Hops: p.hops, Limit: e.k, Tenant: q.Tenant, Filter: q.Filter}
	refs, a := call(r, ctx, g, e.dl, func(ctx context.Context) ([]spi.Ref, error) {
		return r.cfg.Graph.Expand(ctx, seeds, opts)
	})
	if len(refs) > e.k {
		refs = refs[:e.k]
	}
	ru.statuses[e.name] = a.sourceStatus(len(refs))
	r.m.source(e.name, a)
	markAttempt(ru.res, a)
	if a.status != StatusOK {
		r.logDrop(e.name, a, q.Text)
		return false
	}
	ru.lists = append(ru.lists, RankedList{Source: e.name, Weight: e.weight, Refs: refs})
	return true
}

// page cuts the returned page from the fixed window and hydrates it.
func (ru *run) page(ctx context.Context, rk ranking) {
	res, p := ru.res, &ru.p
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
		if ru.q.Explain {
			h.Explain = explain(ru.lists, rk.partsOf(j))
		}
	}
	hctx, hspan := ru.r.traceStage(ctx, spanHydration)
	docs := ru.r.hydrate(hctx, ids, ru.q.Tenant, res)
	endHydration(hspan, res)
	for i := range res.Hits {
		res.Hits[i].Document = docs[i]
	}
	if len(res.Missing) > 0 {
		res.Partial = true
	}
}

// markAttempt folds an enabled source's outcome into partial and degraded.
// A shed source, or one cut off by a deadline the request chose, leaves the
// answer partial but not degraded: it was busy, or not given the time, not
// unhealthy.
func markAttempt(res *Result, a attempt) {
	switch a.status {
	case StatusError, StatusTimeout, StatusCallerDeadline, StatusCircuitOpen, StatusShed:
		res.Partial = true
		if a.unhealthy {
			res.Degraded = true
		}
	}
}

func (ru *run) tooFewRunnable(runnable int) error {
	if runnable == 0 {
		return &QueryError{Field: "sources", Message: "no enabled source can serve this query" + describe(ru.statuses)}
	}
	return &QueryError{Field: "min_sources", Message: fmt.Sprintf("%d above the %d source(s) that can serve this query%s", ru.p.minSources, runnable, describe(ru.statuses))}
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
// occurrence of the query text redacted. Shed sources, those cut off by a
// deadline the request chose and those whose caller went away are not
// logged one by one (a burst, a tenant's 1 ms deadlines or a load test's
// end would flood the log with what is no fault of the source); their
// metric counts them.
func (r *HybridRetriever) logDrop(source string, a attempt, text string) {
	if a.status == StatusShed || a.status == StatusCallerDeadline || (a.status == StatusError && a.msg == ReasonCanceled) {
		return
	}
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
