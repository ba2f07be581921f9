package retriever_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// bleve's process-wide analysis workers (the real-stack tests open a
// keyword index) start at package init and are expected.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"),
	)
}

func TestRetrieveFusesAllSources(t *testing.T) {
	s := newStack()
	s.gr.expand = fault{Refs: refs("graph_expand", "f", "c")}
	r := mustNew(t, s.config())
	res := mustRetrieve(t, r, retriever.Query{Text: "wing flutter", Explain: true, Tenant: "t1"})

	// Hand-computed weighted RRF, k=60:
	//   vector a b c; keyword b d a; graph e b; graph_expand (w 0.5) f c
	w := map[string]float64{
		"a": 1.0/61 + 1.0/63,
		"b": 1.0/62 + 1.0/61 + 1.0/62,
		"c": 1.0/63 + 0.5/62,
		"d": 1.0 / 62,
		"e": 1.0 / 61,
		"f": 0.5 / 61,
	}
	if ids := hitIDs(res); !slices.Equal(ids, []string{"b", "a", "c", "e", "d", "f"}) {
		t.Fatalf("hits = %v, want [b a c e d f]", ids)
	}
	for i, h := range res.Hits {
		if h.Rank != i+1 {
			t.Errorf("hit %s rank %d, want %d", h.ID, h.Rank, i+1)
		}
		if !near(h.Score, w[h.ID]) {
			t.Errorf("hit %s score %v, want %v", h.ID, h.Score, w[h.ID])
		}
		if h.Document == nil || h.Document.ID != h.ID || h.Document.Text != "body "+h.ID {
			t.Errorf("hit %s not hydrated: %+v", h.ID, h.Document)
		} else if h.Document.Vector != nil {
			t.Errorf("hit %s: vector not stripped", h.ID)
		}
	}
	for _, name := range []string{spi.SourceVector, spi.SourceKeyword, spi.SourceGraph, spi.SourceGraphExpand} {
		if st := res.Sources[name]; st.Status != retriever.StatusOK {
			t.Errorf("source %s status %+v, want ok", name, st)
		}
	}
	if res.Sources[spi.SourceVector].Returned != 3 || res.Sources[spi.SourceGraph].Returned != 2 {
		t.Errorf("returned counts wrong: %+v", res.Sources)
	}
	if res.Partial || res.Degraded {
		t.Errorf("partial=%v degraded=%v, want both false", res.Partial, res.Degraded)
	}
	if res.Total != 6 || res.Offset != 0 || res.Limit != 10 || len(res.Missing) != 0 {
		t.Errorf("total=%d offset=%d limit=%d missing=%v", res.Total, res.Offset, res.Limit, res.Missing)
	}

	// Explain: one entry per fused list, nil where the source lacks the doc.
	c := res.Hits[2].Explain
	if len(c) != 4 {
		t.Fatalf("explain has %d entries, want 4: %v", len(c), c)
	}
	if v := c[spi.SourceVector]; v == nil || v.Rank != 3 || !near(v.RawScore, 0.8) || !near(v.Contribution, 1.0/63) {
		t.Errorf("explain c/vector = %+v", v)
	}
	if v := c[spi.SourceGraphExpand]; v == nil || v.Rank != 2 || !near(v.Contribution, 0.5/62) {
		t.Errorf("explain c/graph_expand = %+v", v)
	}
	for _, name := range []string{spi.SourceKeyword, spi.SourceGraph} {
		if v, ok := c[name]; !ok || v != nil {
			t.Errorf("explain c/%s = %+v (present %v), want explicit nil", name, v, ok)
		}
	}

	// Effective fusion settings.
	fs := res.Fusion
	if fs.Mode != "rrf" || fs.K != 60 || fs.Window != 100 || fs.Weights[spi.SourceGraphExpand] != 0.5 || fs.Weights[spi.SourceVector] != 1 {
		t.Errorf("fusion settings = %+v", fs)
	}
	if fs.Expand == nil || fs.Expand.Seeds != 10 || fs.Expand.Hops != 1 || fs.Expand.Limit != 100 {
		t.Errorf("expand settings = %+v", fs.Expand)
	}

	// Requests reached the backends with the effective settings.
	vr := s.vec.lastReq().(spi.VectorRequest)
	if vr.K != 100 || vr.Tenant != "t1" || len(vr.Vector) != 4 {
		t.Errorf("vector request = %+v", vr)
	}
	if got := s.emb.lastReq().([]string); !slices.Equal(got, []string{"wing flutter"}) {
		t.Errorf("embedder got %v", got)
	}
	kr := s.kw.lastReq().(spi.KeywordRequest)
	if kr.Text != "wing flutter" || kr.K != 100 || kr.Tenant != "t1" {
		t.Errorf("keyword request = %+v", kr)
	}
	ec := s.gr.expandProbe.lastReq().(expandCall)
	// Seeds are the stage-1 fused order: b a e d c (c: 1/63 < d,e).
	if !slices.Equal(ec.Seeds, []string{"b", "a", "e", "d", "c"}) || ec.Opts.Hops != 1 || ec.Opts.Limit != 100 || ec.Opts.Tenant != "t1" {
		t.Errorf("expand call = %+v", ec)
	}
	// Only the page was hydrated.
	if got := s.sor.lastReq().([]string); len(got) != 6 {
		t.Errorf("hydrated %v", got)
	}
}

func TestExplainOffByDefault(t *testing.T) {
	r := mustNew(t, newStack().config())
	res := mustRetrieve(t, r, retriever.Query{Text: "x"})
	for _, h := range res.Hits {
		if h.Explain != nil {
			t.Fatalf("explain present without Explain: %+v", h)
		}
	}
}

