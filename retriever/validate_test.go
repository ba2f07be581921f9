package retriever_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

func TestQueryValidate(t *testing.T) {
	lim := retriever.Limits{VectorDimension: 3}
	many := map[string][]string{}
	for i := 0; i <= spi.MaxFilterConditions; i++ {
		many[fmt.Sprint("k", i)] = []string{"v"}
	}
	manyKeys := spi.StringFilter(many)
	ok := retriever.Query{Text: "q"}
	tests := []struct {
		name  string
		q     retriever.Query
		field string
	}{
		{"empty", retriever.Query{}, "text"},
		{"blank text", retriever.Query{Text: "  \t"}, "text"},
		{"text too long", retriever.Query{Text: strings.Repeat("x", retriever.DefaultMaxTextBytes+1)}, "text"},
		{"vector dim", retriever.Query{Vector: []float32{1, 2}}, "vector"},
		{"vector NaN", retriever.Query{Vector: []float32{1, float32(math.NaN()), 0}}, "vector"},
		{"vector Inf", retriever.Query{Vector: []float32{1, 0, float32(math.Inf(-1))}}, "vector"},
		{"negative limit", retriever.Query{Text: "q", Limit: -1}, "limit"},
		{"limit too big", retriever.Query{Text: "q", Limit: retriever.DefaultMaxLimit + 1}, "limit"},
		{"negative offset", retriever.Query{Text: "q", Offset: -1}, "offset"},
		{"offset too big", retriever.Query{Text: "q", Offset: retriever.DefaultMaxOffset + 1}, "offset"},
		{"negative window", retriever.Query{Text: "q", Window: -5}, "window"},
		{"window too big", retriever.Query{Text: "q", Window: retriever.DefaultMaxWindow + 1}, "window"},
		{"bad filter", retriever.Query{Text: "q", Filter: spi.StringFilter(map[string][]string{"lang": {}})}, "filter"},
		{"filter too many keys", retriever.Query{Text: "q", Filter: manyKeys}, "filter"},
		{"unknown source", retriever.Query{Text: "q", Sources: map[string]retriever.SourceOptions{"sparse": {}}}, "sources"},
		{"negative weight", retriever.Query{Text: "q", Sources: map[string]retriever.SourceOptions{"keyword": {Weight: -1}}}, "sources.keyword.weight"},
		{"NaN weight", retriever.Query{Text: "q", Sources: map[string]retriever.SourceOptions{"vector": {Weight: math.NaN()}}}, "sources.vector.weight"},
		{"negative k", retriever.Query{Text: "q", Sources: map[string]retriever.SourceOptions{"graph": {K: -1}}}, "sources.graph.k"},
		{"k too big", retriever.Query{Text: "q", Sources: map[string]retriever.SourceOptions{"graph": {K: retriever.DefaultMaxK + 1}}}, "sources.graph.k"},
		{"negative timeout", retriever.Query{Text: "q", Sources: map[string]retriever.SourceOptions{"graph_expand": {TimeoutMS: -1}}}, "sources.graph_expand.timeout_ms"},
		{"timeout too big", retriever.Query{Text: "q", Sources: map[string]retriever.SourceOptions{"vector": {TimeoutMS: 31000}}}, "sources.vector.timeout_ms"},
		{"fusion mode", retriever.Query{Text: "q", Fusion: retriever.FusionOptions{Mode: "borda"}}, "fusion.mode"},
		{"fusion k", retriever.Query{Text: "q", Fusion: retriever.FusionOptions{K: -1}}, "fusion.k"},
		{"expand hops", retriever.Query{Text: "q", Expand: retriever.ExpandOptions{Hops: 3}}, "expand.hops"},
		{"expand seeds", retriever.Query{Text: "q", Expand: retriever.ExpandOptions{Seeds: -1}}, "expand.seeds"},
		{"expand limit", retriever.Query{Text: "q", Expand: retriever.ExpandOptions{Limit: retriever.DefaultMaxK + 1}}, "expand.limit"},
		{"expand weight", retriever.Query{Text: "q", Expand: retriever.ExpandOptions{Weight: -0.5}}, "expand.weight"},
		{"min sources", retriever.Query{Text: "q", MinSources: 4}, "min_sources"},
		{"negative min sources", retriever.Query{Text: "q", MinSources: -1}, "min_sources"},
		{"budget", retriever.Query{Text: "q", BudgetMS: -1}, "budget_ms"},
		{"budget too big", retriever.Query{Text: "q", BudgetMS: 31000}, "budget_ms"},
		// Issue 18 item 4: milliseconds whose Duration overflows int64 wrap
		// to a negative or tiny deadline; they passed validation before.
		{"timeout overflowing Duration", retriever.Query{Text: "q", Sources: map[string]retriever.SourceOptions{"keyword": {TimeoutMS: 9223372036855}}}, "sources.keyword.timeout_ms"},
		{"budget overflowing Duration", retriever.Query{Text: "q", BudgetMS: 9223372036855}, "budget_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.q.Validate(lim)
			if !errors.Is(err, spi.ErrInvalidQuery) {
				t.Fatalf("Validate = %v, want ErrInvalidQuery", err)
			}
			var qe *retriever.QueryError
			if !errors.As(err, &qe) || qe.Field != tt.field || qe.Message == "" {
				t.Fatalf("error = %#v, want field %q", err, tt.field)
			}
			if tt.q.Text != "" && len(tt.q.Text) > 3 && strings.Contains(err.Error(), tt.q.Text) {
				t.Errorf("error echoes the query text")
			}
		})
	}
	for _, q := range []retriever.Query{
		ok,
		{Vector: []float32{1, 2, 3}},
		{Text: "q", Limit: 100, Offset: 1000, Window: 1000, MinSources: 3, BudgetMS: 30000,
			Sources: map[string]retriever.SourceOptions{"vector": {}, "keyword": {}, "graph": {}, "graph_expand": {}},
			Fusion:  retriever.FusionOptions{Mode: "dbsf"}, Expand: retriever.ExpandOptions{Hops: 2, Weight: 0}},
	} {
		if err := q.Validate(lim); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", q, err)
		}
	}
	// Unknown dimension: any length goes.
	if err := (retriever.Query{Vector: []float32{1}}).Validate(retriever.Limits{}); err != nil {
		t.Errorf("dimension unknown: %v", err)
	}
}

