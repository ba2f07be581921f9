package sourcestats_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/events"
	"github.com/ragd/ragd/internal/history"
	"github.com/ragd/ragd/internal/sourcestats"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// clock is a settable fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func statuses(kv ...any) map[string]retriever.SourceStatus {
	m := map[string]retriever.SourceStatus{}
	for i := 0; i < len(kv); i += 3 {
		m[kv[i].(string)] = retriever.SourceStatus{Status: retriever.Status(kv[i+1].(string)), TookMS: kv[i+2].(float64)}
	}
	return m
}

func mustWindow(t *testing.T, cfg sourcestats.Config) *sourcestats.Window {
	t.Helper()
	w, err := sourcestats.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func source(t *testing.T, s sourcestats.Snapshot, name string) sourcestats.Source {
	t.Helper()
	for _, src := range s.Sources {
		if src.Name == name {
			return src
		}
	}
	t.Fatalf("no source %q in %+v", name, s.Sources)
	return sourcestats.Source{}
}

func TestSnapshotShareAndPercentiles(t *testing.T) {
	clk := newClock()
	w := mustWindow(t, sourcestats.Config{Now: clk.Now})
	// 100 queries: vector answers all in 1..100 ms; graph answers the first
	// 75 and is circuit-open (no call) for the rest.
	for i := 1; i <= 100; i++ {
		g := statuses("graph", "ok", 2.0)
		if i > 75 {
			g = statuses("graph", "circuit_open", 0.0)
		}
		g["vector"] = retriever.SourceStatus{Status: retriever.StatusOK, TookMS: float64(i)}
		w.Observe("", g, retriever.Answer{})
	}
	s := w.Snapshot("")
	if s.Queries != 100 || s.SpanMS != 60000 || len(s.Sources) != 2 || s.Sources[0].Name != "graph" {
		t.Fatalf("snapshot: %+v", s)
	}
	v := source(t, s, "vector")
	if v.Answered != 100 || v.Share != 1 || v.Calls != 100 || *v.P50MS != 50 || *v.P99MS != 99 {
		t.Errorf("vector: %+v p50=%v p99=%v", v, *v.P50MS, *v.P99MS)
	}
	g := source(t, s, "graph")
	if g.Answered != 75 || g.Share != 0.75 || g.Calls != 75 || g.Statuses["circuit_open"] != 25 || *g.P99MS != 2 {
		t.Errorf("graph: %+v", g)
	}
}

func TestSnapshotForgetsOldAndBoundsMemory(t *testing.T) {
	clk := newClock()
	w := mustWindow(t, sourcestats.Config{Now: clk.Now, Capacity: 10, Span: time.Minute})
	for i := 0; i < 25; i++ {
		w.Observe("", statuses("keyword", "ok", 1.0), retriever.Answer{})
	}
	if s := w.Snapshot(""); s.Queries != 10 {
		t.Fatalf("capacity 10: %d queries in the window", s.Queries)
	}
	clk.Advance(30 * time.Second)
	for i := 0; i < 4; i++ {
		w.Observe("", statuses("keyword", "timeout", 800.0), retriever.Answer{})
	}
	clk.Advance(31 * time.Second) // the first 10 are now older than a minute
	s := w.Snapshot("")
	k := source(t, s, "keyword")
	if s.Queries != 4 || k.Answered != 0 || k.Statuses["timeout"] != 4 || *k.P50MS != 800 {
		t.Fatalf("after a minute: %+v %+v", s, k)
	}
	clk.Advance(time.Minute)
	if s := w.Snapshot(""); s.Queries != 0 || len(s.Sources) != 0 {
		t.Fatalf("empty window: %+v", s)
	}
}

func TestSnapshotByTenant(t *testing.T) {
	w := mustWindow(t, sourcestats.Config{Now: newClock().Now})
	w.Observe("acme", statuses("vector", "ok", 3.0), retriever.Answer{})
	w.Observe("acme", statuses("vector", "error", 4.0), retriever.Answer{})
	w.Observe("globex", statuses("vector", "ok", 500.0, "graph", "ok", 1.0), retriever.Answer{})
	a := w.Snapshot("acme")
	if a.Queries != 2 || len(a.Sources) != 1 {
		t.Fatalf("acme: %+v", a)
	}
	if v := source(t, a, "vector"); v.Share != 0.5 || *v.P99MS != 4 {
		t.Fatalf("acme vector: %+v", v)
	}
	if all := w.Snapshot(""); all.Queries != 3 || len(all.Sources) != 2 {
		t.Fatalf("all tenants: %+v", all)
	}
	if none := w.Snapshot("initech"); none.Queries != 0 || len(none.Sources) != 0 {
		t.Fatalf("unknown tenant: %+v", none)
	}
}

type recorder struct {
	mu  sync.Mutex
	evs []events.Event
}

func (r *recorder) publish(e events.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, e)
	r.mu.Unlock()
}