func TestOneDeadSourceIsDropped(t *testing.T) {
	for _, tc := range []struct {
		name      string
		f         fault
		status    retriever.Status
		msg       string
		degraded  bool
		mayCancel bool
	}{
		{"unavailable", fault{Err: fmt.Errorf("keyword: %w: dial tcp: refused", spi.ErrUnavailable)}, retriever.StatusError, "backend unavailable", true, false},
		{"other error", fault{Err: errors.New("boom")}, retriever.StatusError, "backend error", true, false},
		{"panic", fault{Panic: "kaboom"}, retriever.StatusError, "panic", true, false},
		{"invalid", fault{Err: fmt.Errorf("keyword: parse: %w", spi.ErrInvalidQuery)}, retriever.StatusError, "rejected as invalid query", false, false},
		{"backend deadline", fault{Err: fmt.Errorf("keyword: statement timeout: %w", context.DeadlineExceeded)}, retriever.StatusTimeout, "backend deadline exceeded", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack()
			s.kw.fault = tc.f
			r := mustNew(t, s.config())
			res := mustRetrieve(t, r, retriever.Query{Text: "q"})
			st := res.Sources[spi.SourceKeyword]
			if st.Status != tc.status || st.Error != tc.msg {
				t.Errorf("keyword status = %+v, want %s %q", st, tc.status, tc.msg)
			}
			if res.Sources[spi.SourceVector].Status != retriever.StatusOK || res.Sources[spi.SourceGraph].Status != retriever.StatusOK {
				t.Errorf("other sources: %+v", res.Sources)
			}
			// Fused from vector (a b c) and graph (e b) only; d came from keyword.
			ids := hitIDs(res)
			if slices.Contains(ids, "d") || !slices.Contains(ids, "e") || !slices.Contains(ids, "a") {
				t.Errorf("hits %v", ids)
			}
			if !res.Partial || res.Degraded != tc.degraded {
				t.Errorf("partial=%v degraded=%v, want true/%v", res.Partial, res.Degraded, tc.degraded)
			}
		})
	}
}

func TestSlowSourceDroppedAtItsDeadline(t *testing.T) {
	s := newStack()
	s.gr.fault.Delay = 10 * time.Second
	cfg := s.config()
	cfg.Defaults.Sources = map[string]retriever.SourceOptions{
		spi.SourceGraph:       {TimeoutMS: 50},
		spi.SourceGraphExpand: {TimeoutMS: 5000}, // otherwise it inherits the graph's 50ms
	}
	r := mustNew(t, cfg)
	start := time.Now()
	res := mustRetrieve(t, r, retriever.Query{Text: "q"})
	elapsed := time.Since(start)
	if elapsed > 5*time.Second {
		t.Fatalf("Retrieve took %v; the slow source should have been dropped at 50ms", elapsed)
	}
	st := res.Sources[spi.SourceGraph]
	if st.Status != retriever.StatusTimeout || st.Error != "deadline of 50ms exceeded" {
		t.Errorf("graph status = %+v", st)
	}
	if s.gr.cancelled.Load() != 1 {
		t.Errorf("slow source did not see its ctx end")
	}
	if res.Sources[spi.SourceVector].Status != retriever.StatusOK || res.Sources[spi.SourceKeyword].Status != retriever.StatusOK {
		t.Errorf("others: %+v", res.Sources)
	}
	if !res.Partial || !res.Degraded || len(res.Hits) == 0 {
		t.Errorf("partial=%v degraded=%v hits=%d", res.Partial, res.Degraded, len(res.Hits))
	}
	// The graph timed out in stage 1: stage 2 does not ask it again.
	if st := res.Sources[spi.SourceGraphExpand]; st.Status != retriever.StatusSkipped || s.gr.expandProbe.calls.Load() != 0 {
		t.Errorf("graph_expand = %+v", st)
	}
}

// The budget bounds every call, whoever set it. The operator's budget
// running out is a timeout; a shorter one the query chose is the query's
// own deadline (caller_deadline): when it leaves too few sources, the
// failure is the caller's (CallerDeadline), not the sources'.
func TestBudgetBoundsEverything(t *testing.T) {
	for _, tc := range []struct {
		name     string
		operator time.Duration // Defaults.Budget
		q        retriever.Query
		status   retriever.Status
		msg      string
	}{
		{"the query's budget", 0, retriever.Query{Text: "q", BudgetMS: 50}, retriever.StatusCallerDeadline, "the query's own budget of 50ms exhausted"},
		{"the operator's budget", 50 * time.Millisecond, retriever.Query{Text: "q"}, retriever.StatusTimeout, "query budget of 50ms exhausted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack()
			s.vec.fault.Block = true
			s.kw.fault.Block = true
			s.gr.fault.Block = true
			reg := prometheus.NewRegistry()
			cfg := s.config()
			cfg.Defaults.Budget = tc.operator
			cfg.Registerer = reg
			r := mustNew(t, cfg)
			start := time.Now()
			_, err := r.Retrieve(context.Background(), tc.q)
			if time.Since(start) > 5*time.Second {
				t.Fatalf("budget not enforced: %v", time.Since(start))
			}
			var nes *retriever.NotEnoughSourcesError
			if !errors.As(err, &nes) {
				t.Fatalf("err = %v, want *NotEnoughSourcesError", err)
			}
			for _, name := range []string{spi.SourceVector, spi.SourceKeyword, spi.SourceGraph} {
				if st := nes.Sources[name]; st.Status != tc.status || st.Error != tc.msg {
					t.Errorf("%s: %+v, want %s (%s)", name, st, tc.status, tc.msg)
				}
			}
			caller := tc.status == retriever.StatusCallerDeadline
			reason := map[bool]string{true: "caller_deadline", false: "not_enough_sources"}
			if nes.CallerDeadline() != caller {
				t.Errorf("CallerDeadline() = %v, want %v", nes.CallerDeadline(), caller)
			}
			if _, v, _ := metricValue(t, reg, "ragd_retriever_query_failures_total", map[string]string{"reason": reason[caller]}); v != 1 {
				t.Errorf("query_failures_total{reason=%q} = %v, want 1", reason[caller], v)
			}
			if _, v, _ := metricValue(t, reg, "ragd_retriever_query_failures_total", map[string]string{"reason": reason[!caller]}); v != 0 {
				t.Errorf("query_failures_total{reason=%q} = %v, want 0", reason[!caller], v)
			}
		})
	}
}

func TestAllDeadIsNotEnoughSources(t *testing.T) {
	s := newStack()
	s.vec.fault = fault{Err: spi.ErrUnavailable}
	s.kw.fault = fault{Panic: errors.New("nil map")}
	s.gr.fault = fault{Err: errors.New("down")}
	r := mustNew(t, s.config())
	res, err := r.Retrieve(context.Background(), retriever.Query{Text: "q"})
	if res != nil {
		t.Errorf("result %+v with error", res)
	}
	if !errors.Is(err, retriever.ErrNotEnoughSources) {
		t.Fatalf("err = %v, want ErrNotEnoughSources", err)
	}
	var nes *retriever.NotEnoughSourcesError
	if !errors.As(err, &nes) {
		t.Fatalf("err %T is not *NotEnoughSourcesError", err)
	}
	if nes.Required != 1 || nes.Healthy != 0 || len(nes.Sources) != 5 || nes.Sources[spi.SourceEmbedder].Status != retriever.StatusOK {
		t.Errorf("error = %+v", nes)
	}
	for _, name := range []string{spi.SourceVector, spi.SourceKeyword, spi.SourceGraph} {
		if nes.Sources[name].Status != retriever.StatusError {
			t.Errorf("%s: %+v", name, nes.Sources[name])
		}
	}
	if !strings.Contains(err.Error(), "keyword: error (panic)") {
		t.Errorf("message %q should name each source", err)
	}
}

