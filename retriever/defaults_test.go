package retriever_test

import (
	"testing"
	"time"

	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// TestSourceDefaults: what a query that sets nothing gets, per source,
// matches what the planner does (a weight-0 graph is off in rag.yaml terms
// only when the wiring says so; here: explicitly disabled).
func TestSourceDefaults(t *testing.T) {
	off := false
	r, err := retriever.New(retriever.Config{
		Vector: &fakeVector{}, Keyword: &fakeKeyword{}, Graph: &fakeGraph{}, Embedder: &fakeEmbedder{dim: 3},
		Defaults: retriever.Defaults{
			Sources: map[string]retriever.SourceOptions{
				spi.SourceKeyword: {Weight: 2, TimeoutMS: 300},
				spi.SourceGraph:   {Enabled: &off},
			},
			Expand: retriever.ExpandOptions{Enabled: &off},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := r.SourceDefaults()
	want := []struct {
		name    string
		enabled bool
		weight  float64
		timeout time.Duration
	}{
		{spi.SourceVector, true, retriever.DefaultWeight, retriever.DefaultSourceTimeout},
		{spi.SourceKeyword, true, 2, 300 * time.Millisecond},
		{spi.SourceGraph, false, retriever.DefaultWeight, retriever.DefaultSourceTimeout},
		{spi.SourceGraphExpand, false, retriever.DefaultExpandWeight, retriever.DefaultSourceTimeout},
	}
	if len(got) != len(want) {
		t.Fatalf("%d defaults: %+v", len(got), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.name || g.Enabled != w.enabled || g.Weight != w.weight || g.Timeout != w.timeout {
			t.Errorf("default %d = %+v, want %+v", i, g, w)
		}
	}
	if got[2].Reason != "disabled" {
		t.Errorf("graph reason %q", got[2].Reason)
	}
}
