package builtin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ragd/ragd/embedder/builtin"
)

// TestCollector: after two query passes (one of 1 text, one of 3) and a
// document pass, the collector reports 3 passes, 2 query passes of 4 texts
// in the size histogram and 4 query waits; nothing dropped or queued.
func TestCollector(t *testing.T) {
	m, err := builtin.Open(builtin.Config{Dir: "testdata/tiny", Name: "tiny", Precision: "fp32"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	for _, texts := range [][]string{{"one"}, {"two", "three", "four"}} {
		if _, err := m.Queries().Embed(ctx, texts); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Documents().Embed(ctx, []string{"a document"}); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP ragd_embedder_passes_total Forward passes of the built-in model, queries and documents.
# TYPE ragd_embedder_passes_total counter
ragd_embedder_passes_total 3
# HELP ragd_embedder_query_pass_sequences Query texts per successful query pass of the built-in model (micro-batching: queries that wait together share a pass).
# TYPE ragd_embedder_query_pass_sequences histogram
ragd_embedder_query_pass_sequences_bucket{le="1"} 1
ragd_embedder_query_pass_sequences_bucket{le="2"} 1
ragd_embedder_query_pass_sequences_bucket{le="3"} 2
ragd_embedder_query_pass_sequences_bucket{le="4"} 2
ragd_embedder_query_pass_sequences_bucket{le="6"} 2
ragd_embedder_query_pass_sequences_bucket{le="8"} 2
ragd_embedder_query_pass_sequences_bucket{le="12"} 2
ragd_embedder_query_pass_sequences_bucket{le="16"} 2
ragd_embedder_query_pass_sequences_bucket{le="32"} 2
ragd_embedder_query_pass_sequences_bucket{le="+Inf"} 2
ragd_embedder_query_pass_sequences_sum 4
ragd_embedder_query_pass_sequences_count 2
# HELP ragd_embedder_dropped_total Embedding jobs dropped before their pass, their callers gone (deadline or cancel).
# TYPE ragd_embedder_dropped_total counter
ragd_embedder_dropped_total 0
# HELP ragd_embedder_queued Embedding jobs waiting for a pass now, by role.
# TYPE ragd_embedder_queued gauge
ragd_embedder_queued{role="document"} 0
ragd_embedder_queued{role="query"} 0
`
	c := builtin.NewCollector(m)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "ragd_embedder_passes_total",
		"ragd_embedder_query_pass_sequences", "ragd_embedder_dropped_total", "ragd_embedder_queued"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "ragd_embedder_query_wait_seconds"); n != 1 {
		t.Fatalf("%d wait histograms, want 1", n)
	}
	if st := m.BatchStats(); st.QueryPasses != 2 || st.QuerySeqs != 4 {
		t.Fatalf("BatchStats %+v, want 2 query passes of 4 texts", st)
	}
}