func TestMinSources(t *testing.T) {
	s := newStack()
	s.kw.fault = fault{Err: spi.ErrUnavailable}
	r := mustNew(t, s.config())
	if _, err := r.Retrieve(context.Background(), retriever.Query{Text: "q", MinSources: 2}); err != nil {
		t.Fatalf("2 of 3 healthy with min_sources 2: %v", err)
	}
	_, err := r.Retrieve(context.Background(), retriever.Query{Text: "q", MinSources: 3})
	var nes *retriever.NotEnoughSourcesError
	if !errors.As(err, &nes) || nes.Required != 3 || nes.Healthy != 2 {
		t.Fatalf("err = %v, want NotEnoughSources 2 of 3", err)
	}

	// Asking for more sources than can run is the caller's mistake, not a 503.
	s2 := newStack()
	cfg := s2.config()
	cfg.Graph = nil
	r2 := mustNew(t, cfg)
	_, err = r2.Retrieve(context.Background(), retriever.Query{Text: "q", MinSources: 3})
	var qe *retriever.QueryError
	if !errors.As(err, &qe) || qe.Field != "min_sources" || !errors.Is(err, spi.ErrInvalidQuery) {
		t.Fatalf("err = %v, want QueryError on min_sources", err)
	}
	if errors.Is(err, retriever.ErrNotEnoughSources) {
		t.Fatal("a query error must not match ErrNotEnoughSources")
	}
}

