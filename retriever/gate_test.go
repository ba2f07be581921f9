package retriever_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
// the operator's, an invalid query, nothing to search). A source is judged
// by the operator's deadline whatever the request chose (issue 18 item 4),
// and so is what the answer and the metrics say of it: a deadline the
// request chose is caller_deadline, neither timeout nor degraded; a
// backend that had nothing to search is skipped, not ok.
func TestGateOutcomes(t *testing.T) {
	kw := func(o retriever.SourceOptions) map[string]retriever.SourceOptions {
		return map[string]retriever.SourceOptions{spi.SourceKeyword: o}
	}
	nothing := fmt.Errorf("keyword: retrieve: %w: no indexed word", spi.ErrNothingToSearch)
	cases := []struct {
		name     string
		fault    fault
		deadline time.Duration // the operator's (Defaults.SourceTimeout); 0: the default
		budget   time.Duration // the operator's (Defaults.Budget); 0: the default. Budgets are long enough for the other sources' instant answers on a loaded machine
		q        retriever.Query
		want     spi.Outcome
		status   retriever.Status // the answer's, and the source metric's label
		partial  bool
		degraded bool
	}{
		{"success", fault{Refs: refs(spi.SourceKeyword, "a")}, 0, 0, retriever.Query{Text: "q"}, spi.OutcomeSuccess, retriever.StatusOK, false, false},
		{"failure", fault{Err: spi.ErrUnavailable}, 0, 0, retriever.Query{Text: "q"}, spi.OutcomeFailure, retriever.StatusError, true, true},
		{"panic", fault{Panic: "boom"}, 0, 0, retriever.Query{Text: "q"}, spi.OutcomeFailure, retriever.StatusError, true, true},
		{"invalid", fault{Err: spi.ErrInvalidQuery}, 0, 0, retriever.Query{Text: "q"}, spi.OutcomeNeutral, retriever.StatusError, true, false},
		{"nothing to search", fault{Err: nothing}, 0, 0, retriever.Query{Text: "q"}, spi.OutcomeNeutral, retriever.StatusSkipped, false, false},
		{"operator's deadline", fault{Block: true}, 20 * time.Millisecond, 0, retriever.Query{Text: "q"}, spi.OutcomeTimeout, retriever.StatusTimeout, true, true},
		{"request's shorter deadline", fault{Block: true}, 0, 0, retriever.Query{Text: "q", Sources: kw(retriever.SourceOptions{TimeoutMS: 20})},
			spi.OutcomeNeutral, retriever.StatusCallerDeadline, true, false},
		{"request's longer deadline, answered after the operator's", fault{Delay: 50 * time.Millisecond, Refs: refs(spi.SourceKeyword, "a")},
			5 * time.Millisecond, 0, retriever.Query{Text: "q", Sources: kw(retriever.SourceOptions{TimeoutMS: 5000})}, spi.OutcomeTimeout, retriever.StatusOK, false, false},
		{"request's longer deadline, timed out", fault{Block: true}, 5 * time.Millisecond, 0,
			retriever.Query{Text: "q", Sources: kw(retriever.SourceOptions{TimeoutMS: 30})}, spi.OutcomeTimeout, retriever.StatusTimeout, true, true},
		{"request's budget", fault{Block: true}, 0, 0, retriever.Query{Text: "q", BudgetMS: 200, Sources: kw(retriever.SourceOptions{TimeoutMS: 5000})},
			spi.OutcomeNeutral, retriever.StatusCallerDeadline, true, false},
		{"operator's budget", fault{Block: true}, 0, 200 * time.Millisecond, retriever.Query{Text: "q", Sources: kw(retriever.SourceOptions{TimeoutMS: 5000})},
			spi.OutcomeNeutral, retriever.StatusTimeout, true, true},
		{"request's budget longer than the operator's", fault{Block: true}, 0, 200 * time.Millisecond,
			retriever.Query{Text: "q", BudgetMS: 300, Sources: kw(retriever.SourceOptions{TimeoutMS: 5000})}, spi.OutcomeNeutral, retriever.StatusTimeout, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack()
			s.kw.fault = tc.fault
			g := &fakeGate{}
			reg := prometheus.NewRegistry()
			cfg := s.config()
			cfg.Defaults.SourceTimeout, cfg.Defaults.Budget = tc.deadline, tc.budget
			cfg.Gates = map[string]spi.Gate{spi.SourceKeyword: g}
			cfg.Registerer = reg
			cfg.Hydrators = nil // an operator's budget would time hydration out too
			r := mustNew(t, cfg)
			res := mustRetrieve(t, r, tc.q)
			if got := g.seen(); !slices.Equal(got, []spi.Outcome{tc.want}) {
				t.Errorf("outcomes %v, want [%v]", got, tc.want)
			}
			st := res.Sources[spi.SourceKeyword]
			if st.Status != tc.status || res.Partial != tc.partial || res.Degraded != tc.degraded {
				t.Errorf("keyword = %+v, partial %v, degraded %v; want %s, partial %v, degraded %v",
					st, res.Partial, res.Degraded, tc.status, tc.partial, tc.degraded)
			}
			// The source metric carries the same status; a source that
			// had nothing to search made no backend call to time.
			for _, status := range []retriever.Status{retriever.StatusOK, retriever.StatusError, retriever.StatusTimeout, retriever.StatusCallerDeadline, retriever.StatusSkipped} {
				want := uint64(0)
				if status == tc.status && status != retriever.StatusSkipped {
					want = 1
				}
				if n, _, _ := metricValue(t, reg, "ragd_retriever_source_duration_seconds", map[string]string{"source": "keyword", "status": string(status)}); n != want {
					t.Errorf("source_duration_seconds{keyword,%s} = %d observations, want %d", status, n, want)
				}
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
		status   retriever.Status
	}{
		{"request's shorter graph deadline", time.Minute / 3, retriever.Query{Text: "q",
			Sources: map[string]retriever.SourceOptions{spi.SourceGraph: {TimeoutMS: 20}}}, spi.OutcomeNeutral, retriever.StatusCallerDeadline},
		{"operator's graph deadline", 20 * time.Millisecond, retriever.Query{Text: "q"}, spi.OutcomeTimeout, retriever.StatusTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack()
			s.gr.expand = fault{Block: true}
			g := &fakeGate{}
			cfg := s.config()
			cfg.Defaults.Sources = map[string]retriever.SourceOptions{spi.SourceGraph: {TimeoutMS: int(tc.deadline.Milliseconds())}}
			cfg.Gates = map[string]spi.Gate{spi.SourceGraphExpand: g}
			res := mustRetrieve(t, mustNew(t, cfg), tc.q)
			if st := res.Sources[spi.SourceGraphExpand]; st.Status != tc.status {
				t.Fatalf("graph_expand = %+v, want %s", st, tc.status)
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
		if st := res.Sources[spi.SourceKeyword]; st.Status != retriever.StatusCallerDeadline || res.Degraded {
			t.Fatalf("keyword = %+v, degraded %v; want caller_deadline, not degraded", st, res.Degraded)
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

func (c *cachingEmbedder) Cached(_ context.Context, text string) ([]float32, bool) {
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

// hungGraph is a graph backend that hangs on every call that reaches it,
// while, as the stores do (spi/spitest), it answers a text with no word to
// match with spi.ErrNothingToSearch without contacting anything. A call
// that reaches it reports entering on entered, then holds until release
// is closed and its ctx ends.
type hungGraph struct {
	*fakeGraph
	entered chan struct{}
	release chan struct{}
}

func (h *hungGraph) MatchEntities(ctx context.Context, req spi.KeywordRequest) ([]spi.Ref, error) {
	if strings.Trim(req.Text, "!?.,; ") == "" {
		return nil, fmt.Errorf("graph: match entities: %w: no word to match", spi.ErrNothingToSearch)
	}
	h.entered <- struct{}{}
	<-h.release
	<-ctx.Done()
	return nil, fmt.Errorf("graph: match entities: %w", ctx.Err())
}

// Issue 18, the gap operations.md left open: answers that never reached the
// backend are no evidence of its health. A tenant sending texts with no
// word to match ("!!!") alongside a hung graph backend: before, each such
// answer was a success, which reset the breaker's failure count and
// excused a concurrent timeout as busy, so the hung backend's breaker (a
// threshold of 2) stayed closed. Now they are skipped and neutral, and the
// two operator's-deadline timeouts trip it. The interleaving is held by
// channels: the "!!!" query ends while the hung call is in flight.
func TestNothingToSearchIsNoEvidence(t *testing.T) {
	s := newStack()
	hg := &hungGraph{fakeGraph: s.gr, entered: make(chan struct{}, 1), release: make(chan struct{})}
	b, err := breaker.New(spi.SourceGraph, breaker.Config{FailureThreshold: 2, ResetTimeout: time.Hour, HalfOpenMaxCalls: 1, SuccessThreshold: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.config()
	cfg.Graph = hg
	cfg.Defaults.Sources = map[string]retriever.SourceOptions{spi.SourceGraph: {TimeoutMS: 20}}
	cfg.Defaults.Expand.Enabled = ptr(false)
	withBreaker(&cfg, b, spi.SourceGraph, spi.SourceGraphExpand)
	r := mustNew(t, cfg)
	words, nothing := retriever.Query{Text: "shock wave"}, retriever.Query{Text: "!!!"}
	hung := func() <-chan *retriever.Result {
		done := make(chan *retriever.Result, 1)
		go func() {
			res, err := r.Retrieve(context.Background(), words)
			if err != nil {
				t.Errorf("Retrieve(words): %v", err)
			}
			done <- res
		}()
		<-hg.entered
		return done
	}
	skipped := func() {
		t.Helper()
		res := mustRetrieve(t, r, nothing)
		if st := res.Sources[spi.SourceGraph]; st.Status != retriever.StatusSkipped || st.Error != retriever.ReasonNothingToSearch || res.Partial || res.Degraded {
			t.Fatalf("graph for %q = %+v (partial %v, degraded %v); want skipped, nothing to search", nothing.Text, st, res.Partial, res.Degraded)
		}
	}
	close(hg.release) // the first hung call runs into its deadline at once
	if res := <-hung(); res.Sources[spi.SourceGraph].Status != retriever.StatusTimeout {
		t.Fatalf("graph = %+v, want timeout", res.Sources[spi.SourceGraph])
	}
	skipped() // before: a success, which reset the failure count
	hg.release = make(chan struct{})
	done := hung()
	skipped() // while the hung call is in flight; before: made its timeout "busy"
	close(hg.release)
	if res := <-done; res.Sources[spi.SourceGraph].Status != retriever.StatusTimeout {
		t.Fatalf("graph = %+v, want timeout", res.Sources[spi.SourceGraph])
	}
	if got := b.State(); got != breaker.Open {
		t.Fatalf("breaker %v after two timeouts of a hung graph among answers that never reached it; want open", got)
	}
	if st := mustRetrieve(t, r, words).Sources[spi.SourceGraph]; st.Status != retriever.StatusCircuitOpen {
		t.Fatalf("graph = %+v, want circuit_open", st)
	}
}
