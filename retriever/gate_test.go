package retriever_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// A source at its concurrency limit is skipped at once with status shed:
// the answer is partial, not degraded, and the source is never called.
func TestShedSourceSkipped(t *testing.T) {
	for _, name := range []string{spi.SourceVector, spi.SourceKeyword, spi.SourceGraph, spi.SourceGraphExpand, spi.SourceEmbedder} {
		t.Run(name, func(t *testing.T) {
			s := newStack()
			cfg := s.config()
			cfg.Gates = map[string]spi.Gate{name: &fakeGate{admit: &spi.RejectedError{Gate: name, Reason: spi.ErrShed}}}
			r := mustNew(t, cfg)
			res := mustRetrieve(t, r, retriever.Query{Text: "q"})
			st := res.Sources[name]
			if st.Status != retriever.StatusShed || st.Error != "at its concurrency limit" {
				t.Errorf("%s = %+v, want shed", name, st)
			}
			if !res.Partial || res.Degraded || len(res.Hits) == 0 {
				t.Errorf("partial=%v degraded=%v hits=%d; want partial, not degraded, with hits", res.Partial, res.Degraded, len(res.Hits))
			}
			calls := map[string]int64{
				spi.SourceVector: s.vec.calls.Load(), spi.SourceKeyword: s.kw.calls.Load(),
				spi.SourceGraph: s.gr.calls.Load(), spi.SourceGraphExpand: s.gr.expandProbe.calls.Load(),
				spi.SourceEmbedder: s.emb.calls.Load(),
			}
			if calls[name] != 0 {
				t.Errorf("%s called %d times while shed", name, calls[name])
			}
			if name == spi.SourceEmbedder {
				if st := res.Sources[spi.SourceVector]; st.Status != retriever.StatusShed || st.Error != "embedder: at its concurrency limit" || s.vec.calls.Load() != 0 {
					t.Errorf("vector with its embedder shed = %+v (%d calls)", st, s.vec.calls.Load())
				}
			}
		})
	}
}

// Each call's outcome reaches the source's gate: the caller decides
// success, failure, timeout (the operator's deadline for the source) and
// neutral (the query's budget, a deadline the request chose shorter than
// the operator's, an invalid query). A source is judged by the operator's
// deadline whatever the request chose (issue 18 item 4).
func TestGateOutcomes(t *testing.T) {
	kw := func(o retriever.SourceOptions) map[string]retriever.SourceOptions {
		return map[string]retriever.SourceOptions{spi.SourceKeyword: o}
	}
	cases := []struct {
		name     string
		fault    fault
		deadline time.Duration // the operator's (Defaults.SourceTimeout); 0: the default
		q        retriever.Query
		want     spi.Outcome
	}{
		{"success", fault{Refs: refs(spi.SourceKeyword, "a")}, 0, retriever.Query{Text: "q"}, spi.OutcomeSuccess},
		{"failure", fault{Err: spi.ErrUnavailable}, 0, retriever.Query{Text: "q"}, spi.OutcomeFailure},
		{"panic", fault{Panic: "boom"}, 0, retriever.Query{Text: "q"}, spi.OutcomeFailure},
		{"invalid", fault{Err: spi.ErrInvalidQuery}, 0, retriever.Query{Text: "q"}, spi.OutcomeNeutral},
		{"operator's deadline", fault{Block: true}, 20 * time.Millisecond, retriever.Query{Text: "q"}, spi.OutcomeTimeout},
		{"request's shorter deadline", fault{Block: true}, 0, retriever.Query{Text: "q", Sources: kw(retriever.SourceOptions{TimeoutMS: 20})}, spi.OutcomeNeutral},
		{"request's longer deadline, answered after the operator's", fault{Delay: 50 * time.Millisecond, Refs: refs(spi.SourceKeyword, "a")},
			5 * time.Millisecond, retriever.Query{Text: "q", Sources: kw(retriever.SourceOptions{TimeoutMS: 5000})}, spi.OutcomeTimeout},
		{"request's longer deadline, timed out", fault{Block: true}, 5 * time.Millisecond,
			retriever.Query{Text: "q", Sources: kw(retriever.SourceOptions{TimeoutMS: 30})}, spi.OutcomeTimeout},
		{"budget", fault{Block: true}, 0, retriever.Query{Text: "q", BudgetMS: 20, Sources: kw(retriever.SourceOptions{TimeoutMS: 5000})}, spi.OutcomeNeutral},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack()
			s.kw.fault = tc.fault
			g := &fakeGate{}
			cfg := s.config()
			cfg.Defaults.SourceTimeout = tc.deadline
			cfg.Gates = map[string]spi.Gate{spi.SourceKeyword: g}
			r := mustNew(t, cfg)
			mustRetrieve(t, r, tc.q)
			if got := g.seen(); !slices.Equal(got, []spi.Outcome{tc.want}) {
				t.Fatalf("outcomes %v, want [%v]", got, tc.want)
			}
		})
	}
}