func TestCallerCancellationStopsAllSources(t *testing.T) {
	s := newStack()
	s.vec.fault.Block = true
	s.kw.fault.Block = true
	s.gr.fault.Block = true
	r := mustNew(t, s.config())
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for s.vec.calls.Load()+s.kw.calls.Load()+s.gr.calls.Load() < 3 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	start := time.Now()
	res, err := r.Retrieve(ctx, retriever.Query{Text: "q", BudgetMS: 20000, Sources: map[string]retriever.SourceOptions{
		spi.SourceVector: {TimeoutMS: 20000}, spi.SourceKeyword: {TimeoutMS: 20000}, spi.SourceGraph: {TimeoutMS: 20000},
	}})
	if !errors.Is(err, context.Canceled) || res != nil {
		t.Fatalf("Retrieve = %v, %v; want context.Canceled", res, err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("cancellation took %v", time.Since(start))
	}
	for name, p := range map[string]*probe{"vector": &s.vec.probe, "keyword": &s.kw.probe, "graph": &s.gr.probe} {
		if p.cancelled.Load() != 1 {
			t.Errorf("%s did not see the cancellation", name)
		}
	}
	if s.gr.expandProbe.calls.Load() != 0 || s.sor.calls.Load() != 0 {
		t.Error("stage 2 or hydration ran after cancellation")
	}
	// goleak (TestMain) checks that no source goroutine outlived Retrieve.
}

func TestAlreadyCancelled(t *testing.T) {
	s := newStack()
	r := mustNew(t, s.config())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Retrieve(ctx, retriever.Query{Text: "q"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if s.vec.calls.Load()+s.kw.calls.Load()+s.gr.calls.Load() != 0 {
		t.Error("sources called with a cancelled context")
	}
}

func TestEmbedderFailureDropsOnlyVector(t *testing.T) {
	s := newStack()
	s.emb.fault = fault{Err: fmt.Errorf("openai: 503: %w", spi.ErrUnavailable)}
	r := mustNew(t, s.config())
	res := mustRetrieve(t, r, retriever.Query{Text: "q"})
	st := res.Sources[spi.SourceVector]
	if st.Status != retriever.StatusError || st.Error != "embedder: backend unavailable" {
		t.Errorf("vector status = %+v", st)
	}
	if s.vec.calls.Load() != 0 {
		t.Error("vector store called without a vector")
	}
	if res.Sources[spi.SourceKeyword].Status != retriever.StatusOK || !res.Degraded || len(res.Hits) == 0 {
		t.Errorf("result: %+v", res)
	}

	if st := res.Sources[spi.SourceEmbedder]; st.Status != retriever.StatusError || st.Error != "backend unavailable" {
		t.Errorf("embedder status = %+v", st)
	}

	// Slow embedder: embedding has its own deadline, before the vector
	// source's own starts.
	s2 := newStack()
	s2.emb.fault = fault{Delay: 10 * time.Second}
	cfg := s2.config()
	cfg.Defaults.EmbedTimeout = 30 * time.Millisecond
	r2 := mustNew(t, cfg)
	res2 := mustRetrieve(t, r2, retriever.Query{Text: "q"})
	if st := res2.Sources[spi.SourceVector]; st.Status != retriever.StatusTimeout || st.Error != "embedder: deadline of 30ms exceeded" {
		t.Errorf("vector status = %+v", st)
	}
	if st := res2.Sources[spi.SourceEmbedder]; st.Status != retriever.StatusTimeout || st.Error != "deadline of 30ms exceeded" {
		t.Errorf("embedder status = %+v", st)
	}
	if s2.vec.calls.Load() != 0 {
		t.Error("vector store called without a vector")
	}
}

// A slow embedder opens the embedder's breaker, never the vector store's:
// embedding is its own guarded step.
func TestSlowEmbedderOpensOnlyItsBreaker(t *testing.T) {
	s := newStack()
	s.emb.fault = fault{Block: true}
	cfg := s.config()
	cfg.Defaults.EmbedTimeout = 20 * time.Millisecond
	newBreaker := func(name string) *breaker.Breaker {
		bc := breaker.DefaultConfig()
		bc.FailureThreshold = 3
		bc.ResetTimeout = time.Hour
		b, err := breaker.New(name, bc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	eb, vb := newBreaker(spi.SourceEmbedder), newBreaker(spi.SourceVector)
	withBreaker(&cfg, eb, spi.SourceEmbedder)
	withBreaker(&cfg, vb, spi.SourceVector)
	r := mustNew(t, cfg)
	for range 3 {
		res := mustRetrieve(t, r, retriever.Query{Text: "q"})
		if st := res.Sources[spi.SourceEmbedder]; st.Status != retriever.StatusTimeout {
			t.Fatalf("embedder = %+v, want timeout", st)
		}
	}
	if eb.State() != breaker.Open || vb.State() != breaker.Closed {
		t.Fatalf("after three embedder timeouts: embedder breaker %v, vector breaker %v; want open, closed", eb.State(), vb.State())
	}
	res := mustRetrieve(t, r, retriever.Query{Text: "q"})
	if st := res.Sources[spi.SourceVector]; st.Status != retriever.StatusCircuitOpen || st.Error != "embedder: circuit open" {
		t.Errorf("vector with the embedder open = %+v", st)
	}
	// A query that brings its own vector needs no embedder.
	res = mustRetrieve(t, r, retriever.Query{Text: "q", Vector: []float32{1, 0, 0, 0}})
	if st := res.Sources[spi.SourceVector]; st.Status != retriever.StatusOK {
		t.Errorf("vector with a supplied vector = %+v", st)
	}
	if _, ok := res.Sources[spi.SourceEmbedder]; ok {
		t.Error("embedder status reported for a query that needed no embedding")
	}
}

func TestEmbedderBreakerOpen(t *testing.T) {
	s := newStack()
	cfg := s.config()
	withBreaker(&cfg, mustOpenBreaker(t, "embedder"), spi.SourceEmbedder)
	r := mustNew(t, cfg)
	res := mustRetrieve(t, r, retriever.Query{Text: "q"})
	st := res.Sources[spi.SourceVector]
	if st.Status != retriever.StatusCircuitOpen || st.Error != "embedder: circuit open" || st.RetryInMS <= 0 {
		t.Errorf("vector status = %+v", st)
	}
	if s.emb.calls.Load() != 0 || s.vec.calls.Load() != 0 {
		t.Error("embedder or vector store called while the embedder circuit is open")
	}
	if !res.Degraded || !res.Partial || res.Sources[spi.SourceKeyword].Status != retriever.StatusOK {
		t.Errorf("result: %+v", res)
	}
	// A caller-supplied vector needs no embedder.
	res = mustRetrieve(t, r, retriever.Query{Text: "q", Vector: []float32{1, 0, 0, 0}})
	if res.Sources[spi.SourceVector].Status != retriever.StatusOK {
		t.Errorf("vector with supplied vector: %+v", res.Sources[spi.SourceVector])
	}
}

func TestBreakerOpenSourceSkipped(t *testing.T) {
	for _, name := range []string{spi.SourceVector, spi.SourceKeyword, spi.SourceGraph} {
		t.Run(name, func(t *testing.T) {
			s := newStack()
			cfg := s.config()
			b := mustOpenBreaker(t, name)
			var calls func() int64
			switch name {
			case spi.SourceVector:
				withBreaker(&cfg, b, name)
				calls = s.vec.calls.Load
			case spi.SourceKeyword:
				withBreaker(&cfg, b, name)
				calls = s.kw.calls.Load
			case spi.SourceGraph:
				withBreaker(&cfg, b, name, spi.SourceGraphExpand)
				calls = s.gr.calls.Load
			}
			r := mustNew(t, cfg)
			res := mustRetrieve(t, r, retriever.Query{Text: "q"})
			st := res.Sources[name]
			if st.Status != retriever.StatusCircuitOpen || st.Error != "circuit open" {
				t.Errorf("status = %+v", st)
			}
			if st.RetryInMS <= 0 || st.RetryInMS > time.Hour.Milliseconds() {
				t.Errorf("retry_in_ms = %d, want within the 1h cooldown", st.RetryInMS)
			}
			if calls() != 0 {
				t.Errorf("backend called %d times while open", calls())
			}
			if !res.Partial || !res.Degraded || len(res.Hits) == 0 {
				t.Errorf("result: partial=%v degraded=%v hits=%d", res.Partial, res.Degraded, len(res.Hits))
			}
			if name == spi.SourceGraph {
				if st := res.Sources[spi.SourceGraphExpand]; st.Status != retriever.StatusCircuitOpen {
					t.Errorf("graph_expand while graph open = %+v", st)
				}
				if s.gr.expandProbe.calls.Load() != 0 {
					t.Error("Expand called while open")
				}
			}
		})
	}
}

func TestBreakerOpenCountsAsRunnableFor503(t *testing.T) {
	s := newStack()
	cfg := s.config()
	cfg.Vector, cfg.Graph = nil, nil
	withBreaker(&cfg, mustOpenBreaker(t, "keyword"), spi.SourceKeyword)
	r := mustNew(t, cfg)
	_, err := r.Retrieve(context.Background(), retriever.Query{Text: "q"})
	var nes *retriever.NotEnoughSourcesError
	if !errors.As(err, &nes) || nes.Sources[spi.SourceKeyword].Status != retriever.StatusCircuitOpen {
		t.Fatalf("err = %v, want NotEnoughSources with keyword circuit_open", err)
	}
}

func TestBreakerTripsThroughRetriever(t *testing.T) {
	// A failing keyword source trips its real breaker; later queries skip it.
	s := newStack()
	s.kw.fault = fault{Err: spi.ErrUnavailable}
	bc := breaker.DefaultConfig()
	bc.FailureThreshold = 2
	bc.ResetTimeout = time.Hour
	b, err := breaker.New("keyword", bc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.config()
	withBreaker(&cfg, b, spi.SourceKeyword)
	r := mustNew(t, cfg)
	for range 2 {
		res := mustRetrieve(t, r, retriever.Query{Text: "q"})
		if res.Sources[spi.SourceKeyword].Status != retriever.StatusError {
			t.Fatalf("keyword = %+v", res.Sources[spi.SourceKeyword])
		}
	}
	res := mustRetrieve(t, r, retriever.Query{Text: "q"})
	if res.Sources[spi.SourceKeyword].Status != retriever.StatusCircuitOpen || s.kw.calls.Load() != 2 {
		t.Fatalf("after trip: %+v, calls %d", res.Sources[spi.SourceKeyword], s.kw.calls.Load())
	}
}

func TestStageTwo(t *testing.T) {
	t.Run("failure degrades", func(t *testing.T) {
		s := newStack()
		s.gr.expand = fault{Err: spi.ErrUnavailable}
		r := mustNew(t, s.config())
		res := mustRetrieve(t, r, retriever.Query{Text: "q"})
		if st := res.Sources[spi.SourceGraphExpand]; st.Status != retriever.StatusError {
			t.Errorf("graph_expand = %+v", st)
		}
		if !res.Degraded || !res.Partial || len(res.Hits) != 5 {
			t.Errorf("degraded=%v partial=%v hits=%v", res.Degraded, res.Partial, hitIDs(res))
		}
	})
	t.Run("panic degrades", func(t *testing.T) {
		s := newStack()
		s.gr.expand = fault{Panic: "expand bug"}
		r := mustNew(t, s.config())
		res := mustRetrieve(t, r, retriever.Query{Text: "q"})
		if st := res.Sources[spi.SourceGraphExpand]; st.Status != retriever.StatusError || st.Error != "panic" {
			t.Errorf("graph_expand = %+v", st)
		}
	})
	t.Run("options", func(t *testing.T) {
		s := newStack()
		s.gr.expand = fault{Refs: refs("graph_expand", "f", "g", "h")}
		r := mustNew(t, s.config())
		res := mustRetrieve(t, r, retriever.Query{Text: "q", Explain: true,
			Expand: retriever.ExpandOptions{Seeds: 2, Hops: 2, Limit: 2, Weight: 3}})
		ec := s.gr.expandProbe.lastReq().(expandCall)
		if !slices.Equal(ec.Seeds, []string{"b", "a"}) || ec.Opts.Hops != 2 || ec.Opts.Limit != 2 {
			t.Errorf("expand call = %+v", ec)
		}
		// Weight 3: f = 3/61 beats b = 1/62+1/61+1/62; h is beyond limit 2.
		if res.Hits[0].ID != "f" || !near(res.Hits[0].Score, 3.0/61) || slices.Contains(hitIDs(res), "h") {
			t.Errorf("hits = %v", hitIDs(res))
		}
		if st := res.Sources[spi.SourceGraphExpand]; st.Returned != 2 {
			t.Errorf("graph_expand returned = %d, want 2 (truncated to limit)", st.Returned)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		s := newStack()
		r := mustNew(t, s.config())
		res := mustRetrieve(t, r, retriever.Query{Text: "q", Expand: retriever.ExpandOptions{Enabled: ptr(false)}})
		if st := res.Sources[spi.SourceGraphExpand]; st.Status != retriever.StatusDisabled || s.gr.expandProbe.calls.Load() != 0 {
			t.Errorf("graph_expand = %+v", st)
		}
		if res.Fusion.Expand != nil {
			t.Errorf("fusion.expand = %+v, want nil", res.Fusion.Expand)
		}
		// Off with the graph source, unless asked for explicitly.
		res = mustRetrieve(t, r, retriever.Query{Text: "q", Sources: map[string]retriever.SourceOptions{spi.SourceGraph: {Enabled: ptr(false)}}})
		if st := res.Sources[spi.SourceGraphExpand]; st.Status != retriever.StatusDisabled {
			t.Errorf("graph_expand with graph off = %+v", st)
		}
		res = mustRetrieve(t, r, retriever.Query{Text: "q", Sources: map[string]retriever.SourceOptions{spi.SourceGraph: {Enabled: ptr(false)}},
			Expand: retriever.ExpandOptions{Enabled: ptr(true)}})
		if st := res.Sources[spi.SourceGraphExpand]; st.Status != retriever.StatusOK {
			t.Errorf("graph_expand explicitly on = %+v", st)
		}
	})
	t.Run("filter passed to expand", func(t *testing.T) {
		s := newStack()
		s.gr.expand = fault{Refs: refs("graph_expand", "f", "c")}
		r := mustNew(t, s.config())
		filter := spi.StringFilter(map[string][]string{"lang": {"en", "de"}, "kind": {"paper"}})
		res := mustRetrieve(t, r, retriever.Query{Text: "q", Tenant: "t1", Filter: filter})
		if st := res.Sources[spi.SourceGraphExpand]; st.Status != retriever.StatusOK || st.Returned != 2 || s.gr.expandProbe.calls.Load() != 1 {
			t.Errorf("graph_expand = %+v, %d calls; want ok with 2 refs after one call", st, s.gr.expandProbe.calls.Load())
		}
		ec := s.gr.expandProbe.lastReq().(expandCall)
		if !reflect.DeepEqual(ec.Opts.Filter, filter) || ec.Opts.Tenant != "t1" {
			t.Errorf("expand options = %+v, want filter %v and tenant t1", ec.Opts, filter)
		}
		// f is found only by the expansion: it must be among the hits.
		if !slices.Contains(hitIDs(res), "f") {
			t.Errorf("hits = %v, want the expanded f", hitIDs(res))
		}
		if res.Partial || res.Degraded {
			t.Errorf("a filtered expansion is neither partial nor degraded")
		}
		if kr := s.kw.lastReq().(spi.KeywordRequest); !reflect.DeepEqual(kr.Filter, filter) {
			t.Errorf("filter not passed to keyword: %+v", kr)
		}
	})
	t.Run("graph failed in stage 1", func(t *testing.T) {
		for _, f := range []fault{{Err: spi.ErrUnavailable}, {Block: true}} {
			s := newStack()
			s.gr.fault = f
			s.gr.expand = fault{Refs: refs("graph_expand", "f")}
			cfg := s.config()
			cfg.Defaults.Sources = map[string]retriever.SourceOptions{spi.SourceGraph: {TimeoutMS: 20}}
			r := mustNew(t, cfg)
			res := mustRetrieve(t, r, retriever.Query{Text: "q"})
			if st := res.Sources[spi.SourceGraphExpand]; st.Status != retriever.StatusSkipped || s.gr.expandProbe.calls.Load() != 0 {
				t.Errorf("graph %+v in stage 1: graph_expand = %+v after %d calls; want skipped, not called",
					res.Sources[spi.SourceGraph], st, s.gr.expandProbe.calls.Load())
			}
			if !res.Partial || len(res.Hits) == 0 {
				t.Errorf("the other sources must still answer, partially: %+v", res)
			}
		}
		// Cut off by the query's own deadline, which the expansion would
		// inherit: not sick, but not asked again either.
		s := newStack()
		s.gr.fault = fault{Block: true}
		s.gr.expand = fault{Refs: refs("graph_expand", "f")}
		res := mustRetrieve(t, mustNew(t, s.config()), retriever.Query{Text: "q", Sources: map[string]retriever.SourceOptions{spi.SourceGraph: {TimeoutMS: 20}}})
		if st := res.Sources[spi.SourceGraphExpand]; st.Status != retriever.StatusSkipped || st.Error != "graph source ran out of the query's deadline in stage 1" ||
			s.gr.expandProbe.calls.Load() != 0 || res.Degraded {
			t.Errorf("graph %+v in stage 1: graph_expand = %+v after %d calls, degraded %v; want skipped, not called, not degraded",
				res.Sources[spi.SourceGraph], st, s.gr.expandProbe.calls.Load(), res.Degraded)
		}
	})
	t.Run("no seeds", func(t *testing.T) {
		s := newStack()
		s.vec.fault.Refs, s.kw.fault.Refs, s.gr.fault.Refs = nil, nil, nil
		r := mustNew(t, s.config())
		res := mustRetrieve(t, r, retriever.Query{Text: "q"})
		if st := res.Sources[spi.SourceGraphExpand]; st.Status != retriever.StatusSkipped || len(res.Hits) != 0 || res.Total != 0 {
			t.Errorf("graph_expand = %+v, hits %v", st, hitIDs(res))
		}
	})
}

func TestPaginationInsideWindow(t *testing.T) {
	s := newStack()
	ids := []string{"a", "b", "c", "d", "e", "f", "g"}
	s.vec.fault.Refs = refs("vector", ids...)
	s.kw.fault.Refs = nil
	s.gr.fault.Refs = nil
	cfg := s.config()
	r := mustNew(t, cfg)
	q := retriever.Query{Text: "q", Window: 5, Expand: retriever.ExpandOptions{Enabled: ptr(false)}}
	full := mustRetrieve(t, r, q)
	if !slices.Equal(hitIDs(full), []string{"a", "b", "c", "d", "e"}) || full.Total != 5 {
		t.Fatalf("window 5: %v total %d", hitIDs(full), full.Total)
	}
	if vr := s.vec.lastReq().(spi.VectorRequest); vr.K != 5 {
		t.Errorf("window is the per-source K: %d", vr.K)
	}
	var paged []string
	for off := 0; off < 5; off += 2 {
		q.Offset, q.Limit = off, 2
		res := mustRetrieve(t, r, q)
		for i, h := range res.Hits {
			if h.Rank != off+i+1 {
				t.Errorf("offset %d: hit %s rank %d", off, h.ID, h.Rank)
			}
		}
		paged = append(paged, hitIDs(res)...)
	}
	if !slices.Equal(paged, hitIDs(full)) {
		t.Errorf("pages %v differ from the full ranking %v", paged, hitIDs(full))
	}
	q.Offset, q.Limit = 5, 2
	res := mustRetrieve(t, r, q)
	if len(res.Hits) != 0 || res.Total != 5 || res.Offset != 5 {
		t.Errorf("beyond the window: %v total %d", hitIDs(res), res.Total)
	}
	if s.sor.lastReq() == nil {
		t.Fatal("hydrator never called")
	}
	// A source K above the window does not widen the window.
	q.Offset, q.Limit = 0, 10
	q.Sources = map[string]retriever.SourceOptions{spi.SourceVector: {K: 7}}
	res = mustRetrieve(t, r, q)
	if len(res.Hits) != 5 || res.Total != 5 {
		t.Errorf("k=7 window=5: %v", hitIDs(res))
	}
}

func TestSourceOptions(t *testing.T) {
	s := newStack()
	r := mustNew(t, s.config())
	res := mustRetrieve(t, r, retriever.Query{Text: "q", Explain: true, Sources: map[string]retriever.SourceOptions{
		spi.SourceKeyword: {Enabled: ptr(false)},
		spi.SourceVector:  {K: 2, Weight: 2},
	}, Expand: retriever.ExpandOptions{Enabled: ptr(false)}})
	if s.kw.calls.Load() != 0 || res.Sources[spi.SourceKeyword].Status != retriever.StatusDisabled {
		t.Errorf("keyword ran or wrong status: %+v", res.Sources[spi.SourceKeyword])
	}
	if res.Partial || res.Degraded {
		t.Error("a disabled source is neither partial nor degraded")
	}
	if vr := s.vec.lastReq().(spi.VectorRequest); vr.K != 2 {
		t.Errorf("vector K = %d", vr.K)
	}
	// Vector a b c (weight 2), but the fake returns 3 refs for K=2: truncated.
	if res.Sources[spi.SourceVector].Returned != 2 || slices.Contains(hitIDs(res), "c") {
		t.Errorf("vector not truncated to K: %+v %v", res.Sources[spi.SourceVector], hitIDs(res))
	}
	if h := res.Hits[0]; h.ID != "b" || !near(h.Score, 2.0/62+1.0/62) {
		t.Errorf("top hit %+v", h)
	}
	if _, ok := res.Hits[0].Explain[spi.SourceKeyword]; ok {
		t.Error("explain lists a disabled source")
	}
	if _, ok := res.Fusion.Weights[spi.SourceKeyword]; ok || res.Fusion.Weights[spi.SourceVector] != 2 {
		t.Errorf("weights = %v", res.Fusion.Weights)
	}
}

func TestOnly(t *testing.T) {
	s := newStack()
	r := mustNew(t, s.config())
	res := mustRetrieve(t, r, retriever.Query{Text: "q", Sources: retriever.Only(spi.SourceKeyword)})
	if !slices.Equal(hitIDs(res), []string{"b", "d", "a"}) {
		t.Errorf("keyword-only hits = %v", hitIDs(res))
	}
	for _, name := range []string{spi.SourceVector, spi.SourceGraph, spi.SourceGraphExpand} {
		if res.Sources[name].Status != retriever.StatusDisabled {
			t.Errorf("%s = %+v", name, res.Sources[name])
		}
	}
	if s.vec.calls.Load()+s.gr.calls.Load()+s.emb.calls.Load()+s.gr.expandProbe.calls.Load() != 0 {
		t.Error("disabled sources were called")
	}
}

func TestVectorOnlyQuery(t *testing.T) {
	s := newStack()
	r := mustNew(t, s.config())
	res := mustRetrieve(t, r, retriever.Query{Vector: []float32{0, 1, 0, 0}})
	if s.emb.calls.Load() != 0 {
		t.Error("embedder called with a supplied vector")
	}
	for _, name := range []string{spi.SourceKeyword, spi.SourceGraph} {
		if st := res.Sources[name]; st.Status != retriever.StatusSkipped || st.Error != "no query text" {
			t.Errorf("%s = %+v", name, st)
		}
	}
	if res.Partial || !slices.Equal(hitIDs(res)[:3], []string{"a", "b", "c"}) {
		t.Errorf("partial=%v hits=%v", res.Partial, hitIDs(res))
	}
	if vr := s.vec.lastReq().(spi.VectorRequest); vr.Vector[1] != 1 {
		t.Errorf("vector not passed: %v", vr.Vector)
	}
	// Wrong dimension (the embedder's is 4) is a query error.
	_, err := r.Retrieve(context.Background(), retriever.Query{Vector: []float32{1, 2}})
	var qe *retriever.QueryError
	if !errors.As(err, &qe) || qe.Field != "vector" {
		t.Errorf("err = %v, want QueryError on vector", err)
	}
	if r.Limits().VectorDimension != 4 {
		t.Errorf("Limits().VectorDimension = %d", r.Limits().VectorDimension)
	}
}

func TestNoEmbedderConfigured(t *testing.T) {
	s := newStack()
	cfg := s.config()
	cfg.Embedder = nil
	r := mustNew(t, cfg)
	res := mustRetrieve(t, r, retriever.Query{Text: "q"})
	if st := res.Sources[spi.SourceVector]; st.Status != retriever.StatusSkipped || s.vec.calls.Load() != 0 {
		t.Errorf("vector = %+v", st)
	}
	cfg.Keyword, cfg.Graph = nil, nil
	r = mustNew(t, cfg)
	_, err := r.Retrieve(context.Background(), retriever.Query{Text: "q"})
	var qe *retriever.QueryError
	if !errors.As(err, &qe) || qe.Field != "sources" {
		t.Errorf("err = %v, want QueryError on sources", err)
	}
}

func TestFusionModesThroughRetrieve(t *testing.T) {
	s := newStack()
	s.kw.fault.Refs = scored("b", 12.0, "d", 6.0, "a", 0.0)
	s.vec.fault.Refs = scored("a", 0.9, "b", 0.5, "c", 0.1)
	s.gr.fault.Refs = nil
	r := mustNew(t, s.config())
	res := mustRetrieve(t, r, retriever.Query{Text: "q", Fusion: retriever.FusionOptions{Mode: "score"}, Explain: true,
		Expand: retriever.ExpandOptions{Enabled: ptr(false)}})
	// vector: a=1 b=0.5 c=0; keyword: b=1 d=0.5 a=0 → b 1.5, a 1, d 0.5, c 0.
	if !slices.Equal(hitIDs(res), []string{"b", "a", "d", "c"}) || !near(res.Hits[0].Score, 1.5) {
		t.Errorf("score mode: %v %v", hitIDs(res), res.Hits[0].Score)
	}
	if res.Fusion.Mode != "score" || res.Fusion.K != 0 {
		t.Errorf("fusion = %+v", res.Fusion)
	}
	if c := res.Hits[0].Explain[spi.SourceKeyword]; c == nil || c.RawScore != 12 || c.Contribution != 1 {
		t.Errorf("explain = %+v", c)
	}
	res = mustRetrieve(t, r, retriever.Query{Text: "q", Fusion: retriever.FusionOptions{K: 1}, Expand: retriever.ExpandOptions{Enabled: ptr(false)}})
	// k=1: a = 1/2 + 1/4, b = 1/3 + 1/2.
	if res.Fusion.K != 1 || res.Hits[0].ID != "b" || !near(res.Hits[0].Score, 1.0/3+1.0/2) {
		t.Errorf("rrf k=1: %v %+v", hitIDs(res), res.Fusion)
	}
}

func TestDefaultsApply(t *testing.T) {
	s := newStack()
	cfg := s.config()
	cfg.Defaults = retriever.Defaults{
		Limit:   2,
		Window:  4,
		Fusion:  retriever.FusionOptions{Mode: "dbsf"},
		Sources: map[string]retriever.SourceOptions{spi.SourceKeyword: {Enabled: ptr(false)}, spi.SourceGraph: {Weight: 0.25}},
		Expand:  retriever.ExpandOptions{Seeds: 1, Weight: 0.1},
	}
	r := mustNew(t, cfg)
	res := mustRetrieve(t, r, retriever.Query{Text: "q"})
	if len(res.Hits) != 2 || res.Limit != 2 || res.Fusion.Window != 4 || res.Fusion.Mode != "dbsf" {
		t.Errorf("defaults not applied: limit %d window %d mode %s", res.Limit, res.Fusion.Window, res.Fusion.Mode)
	}
	if res.Sources[spi.SourceKeyword].Status != retriever.StatusDisabled || res.Fusion.Weights[spi.SourceGraph] != 0.25 || res.Fusion.Weights[spi.SourceGraphExpand] != 0.1 {
		t.Errorf("sources %+v weights %v", res.Sources, res.Fusion.Weights)
	}
	if ec := s.gr.expandProbe.lastReq().(expandCall); len(ec.Seeds) != 1 {
		t.Errorf("expand seeds = %v", ec.Seeds)
	}
	// The query overrides the defaults.
	res = mustRetrieve(t, r, retriever.Query{Text: "q", Limit: 3, Sources: map[string]retriever.SourceOptions{spi.SourceKeyword: {Enabled: ptr(true)}}})
	if len(res.Hits) != 3 || res.Sources[spi.SourceKeyword].Status != retriever.StatusOK {
		t.Errorf("override: %v %+v", hitIDs(res), res.Sources[spi.SourceKeyword])
	}
}

func TestLogsNeverContainQueryText(t *testing.T) {
	const secret = "patient john doe diagnosis"
	var buf bytes.Buffer
	s := newStack()
	s.kw.fault = fault{Err: fmt.Errorf("keyword: parse %q: %w", secret, spi.ErrInvalidQuery)}
	s.vec.fault = fault{Err: fmt.Errorf("vector: %w: query %q failed", spi.ErrUnavailable, secret)}
	s.gr.fault = fault{Panic: fmt.Sprintf("graph bug on %s", secret)}
	s.sor.fault = fault{Err: errors.New("sor down")}
	cfg := s.config()
	cfg.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r := mustNew(t, cfg)
	_, _ = r.Retrieve(context.Background(), retriever.Query{Text: secret})
	s.gr.fault = fault{Refs: refs("graph", "a")}
	res, err := r.Retrieve(context.Background(), retriever.Query{Text: secret})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(res)
	for what, out := range map[string]string{"logs": buf.String(), "response": string(body)} {
		if strings.Contains(out, "john doe") {
			t.Errorf("%s contain query text:\n%s", what, out)
		}
	}
	if !strings.Contains(buf.String(), "source dropped") || !strings.Contains(buf.String(), "[query]") {
		t.Errorf("expected redacted drop logs, got:\n%s", buf.String())
	}
}

func TestJSONShape(t *testing.T) {
	var q retriever.Query
	body := `{"text":"t","limit":5,"offset":1,"window":50,"filter":{"lang":["en"]},"tenant":"x",
	"sources":{"keyword":{"enabled":false,"k":10,"weight":0.5,"timeout_ms":20}},
	"fusion":{"mode":"score","k":30},"expand":{"enabled":true,"seeds":3,"hops":2,"limit":7,"weight":0.2},
	"min_sources":2,"explain":true,"budget_ms":900}`
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		t.Fatal(err)
	}
	kw := q.Sources["keyword"]
	if q.Limit != 5 || q.Offset != 1 || q.Window != 50 || q.Tenant != "x" || kw.Enabled == nil || *kw.Enabled || kw.K != 10 ||
		kw.Weight != 0.5 || kw.TimeoutMS != 20 || q.Fusion.Mode != "score" || q.Fusion.K != 30 || !*q.Expand.Enabled ||
		q.Expand.Seeds != 3 || q.Expand.Hops != 2 || q.Expand.Limit != 7 || q.Expand.Weight != 0.2 || q.MinSources != 2 ||
		!q.Explain || q.BudgetMS != 900 || !q.Filter.Match(spi.Metadata{"lang": spi.String("en")}) || q.Filter.Match(spi.Metadata{"lang": spi.String("de")}) {
		t.Errorf("decoded %+v", q)
	}

	s := newStack()
	delete(s.sor.docs, "e")
	r := mustNew(t, s.config())
	res := mustRetrieve(t, r, retriever.Query{Text: "q", Explain: true})
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"hits", "sources", "partial", "degraded", "fusion", "missing", "took_ms", "total", "offset", "limit"} {
		if _, ok := m[k]; !ok {
			t.Errorf("result JSON lacks %q: %s", k, out)
		}
	}
	var e map[string]any
	for _, h := range m["hits"].([]any) {
		hm := h.(map[string]any)
		if hm["id"] == "e" {
			e = hm
		}
	}
	if e == nil {
		t.Fatalf("no hit e in %s", out)
	}
	if _, ok := e["document"]; ok {
		t.Errorf("missing document must be omitted: %v", e)
	}
	ex := e["explain"].(map[string]any)
	if v, ok := ex["vector"]; !ok || v != nil {
		t.Errorf("explain.vector for e = %v (present %v), want null", v, ok)
	}
	if g := ex["graph"].(map[string]any); g["rank"] != 1.0 || g["raw_score"] != 1.0 {
		t.Errorf("explain.graph = %v", g)
	}
	if src := m["sources"].(map[string]any)["vector"].(map[string]any); src["status"] != "ok" || src["returned"] != 3.0 {
		t.Errorf("sources.vector = %v", src)
	}
	if miss := m["missing"].([]any); len(miss) != 1 || miss[0] != "e" {
		t.Errorf("missing = %v", miss)
	}
}

func TestBreakerRejectionAtCallTime(t *testing.T) {
	// The circuit can open (or fill its trial slots) between the check and
	// the call; the rejection is still reported as circuit_open.
	s := newStack()
	cfg := s.config()
	cfg.Gates = map[string]spi.Gate{spi.SourceKeyword: &fakeGate{admit: &spi.RejectedError{Gate: "keyword", Reason: spi.ErrCircuitOpen, RetryAfter: 5 * time.Second}}}
	r := mustNew(t, cfg)
	res := mustRetrieve(t, r, retriever.Query{Text: "q"})
	if st := res.Sources[spi.SourceKeyword]; st.Status != retriever.StatusCircuitOpen || st.Error != "circuit open" || st.RetryInMS != 5000 {
		t.Errorf("keyword = %+v", st)
	}
	if !res.Degraded || !res.Partial {
		t.Errorf("degraded=%v partial=%v", res.Degraded, res.Partial)
	}
}

func TestHalfOpenBreakerGetsTrialCall(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1700000000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	bc := breaker.DefaultConfig()
	bc.ResetTimeout = time.Minute
	bc.Now = clock
	b, err := breaker.New("keyword", bc)
	if err != nil {
		t.Fatal(err)
	}
	b.ForceOpen()
	s := newStack()
	cfg := s.config()
	withBreaker(&cfg, b, spi.SourceKeyword)
	r := mustNew(t, cfg)
	res := mustRetrieve(t, r, retriever.Query{Text: "q"})
	if st := res.Sources[spi.SourceKeyword]; st.Status != retriever.StatusCircuitOpen || st.RetryInMS != 60000 {
		t.Fatalf("open: %+v", st)
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	res = mustRetrieve(t, r, retriever.Query{Text: "q"})
	if st := res.Sources[spi.SourceKeyword]; st.Status != retriever.StatusOK || s.kw.calls.Load() != 1 {
		t.Fatalf("after cooldown the source must be called as the trial: %+v", st)
	}
	if b.State() != breaker.Closed {
		t.Errorf("breaker %v after a successful trial", b.State())
	}
}

// A source whose call was canceled (the client went away) is no fault of
// the source: its status says so, and no "source dropped" warning is
// logged for it, while a real failure beside it still is.
func TestCanceledSourcesAreNotLoggedAsDropped(t *testing.T) {
	var buf bytes.Buffer
	s := newStack()
	s.kw.fault = fault{Err: fmt.Errorf("keyword: %w", context.Canceled)}
	s.gr.fault = fault{Err: errors.New("graph down")}
	cfg := s.config()
	cfg.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r := mustNew(t, cfg)
	res, err := r.Retrieve(context.Background(), retriever.Query{Text: "wing flutter"})
	if err != nil {
		t.Fatal(err)
	}
	if st := res.Sources[spi.SourceKeyword]; st.Status != retriever.StatusError || st.Error != retriever.ReasonCanceled {
		t.Fatalf("keyword status %+v, want error %q", st, retriever.ReasonCanceled)
	}
	out := buf.String()
	if strings.Contains(out, `"source":"keyword"`) {
		t.Errorf("a canceled source was logged:\n%s", out)
	}
	if !strings.Contains(out, `"source":"graph"`) || !strings.Contains(out, "source dropped") {
		t.Errorf("the failed graph source was not logged:\n%s", out)
	}
}
