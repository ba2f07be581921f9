package builtin

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ragd/ragd/embedder/builtin/internal/sched"
)

var (
	descPasses = prometheus.NewDesc("ragd_embedder_passes_total",
		"Forward passes of the built-in model, queries and documents.", nil, nil)
	descPassSeqs = prometheus.NewDesc("ragd_embedder_query_pass_sequences",
		"Query texts per successful query pass of the built-in model (micro-batching: queries that wait together share a pass).", nil, nil)
	descWait = prometheus.NewDesc("ragd_embedder_query_wait_seconds",
		"Time a query embedding waited for its forward pass to start (the pass before it, or the document chunk running).", nil, nil)
	descDropped = prometheus.NewDesc("ragd_embedder_dropped_total",
		"Embedding jobs dropped before their pass, their callers gone (deadline or cancel).", nil, nil)
	descQueued = prometheus.NewDesc("ragd_embedder_queued",
		"Embedding jobs waiting for a pass now, by role.", []string{"role"}, nil)
	descService = prometheus.NewDesc("ragd_embedder_query_service_seconds",
		"What one more waiting query adds to a query's wait, as recently measured (a query pass's wall time over its queries); the query guard admits by it.", nil, nil)
)

// NewCollector exports m's scheduler counters: passes, query texts per
// pass and query waits as histograms, jobs dropped and queued, the
// measured service time.
func NewCollector(m *Model) prometheus.Collector { return collector{m} }

type collector struct{ m *Model }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPasses, descPassSeqs, descWait, descDropped, descQueued, descService} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	st := c.m.BatchStats()
	ch <- prometheus.MustNewConstMetric(descPasses, prometheus.CounterValue, float64(st.Passes))
	sizes := make(map[float64]uint64, len(sched.SizeBuckets))
	var n uint64
	for i, b := range sched.SizeBuckets {
		n += st.Sizes[i]
		sizes[float64(b)] = n
	}
	ch <- prometheus.MustNewConstHistogram(descPassSeqs, st.QueryPasses, float64(st.QuerySeqs), sizes)
	waits := make(map[float64]uint64, len(sched.WaitBuckets))
	n = 0
	var waited uint64
	for i, b := range sched.WaitBuckets {
		n += st.Waits[i]
		waits[b.Seconds()] = n
	}
	for _, w := range st.Waits {
		waited += w
	}
	ch <- prometheus.MustNewConstHistogram(descWait, waited, st.Waited.Seconds(), waits)
	ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(st.Dropped))
	ch <- prometheus.MustNewConstMetric(descQueued, prometheus.GaugeValue, float64(st.QueuedQueries), "query")
	ch <- prometheus.MustNewConstMetric(descQueued, prometheus.GaugeValue, float64(st.QueuedDocs), "document")
	ch <- prometheus.MustNewConstMetric(descService, prometheus.GaugeValue, c.m.QueryServiceTime().Seconds())
}