// The expansion inherits the graph's deadlines when it has none of its
// own: a shorter graph deadline the request chose is the expansion's too,
// and neutral when it runs out; the operator's graph deadline is judged.
func TestExpansionDeadlineOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline time.Duration // the operator's graph deadline
		q        retriever.Query
		want     spi.Outcome
	}{
		{"request's shorter graph deadline", time.Minute / 3, retriever.Query{Text: "q",
			Sources: map[string]retriever.SourceOptions{spi.SourceGraph: {TimeoutMS: 20}}}, spi.OutcomeNeutral},
		{"operator's graph deadline", 20 * time.Millisecond, retriever.Query{Text: "q"}, spi.OutcomeTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack()
			s.gr.expand = fault{Block: true}
			g := &fakeGate{}
			cfg := s.config()
			cfg.Defaults.Sources = map[string]retriever.SourceOptions{spi.SourceGraph: {TimeoutMS: int(tc.deadline.Milliseconds())}}
			cfg.Gates = map[string]spi.Gate{spi.SourceGraphExpand: g}
			res := mustRetrieve(t, mustNew(t, cfg), tc.q)
			if st := res.Sources[spi.SourceGraphExpand]; st.Status != retriever.StatusTimeout {
				t.Fatalf("graph_expand = %+v, want timeout", st)
			}
			if got := g.seen(); !slices.Equal(got, []spi.Outcome{tc.want}) {
				t.Fatalf("expansion outcomes %v, want [%v]", got, tc.want)
			}
		})
	}
}

// Issue 18 item 4: a tenant's deadlines cannot open a shared breaker. A
// hung keyword source behind a real guard (threshold 1): queries whose
// keyword deadline is shorter than the operator's leave the breaker
// closed, and one whose timeout_ms overflows a Duration is refused before
// any call.
func TestRequestDeadlinesCannotOpenTheBreaker(t *testing.T) {
	s := newStack()
	s.kw.fault = fault{Block: true}
	cfg := s.config()
	cfg.Defaults.SourceTimeout = 20 * time.Second // never reached: every query chooses less
	b, err := breaker.New(spi.SourceKeyword, breaker.Config{FailureThreshold: 1, ResetTimeout: time.Hour, HalfOpenMaxCalls: 1, SuccessThreshold: 1})
	if err != nil {
		t.Fatal(err)
	}
	withBreaker(&cfg, b, spi.SourceKeyword)
	r := mustNew(t, cfg)
	for range 5 {
		res := mustRetrieve(t, r, retriever.Query{Text: "q", Sources: map[string]retriever.SourceOptions{spi.SourceKeyword: {TimeoutMS: 5}}})
		if st := res.Sources[spi.SourceKeyword]; st.Status != retriever.StatusTimeout {
			t.Fatalf("keyword = %+v, want timeout", st)
		}
	}
	_, err = r.Retrieve(context.Background(), retriever.Query{Text: "q", Sources: map[string]retriever.SourceOptions{spi.SourceKeyword: {TimeoutMS: 9223372036855}}})
	if !errors.Is(err, spi.ErrInvalidQuery) {
		t.Fatalf("an overflowing timeout_ms: %v, want an invalid query", err)
	}
	if got := b.State(); got != breaker.Closed {
		t.Fatalf("request-chosen deadlines moved the shared keyword breaker to %v", got)
	}
}

func TestRejectedErrorMatches(t *testing.T) {
	err := error(&spi.RejectedError{Gate: "graph", Reason: spi.ErrShed, RetryAfter: time.Second})
	if !errors.Is(err, spi.ErrShed) || !errors.Is(err, spi.ErrUnavailable) || errors.Is(err, spi.ErrCircuitOpen) {
		t.Fatalf("%v must match ErrShed and ErrUnavailable only", err)
	}
}