func TestRetrieveRejectsInvalidQuery(t *testing.T) {
	s := newStack()
	r := mustNew(t, s.config())
	_, err := r.Retrieve(context.Background(), retriever.Query{Text: "q", Limit: 1000})
	var qe *retriever.QueryError
	if !errors.As(err, &qe) || qe.Field != "limit" {
		t.Fatalf("err = %v", err)
	}
	if s.vec.calls.Load()+s.kw.calls.Load()+s.gr.calls.Load() != 0 {
		t.Error("sources called for an invalid query")
	}
}

type dimVector struct {
	fakeVector
	dim int
}

func (d *dimVector) Dimension() int { return d.dim }

func TestConfigValidate(t *testing.T) {
	kw := &fakeKeyword{}
	tests := []struct {
		name string
		cfg  retriever.Config
		want string
	}{
		{"no backend", retriever.Config{}, "no retrieval backend"},
		{"hydrator without name", retriever.Config{Keyword: kw, Hydrators: []retriever.NamedHydrator{{Hydrator: &fakeHydrator{}}}}, "no name"},
		{"nil hydrator", retriever.Config{Keyword: kw, Hydrators: []retriever.NamedHydrator{{Name: "x"}}}, "is nil"},
		{"duplicate hydrator", retriever.Config{Keyword: kw, Hydrators: []retriever.NamedHydrator{{Name: "x", Hydrator: &fakeHydrator{}}, {Name: "x", Hydrator: &fakeHydrator{}}}}, "twice"},
		{"negative limit", retriever.Config{Keyword: kw, Limits: retriever.Limits{MaxLimit: -1}}, "MaxLimit"},
		{"hops", retriever.Config{Keyword: kw, Limits: retriever.Limits{MaxHops: 3}}, "MaxHops"},
		{"dimension mismatch", retriever.Config{Vector: &dimVector{dim: 8}, Embedder: &fakeEmbedder{dim: 4}}, "does not match vector store dimension"},
		{"limits dimension mismatch", retriever.Config{Keyword: kw, Embedder: &fakeEmbedder{dim: 4}, Limits: retriever.Limits{VectorDimension: 5}}, "VectorDimension"},
		{"zero embedder dimension", retriever.Config{Keyword: kw, Embedder: &fakeEmbedder{dim: 0}}, "embedder dimension"},
		{"negative budget", retriever.Config{Keyword: kw, Defaults: retriever.Defaults{Budget: -time.Second}}, "Budget"},
		{"budget above max", retriever.Config{Keyword: kw, Defaults: retriever.Defaults{Budget: time.Minute}}, "MaxBudget"},
		{"default window", retriever.Config{Keyword: kw, Defaults: retriever.Defaults{Window: 5000}}, "window"},
		{"default mode", retriever.Config{Keyword: kw, Defaults: retriever.Defaults{Fusion: retriever.FusionOptions{Mode: "x"}}}, "fusion.mode"},
		{"default source", retriever.Config{Keyword: kw, Defaults: retriever.Defaults{Sources: map[string]retriever.SourceOptions{"bm25": {}}}}, "unknown source"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want error containing %q", err, tt.want)
			}
			if _, err := retriever.New(tt.cfg); err == nil {
				t.Fatal("New accepted an invalid config")
			}
		})
	}
	wrapped := retriever.Config{Vector: unwrapper{&dimVector{dim: 8}}, Embedder: &fakeEmbedder{dim: 4}}
	if err := wrapped.Validate(); err == nil || !strings.Contains(err.Error(), "does not match vector store dimension 8") {
		t.Errorf("a wrapped store's dimension must be checked too: %v", err)
	}
	good := retriever.Config{Vector: &dimVector{dim: 4}, Embedder: &fakeEmbedder{dim: 4}}
	if err := good.Validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	r := mustNew(t, retriever.Config{Vector: &dimVector{dim: 6}})
	if r.Limits().VectorDimension != 6 || r.Limits().MaxLimit != retriever.DefaultMaxLimit {
		t.Errorf("Limits() = %+v", r.Limits())
	}
	if retriever.DefaultLimits().MaxWindow != retriever.DefaultMaxWindow {
		t.Errorf("DefaultLimits() = %+v", retriever.DefaultLimits())
	}
}

