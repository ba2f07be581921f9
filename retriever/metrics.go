package retriever

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ragd/ragd/internal/promreg"
)

// metrics are the retriever's Prometheus instruments; a nil *metrics (no
// Registerer) records nothing.
type metrics struct {
	sourceDuration   *prometheus.HistogramVec
	hydratorDuration *prometheus.HistogramVec
	queryDuration    prometheus.Histogram
	queries          *prometheus.CounterVec
	failures         *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	buckets := []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}
	m := &metrics{
		sourceDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "ragd", Subsystem: "retriever", Name: "source_duration_seconds",
			Help:    "Wall time of each retrieval source per query, by source and outcome status (timeout: an operator's deadline; caller_deadline: a shorter one the query chose; circuit_open calls take zero time).",
			Buckets: buckets,
		}, []string{"source", "status"}),
		hydratorDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "ragd", Subsystem: "retriever", Name: "hydrator_duration_seconds",
			Help:    "Wall time of each hydrator call, by hydrator and outcome status.",
			Buckets: buckets,
		}, []string{"hydrator", "status"}),
		queryDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "ragd", Subsystem: "retriever", Name: "query_duration_seconds",
			Help:    "Wall time of successful Retrieve calls.",
			Buckets: buckets,
		}),
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ragd", Subsystem: "retriever", Name: "queries_total",
			Help: "Successful Retrieve calls, by whether the result was degraded and partial.",
		}, []string{"degraded", "partial"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ragd", Subsystem: "retriever", Name: "query_failures_total",
			Help: "Failed Retrieve calls, by reason (invalid, not_enough_sources, caller_deadline: too few sources answered within a deadline the query chose, canceled).",
		}, []string{"reason"}),
	}
	var err error
	if m.sourceDuration, err = promreg.Register(reg, m.sourceDuration); err != nil {
		return nil, err
	}
	if m.hydratorDuration, err = promreg.Register(reg, m.hydratorDuration); err != nil {
		return nil, err
	}
	if m.queryDuration, err = promreg.Register(reg, m.queryDuration); err != nil {
		return nil, err
	}
	if m.queries, err = promreg.Register(reg, m.queries); err != nil {
		return nil, err
	}
	if m.failures, err = promreg.Register(reg, m.failures); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) source(name string, a attempt) {
	if m == nil {
		return
	}
	m.sourceDuration.WithLabelValues(name, string(a.status)).Observe(a.took.Seconds())
}

func (m *metrics) hydrator(name string, a attempt) {
	if m == nil {
		return
	}
	m.hydratorDuration.WithLabelValues(name, string(a.status)).Observe(a.took.Seconds())
}

func (m *metrics) query(res *Result, took time.Duration) {
	if m == nil {
		return
	}
	m.queryDuration.Observe(took.Seconds())
	m.queries.WithLabelValues(strconv.FormatBool(res.Degraded), strconv.FormatBool(res.Partial)).Inc()
}

func (m *metrics) failed(reason string) {
	if m == nil {
		return
	}
	m.failures.WithLabelValues(reason).Inc()
}
