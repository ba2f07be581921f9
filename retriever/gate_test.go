package retriever_test

import (
	"errors"
	"slices"
	"testing"
	"time"

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
// success, failure, timeout (the source's own deadline) and neutral (the
// query's budget, an invalid query).
func TestGateOutcomes(t *testing.T) {
	cases := []struct {
		name  string
		fault fault
		q     retriever.Query
		want  spi.Outcome
	}{
		{"success", fault{Refs: refs(spi.SourceKeyword, "a")}, retriever.Query{Text: "q"}, spi.OutcomeSuccess},
		{"failure", fault{Err: spi.ErrUnavailable}, retriever.Query{Text: "q"}, spi.OutcomeFailure},
		{"panic", fault{Panic: "boom"}, retriever.Query{Text: "q"}, spi.OutcomeFailure},
		{"invalid", fault{Err: spi.ErrInvalidQuery}, retriever.Query{Text: "q"}, spi.OutcomeNeutral},
		{"own deadline", fault{Block: true}, retriever.Query{Text: "q",
			Sources: map[string]retriever.SourceOptions{spi.SourceKeyword: {TimeoutMS: 20}}}, spi.OutcomeTimeout},
		{"budget", fault{Block: true}, retriever.Query{Text: "q", BudgetMS: 20,
			Sources: map[string]retriever.SourceOptions{spi.SourceKeyword: {TimeoutMS: 5000}}}, spi.OutcomeNeutral},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack()
			s.kw.fault = tc.fault
			g := &fakeGate{}
			cfg := s.config()
			cfg.Gates = map[string]spi.Gate{spi.SourceKeyword: g}
			r := mustNew(t, cfg)
			mustRetrieve(t, r, tc.q)
			if got := g.seen(); !slices.Equal(got, []spi.Outcome{tc.want}) {
				t.Fatalf("outcomes %v, want [%v]", got, tc.want)
			}
		})
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