func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (count uint64, value float64, found bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue metrics
				}
			}
			return sampleCount(m), m.GetCounter().GetValue(), true
		}
	}
	return 0, 0, false
}

func sampleCount(m *dto.Metric) uint64 {
	if h := m.GetHistogram(); h != nil {
		return h.GetSampleCount()
	}
	return 0
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := newStack()
	s.kw.fault = fault{Err: spi.ErrUnavailable}
	cfg := s.config()
	cfg.Registerer = reg
	r := mustNew(t, cfg)
	mustRetrieve(t, r, retriever.Query{Text: "q"})
	mustRetrieve(t, r, retriever.Query{Text: "q"})
	_, _ = r.Retrieve(context.Background(), retriever.Query{})

	if n, _, ok := metricValue(t, reg, "ragd_retriever_source_duration_seconds", map[string]string{"source": "keyword", "status": "error"}); !ok || n != 2 {
		t.Errorf("keyword error observations = %d (found %v), want 2", n, ok)
	}
	if n, _, ok := metricValue(t, reg, "ragd_retriever_source_duration_seconds", map[string]string{"source": "vector", "status": "ok"}); !ok || n != 2 {
		t.Errorf("vector ok observations = %d, want 2", n)
	}
	if _, v, ok := metricValue(t, reg, "ragd_retriever_queries_total", map[string]string{"degraded": "true", "partial": "true"}); !ok || v != 2 {
		t.Errorf("degraded partial queries = %v, want 2", v)
	}
	if _, v, ok := metricValue(t, reg, "ragd_retriever_query_failures_total", map[string]string{"reason": "invalid"}); !ok || v != 1 {
		t.Errorf("invalid failures = %v, want 1", v)
	}
	if n, _, ok := metricValue(t, reg, "ragd_retriever_hydrator_duration_seconds", map[string]string{"hydrator": "sor", "status": "ok"}); !ok || n != 2 {
		t.Errorf("hydrator observations = %d, want 2", n)
	}
	// A second retriever on the same registry shares the collectors.
	r2 := mustNew(t, cfg)
	mustRetrieve(t, r2, retriever.Query{Text: "q"})
	if _, v, _ := metricValue(t, reg, "ragd_retriever_queries_total", map[string]string{"degraded": "true", "partial": "true"}); v != 3 {
		t.Errorf("shared counter = %v, want 3", v)
	}
}

func TestTookUsesInjectedClock(t *testing.T) {
	s := newStack()
	cfg := s.config()
	var ticks int64
	base := time.Unix(1700000000, 0)
	cfg.Now = func() time.Time {
		ticks++
		return base.Add(time.Duration(ticks) * time.Millisecond)
	}
	r := mustNew(t, cfg)
	res := mustRetrieve(t, r, retriever.Query{Text: "q", Sources: retriever.Only(spi.SourceKeyword)})
	// Clock reads: start, keyword start/end, hydrator start/end, end.
	if res.Sources[spi.SourceKeyword].TookMS != 1 || res.TookMS != 5 {
		t.Errorf("took: keyword %v total %v", res.Sources[spi.SourceKeyword].TookMS, res.TookMS)
	}
}

// unwrapper is a wrapper (such as a lazy connector) that offers Unwrap.
type unwrapper struct{ spi.VectorRetrievalBackend }

func (u unwrapper) Unwrap() spi.VectorRetrievalBackend { return u.VectorRetrievalBackend }
