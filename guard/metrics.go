package guard

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports the guards' counters to Prometheus, read at scrape
// time:
//
//	ragd_guard_limit{source}                     gauge: current concurrency limit
//	ragd_guard_inflight{source}                  gauge: calls in flight
//	ragd_guard_shed_total{source}                counter: calls refused at the limit
//	ragd_guard_timeouts_total{source,verdict}    counter: per-source timeouts by verdict:
//	                                             counted (against the breaker), busy
//	                                             (another call succeeded meanwhile),
//	                                             same_stall (overlapped a counted one)
type Collector struct {
	guards                          func() []*Guard
	limit, inflight, shed, timeouts *prometheus.Desc
}

// NewCollector returns a collector over the guards list returns.
func NewCollector(list func() []*Guard) *Collector {
	return &Collector{
		guards:   list,
		limit:    prometheus.NewDesc("ragd_guard_limit", "Current adaptive concurrency limit of each source.", []string{"source"}, nil),
		inflight: prometheus.NewDesc("ragd_guard_inflight", "Calls in flight to each source.", []string{"source"}, nil),
		shed:     prometheus.NewDesc("ragd_guard_shed_total", "Calls refused because the source was at its concurrency limit.", []string{"source"}, nil),
		timeouts: prometheus.NewDesc("ragd_guard_timeouts_total", "Per-source timeouts by verdict: counted against the breaker, busy (another call to the source succeeded while it ran) or same_stall (it began before the last counted timeout ended).", []string{"source", "verdict"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.limit
	ch <- c.inflight
	ch <- c.shed
	ch <- c.timeouts
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, g := range c.guards() {
		s := g.Snapshot()
		if g.cfg.Limiter != nil {
			ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(s.Limit), s.Name)
			ch <- prometheus.MustNewConstMetric(c.inflight, prometheus.GaugeValue, float64(s.Inflight), s.Name)
		}
		ch <- prometheus.MustNewConstMetric(c.shed, prometheus.CounterValue, float64(s.ShedTotal), s.Name)
		ch <- prometheus.MustNewConstMetric(c.timeouts, prometheus.CounterValue, float64(s.TimeoutsCounted), s.Name, "counted")
		ch <- prometheus.MustNewConstMetric(c.timeouts, prometheus.CounterValue, float64(s.TimeoutsBusy), s.Name, "busy")
		ch <- prometheus.MustNewConstMetric(c.timeouts, prometheus.CounterValue, float64(s.TimeoutsSameStall), s.Name, "same_stall")
	}
}
