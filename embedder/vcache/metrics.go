package vcache

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	descHits = prometheus.NewDesc("ragd_vector_cache_hits_total",
		"Texts answered from a vector cache instead of the embedder, by cache (store: the persistent one, lru: the in-memory query cache) and role.", []string{"cache", "role"}, nil)
	descMisses = prometheus.NewDesc("ragd_vector_cache_misses_total",
		"Texts a vector cache did not hold, which went to the embedder.", []string{"cache", "role"}, nil)
	descEntries = prometheus.NewDesc("ragd_vector_cache_entries",
		"Vectors a cache holds.", []string{"cache"}, nil)
	descBytes = prometheus.NewDesc("ragd_vector_cache_bytes",
		"Bytes the persistent vector cache accounts for (vectors plus 80 bytes per entry), and its bound.", []string{"kind"}, nil)
	descEvictions = prometheus.NewDesc("ragd_vector_cache_evictions_total",
		"Vectors evicted from the persistent cache to keep it under its bound.", nil, nil)
)

// NewCollector exports the figures of s and q; either may be nil.
func NewCollector(s *Store, q *LRU) prometheus.Collector { return collector{s, q} }

type collector struct {
	s *Store
	q *LRU
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHits, descMisses, descEntries, descBytes, descEvictions} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	if c.s != nil {
		st := c.s.Stats()
		for _, role := range slices.Sorted(maps.Keys(st.Hits)) {
			ch <- prometheus.MustNewConstMetric(descHits, prometheus.CounterValue, float64(st.Hits[role]), "store", role)
			ch <- prometheus.MustNewConstMetric(descMisses, prometheus.CounterValue, float64(st.Misses[role]), "store", role)
		}
		ch <- prometheus.MustNewConstMetric(descEntries, prometheus.GaugeValue, float64(st.Entries), "store")
		ch <- prometheus.MustNewConstMetric(descBytes, prometheus.GaugeValue, float64(st.Bytes), "used")
		ch <- prometheus.MustNewConstMetric(descBytes, prometheus.GaugeValue, float64(st.MaxBytes), "max")
		ch <- prometheus.MustNewConstMetric(descEvictions, prometheus.CounterValue, float64(st.Evictions))
	}
	if c.q != nil {
		st := c.q.Stats()
		ch <- prometheus.MustNewConstMetric(descHits, prometheus.CounterValue, float64(st.Hits), "lru", c.q.role)
		ch <- prometheus.MustNewConstMetric(descMisses, prometheus.CounterValue, float64(st.Misses), "lru", c.q.role)
		ch <- prometheus.MustNewConstMetric(descEntries, prometheus.GaugeValue, float64(st.Entries), "lru")
	}
}