// Issue 12 item 16: an ExpandOptions field wins over
// Sources["graph_expand"], the query over the defaults, as plan.go says.
func TestExpandEnabledPrecedence(t *testing.T) {
	off, on := false, true
	cases := []struct {
		name string
		d    retriever.Defaults
		q    retriever.Query
		want retriever.Status
	}{
		{"defaults expand on beats defaults source off",
			retriever.Defaults{Expand: retriever.ExpandOptions{Enabled: &on}, Sources: map[string]retriever.SourceOptions{spi.SourceGraphExpand: {Enabled: &off}}},
			retriever.Query{Text: "q"}, retriever.StatusOK},
		{"query expand on beats defaults source off",
			retriever.Defaults{Sources: map[string]retriever.SourceOptions{spi.SourceGraphExpand: {Enabled: &off}}},
			retriever.Query{Text: "q", Expand: retriever.ExpandOptions{Enabled: &on}}, retriever.StatusOK},
		{"query expand on beats query source off",
			retriever.Defaults{},
			retriever.Query{Text: "q", Expand: retriever.ExpandOptions{Enabled: &on}, Sources: map[string]retriever.SourceOptions{spi.SourceGraphExpand: {Enabled: &off}}},
			retriever.StatusOK},
		{"query source on beats defaults expand off",
			retriever.Defaults{Expand: retriever.ExpandOptions{Enabled: &off}},
			retriever.Query{Text: "q", Sources: map[string]retriever.SourceOptions{spi.SourceGraphExpand: {Enabled: &on}}}, retriever.StatusOK},
		{"query expand off beats everything",
			retriever.Defaults{Expand: retriever.ExpandOptions{Enabled: &on}},
			retriever.Query{Text: "q", Expand: retriever.ExpandOptions{Enabled: &off}}, retriever.StatusDisabled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack()
			cfg := s.config()
			cfg.Defaults = tc.d
			res := mustRetrieve(t, mustNew(t, cfg), tc.q)
			if st := res.Sources[spi.SourceGraphExpand]; st.Status != tc.want {
				t.Fatalf("graph_expand = %+v, want %s", st, tc.want)
			}
		})
	}
}

// The retriever's fixed-size list of stage-1 sources is the registry's.
func TestStageOneIsTheRegistry(t *testing.T) {
	if got, want := retriever.StageOne(), spi.RetrievalSources(); !slices.Equal(got, want) {
		t.Fatalf("stage 1 %v, registry %v", got, want)
	}
}

// cachingEmbedder adds spi.EmbedCache to the fake embedder: texts in hits
// are answered from the "cache".
type cachingEmbedder struct {
	*fakeEmbedder
	hits map[string][]float32
}

func (c *cachingEmbedder) Cached(text string) ([]float32, bool) {
	v, ok := c.hits[text]
	return slices.Clone(v), ok
}

// A query vector the embedder's cache holds is used without the embedder's
// gate: nothing reaches the model, so no slot is taken and no success is
// reported (a hit must not excuse a hung model's timeouts as busy), and an
// open embedder breaker does not stop it. A miss goes through the gate.
func TestCachedQueryVectorSkipsTheEmbedderGate(t *testing.T) {
	s := newStack()
	cfg := s.config()
	emb := &cachingEmbedder{fakeEmbedder: s.emb, hits: map[string][]float32{"cached": {1, 0, 0, 0}}}
	cfg.Embedder = emb
	open := &fakeGate{check: &spi.RejectedError{Gate: spi.SourceEmbedder, Reason: spi.ErrCircuitOpen},
		admit: &spi.RejectedError{Gate: spi.SourceEmbedder, Reason: spi.ErrCircuitOpen}}
	cfg.Gates = map[string]spi.Gate{spi.SourceEmbedder: open}
	r := mustNew(t, cfg)

	res := mustRetrieve(t, r, retriever.Query{Text: "cached", Sources: retriever.Only(spi.SourceVector)})
	if res.Sources[spi.SourceEmbedder].Status != retriever.StatusOK || res.Sources[spi.SourceVector].Status != retriever.StatusOK {
		t.Fatalf("cached query with the embedder's breaker open: %+v", res.Sources)
	}
	if n := s.emb.calls.Load(); n != 0 || len(open.seen()) != 0 {
		t.Fatalf("embedder called %d times, gate saw %v: a cache hit must reach neither", n, open.seen())
	}
	if req, _ := s.vec.lastReq().(spi.VectorRequest); !slices.Equal(req.Vector, []float32{1, 0, 0, 0}) {
		t.Fatalf("vector store got %v, want the cached vector", req.Vector)
	}

	res, err := r.Retrieve(context.Background(), retriever.Query{Text: "not cached"})
	if st := res.Sources[spi.SourceVector]; err != nil || st.Status != retriever.StatusCircuitOpen || st.Error != "embedder: circuit open" {
		t.Fatalf("uncached query with the embedder's breaker open: %+v, %v; want the vector source skipped for it", res, err)
	}

	ok := &fakeGate{}
	cfg.Gates = map[string]spi.Gate{spi.SourceEmbedder: ok}
	r = mustNew(t, cfg)
	mustRetrieve(t, r, retriever.Query{Text: "cached"})
	mustRetrieve(t, r, retriever.Query{Text: "not cached"})
	if got := ok.seen(); len(got) != 1 || got[0] != spi.OutcomeSuccess || s.emb.calls.Load() != 1 {
		t.Fatalf("gate outcomes %v, embedder calls %d: want one admitted call, for the miss", got, s.emb.calls.Load())
	}
}