func (r *recorder) take() []events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.evs
	r.evs = nil
	return out
}

func TestBursts(t *testing.T) {
	clk := newClock()
	rec := &recorder{}
	w := mustWindow(t, sourcestats.Config{Now: clk.Now, Publish: rec.publish, BurstThreshold: 3, BurstWindow: 10 * time.Second})

	// Spread-out timeouts are no burst.
	for i := 0; i < 3; i++ {
		w.Observe("", statuses("graph", "timeout", 800.0), retriever.Answer{})
		clk.Advance(6 * time.Second)
	}
	if evs := rec.take(); len(evs) != 0 {
		t.Fatalf("spread-out timeouts made events: %+v", evs)
	}
	clk.Advance(time.Minute) // forget them

	// Three sheds within 10 s start a burst; more sheds extend it.
	for i := 0; i < 7; i++ {
		w.Observe("", statuses("graph", "shed", 0.0, "vector", "ok", 1.0), retriever.Answer{})
		clk.Advance(time.Second)
	}
	evs := rec.take()
	if len(evs) != 1 || evs[0].Kind != events.KindBurst || evs[0].Source != "graph" ||
		*evs[0].Burst != (events.Burst{Status: "shed", Phase: events.BurstStarted, Count: 3}) {
		t.Fatalf("burst start: %+v", evs)
	}
	// Quiet for less than the window: still on; then quiet long enough:
	// the snapshot read ends it.
	clk.Advance(5 * time.Second)
	w.Snapshot("")
	if evs := rec.take(); len(evs) != 0 {
		t.Fatalf("ended too early: %+v", evs)
	}
	clk.Advance(10 * time.Second)
	w.Snapshot("")
	evs = rec.take()
	if len(evs) != 1 || *evs[0].Burst != (events.Burst{Status: "shed", Phase: events.BurstEnded, Count: 7, DurationMS: 6000}) {
		t.Fatalf("burst end: %+v", evs)
	}
	// Ok statuses never burst.
	for i := 0; i < 10; i++ {
		w.Observe("", statuses("vector", "ok", 1.0), retriever.Answer{})
	}
	if evs := rec.take(); len(evs) != 0 {
		t.Fatalf("ok calls made events: %+v", evs)
	}
}

func TestConfigValidate(t *testing.T) {
	if _, err := sourcestats.New(sourcestats.Config{Span: -time.Second}); !errors.Is(err, sourcestats.ErrConfig) {
		t.Fatalf("negative span: %v", err)
	}
}

// fakeRetriever answers with a fixed result or error.
type fakeRetriever struct {
	res *retriever.Result
	err error
}

func (f fakeRetriever) Retrieve(context.Context, retriever.Query) (*retriever.Result, error) {
	return f.res, f.err
}
func (f fakeRetriever) Limits() retriever.Limits { return retriever.DefaultLimits() }

func TestObserved(t *testing.T) {
	w := mustWindow(t, sourcestats.Config{Now: newClock().Now})
	ctx := context.Background()
	q := retriever.Query{Text: "x", Tenant: "acme"}
	ok := sourcestats.Observed{Retriever: fakeRetriever{res: &retriever.Result{Sources: statuses("vector", "ok", 1.0)}}, Window: w}
	if _, err := ok.Retrieve(ctx, q); err != nil {
		t.Fatal(err)
	}
	nes := &retriever.NotEnoughSourcesError{Required: 1, Sources: statuses("vector", "circuit_open", 0.0)}
	failing := sourcestats.Observed{Retriever: fakeRetriever{err: nes}, Window: w}
	if _, err := failing.Retrieve(ctx, q); !errors.Is(err, retriever.ErrNotEnoughSources) {
		t.Fatalf("error not passed through: %v", err)
	}
	invalid := sourcestats.Observed{Retriever: fakeRetriever{err: errors.New("bad query")}, Window: w}
	if _, err := invalid.Retrieve(ctx, q); err == nil {
		t.Fatal("error swallowed")
	}
	s := w.Snapshot("acme")
	if v := source(t, s, "vector"); s.Queries != 2 || v.Answered != 1 || v.Statuses["circuit_open"] != 1 {
		t.Fatalf("observed: %+v %+v", s, v)
	}
	// What the callers got reaches the window and the history alike.
	h := history.New(history.Config{})
	partial := sourcestats.Observed{Retriever: fakeRetriever{res: &retriever.Result{Partial: true, Sources: statuses("vector", "ok", 1.0)}}, Window: w, History: h}
	if _, err := partial.Retrieve(ctx, q); err != nil {
		t.Fatal(err)
	}
	failing.History = h
	_, _ = failing.Retrieve(ctx, q)
	if a := w.Snapshot("acme").Answers; a.Partial != 1 || a.Failed != 2 {
		t.Errorf("window answers %+v, want 1 partial and 2 failed", a)
	}
	if hs := h.Summary(); hs.Partial[len(hs.Partial)-1] != 1 || hs.Failed[len(hs.Failed)-1] != 1 {
		t.Errorf("history partial %v failed %v", hs.Partial, hs.Failed)
	}
}

// hungKeyword is a keyword backend that holds every call until its ctx
// ends.
type hungKeyword struct{}

func (hungKeyword) Retrieve(ctx context.Context, _ spi.KeywordRequest) ([]spi.Ref, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (hungKeyword) Hydrate(context.Context, []string) ([]spi.Document, []string, error) {
	return nil, nil, spi.ErrUnsupported
}
func (hungKeyword) Health(context.Context) spi.Health { return spi.Health{Status: spi.StatusUp} }

// Issue 18, the gap operations.md left open: a tenant whose queries carry
// deadlines shorter than the operator's (1 ms timeout_ms, a small
// budget_ms) cut a hung source off before its own deadline; through the
// real retriever, those calls are caller_deadline: no burst on the
// timeline, no latency samples. The same source missing the operator's
// deadline still bursts. Before, both were "timeout" and burst alike.
func TestCallerDeadlinesMakeNoBurst(t *testing.T) {
	rec := &recorder{}
	w := mustWindow(t, sourcestats.Config{Now: newClock().Now, Publish: rec.publish, BurstThreshold: 3})
	r, err := retriever.New(retriever.Config{Keyword: hungKeyword{}, Defaults: retriever.Defaults{SourceTimeout: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	o := sourcestats.Observed{Retriever: r, Window: w}
	ctx := context.Background()
	for _, q := range []retriever.Query{
		{Text: "x", Sources: map[string]retriever.SourceOptions{spi.SourceKeyword: {TimeoutMS: 1}}},
		{Text: "x", BudgetMS: 1},
		{Text: "x", Sources: map[string]retriever.SourceOptions{spi.SourceKeyword: {TimeoutMS: 2}}},
		{Text: "x", BudgetMS: 2},
	} {
		if _, err := o.Retrieve(ctx, q); !errors.Is(err, retriever.ErrNotEnoughSources) {
			t.Fatalf("Retrieve(%+v) = %v, want not enough sources", q, err)
		}
	}
	if evs := rec.take(); len(evs) != 0 {
		t.Fatalf("the queries' own deadlines made events: %+v", evs)
	}
	k := source(t, w.Snapshot(""), spi.SourceKeyword)
	if k.Statuses[retriever.StatusCallerDeadline] != 4 || k.Statuses[retriever.StatusTimeout] != 0 || k.Calls != 0 {
		t.Fatalf("keyword: %+v; want 4 caller_deadline, no timeout, no latency sample", k)
	}
	for range 3 {
		if _, err := o.Retrieve(ctx, retriever.Query{Text: "x"}); !errors.Is(err, retriever.ErrNotEnoughSources) {
			t.Fatalf("Retrieve = %v, want not enough sources", err)
		}
	}
	evs := rec.take()
	if len(evs) != 1 || evs[0].Source != spi.SourceKeyword || evs[0].Burst == nil || evs[0].Burst.Status != string(retriever.StatusTimeout) {
		t.Fatalf("three timeouts of the operator's deadline: events %+v, want one timeout burst", evs)
	}
}

// TestAnswersAndFailures is issue 30 item 6: the window counts what the
// callers of the last minute got (partial, degraded, failed, with shares)
// and keeps each source's newest failure — its status and the retriever's
// reason, so a hang (timeout) reads unlike an error storm — older than the
// span too; a tenant sees its own queries' answers and failures only, and
// the caller's own doing (an invalid query, a cancelled call, its own
// deadline, a breaker already open) is no failure of the source.
func TestAnswersAndFailures(t *testing.T) {
	c := newClock()
	w := mustWindow(t, sourcestats.Config{Now: c.Now})
	fail := func(status, reason string) retriever.SourceStatus {
		return retriever.SourceStatus{Status: retriever.Status(status), Error: reason}
	}
	w.Observe("globex", map[string]retriever.SourceStatus{"graph": fail("error", "backend unavailable")}, retriever.Answer{Partial: true, Degraded: true})
	c.Advance(2 * time.Minute) // out of the span: counted no more, its failure still newest
	w.Observe("acme", map[string]retriever.SourceStatus{"vector": fail("timeout", "deadline of 1000ms exceeded"), "keyword": fail("error", "backend unavailable")},
		retriever.Answer{Partial: true, Degraded: true})
	c.Advance(time.Second)
	w.Observe("acme", map[string]retriever.SourceStatus{"vector": fail("error", retriever.ReasonInvalidQuery), "keyword": fail("circuit_open", "circuit open")},
		retriever.Answer{Failed: true})
	w.Observe("acme", map[string]retriever.SourceStatus{"vector": fail("error", retriever.ReasonCanceled), "keyword": fail("caller_deadline", "the query's own deadline of 5ms exceeded")},
		retriever.Answer{})
	w.Observe("globex", statuses("vector", "ok", 1.0, "keyword", "ok", 1.0), retriever.Answer{})

	all := w.Snapshot("")
	if a := all.Answers; all.Queries != 4 || a.Partial != 1 || a.Degraded != 1 || a.Failed != 1 || a.PartialShare != 0.25 || a.FailedShare != 0.25 {
		t.Fatalf("answers of every tenant: %d queries, %+v", all.Queries, a)
	}
	want := []sourcestats.Failure{
		{Source: "graph", Status: "error", Error: "backend unavailable", At: c.Now().Add(-time.Second - 2*time.Minute)},
		{Source: "keyword", Status: "error", Error: "backend unavailable", At: c.Now().Add(-time.Second)},
		{Source: "vector", Status: "timeout", Error: "deadline of 1000ms exceeded", At: c.Now().Add(-time.Second)},
	}
	if len(all.Failures) != len(want) {
		t.Fatalf("failures %+v, want %+v", all.Failures, want)
	}
	for i := range want {
		if f := all.Failures[i]; f.Source != want[i].Source || f.Status != want[i].Status || f.Error != want[i].Error || !f.At.Equal(want[i].At) {
			t.Errorf("failure %d: %+v, want %+v", i, f, want[i])
		}
	}
	acme := w.Snapshot("acme")
	if acme.Queries != 3 || acme.Answers.Partial != 1 || len(acme.Failures) != 2 || acme.Failures[0].Source != "keyword" {
		t.Errorf("acme sees %d queries, %+v, failures %+v: want its own only", acme.Queries, acme.Answers, acme.Failures)
	}
	if g := w.Snapshot("globex"); g.Queries != 1 || g.Answers != (sourcestats.Answers{}) || len(g.Failures) != 1 || g.Failures[0].Source != "graph" {
		t.Errorf("globex sees %d queries, %+v, failures %+v", g.Queries, g.Answers, g.Failures)
	}
	if none := w.Snapshot("initech"); none.Failures == nil || len(none.Failures) != 0 || none.Answers.PartialShare != 0 {
		t.Errorf("a tenant without queries: %+v", none)
	}
}

// TestAnswerOf: the one classification of what a caller got.
func TestAnswerOf(t *testing.T) {
	caller := &retriever.NotEnoughSourcesError{Required: 1, Sources: statuses("vector", "caller_deadline", 5.0)}
	sick := &retriever.NotEnoughSourcesError{Required: 1, Sources: statuses("vector", "timeout", 1000.0)}
	for _, c := range []struct {
		res  *retriever.Result
		err  error
		want retriever.Answer
	}{
		{&retriever.Result{}, nil, retriever.Answer{}},
		{&retriever.Result{Partial: true}, nil, retriever.Answer{Partial: true}},
		{&retriever.Result{Partial: true, Degraded: true}, nil, retriever.Answer{Partial: true, Degraded: true}},
		{nil, sick, retriever.Answer{Failed: true}},
		{nil, caller, retriever.Answer{}},
		{nil, errors.New("invalid"), retriever.Answer{}},
	} {
		if got := retriever.AnswerOf(c.res, c.err); got != c.want {
			t.Errorf("AnswerOf(%+v, %v) = %+v, want %+v", c.res, c.err, got, c.want)
		}
	}
}
