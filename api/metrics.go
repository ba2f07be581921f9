package api

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/internal/promreg"
)

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
}

func newHTTPMetrics(reg prometheus.Registerer) (*httpMetrics, error) {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ragd", Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests answered, by route template, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "ragd", Subsystem: "http", Name: "request_duration_seconds",
			Help:    "HTTP request duration, by route template and method.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "method"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "ragd", Subsystem: "http", Name: "requests_in_flight",
			Help: "HTTP requests being served.",
		}),
	}
	var err error
	if m.requests, err = promreg.Register(reg, m.requests); err != nil {
		return nil, err
	}
	if m.duration, err = promreg.Register(reg, m.duration); err != nil {
		return nil, err
	}
	if m.inFlight, err = promreg.Register(reg, m.inFlight); err != nil {
		return nil, err
	}
	return m, nil
}

// BreakerMetrics exposes circuit-breaker state to Prometheus:
//
//	ragd_breaker_state{breaker}             gauge: 0 closed, 1 half_open, 2 open
//	ragd_breaker_trips_total{breaker}       counter: times the breaker opened
//	ragd_breaker_failures{breaker}          gauge: current failure count
//	ragd_breaker_transitions_total{breaker,from,to,reason}
//	                                        counter: fed by ObserveTransition
//
// State, trips and failures are read from Breakers.Snapshot at scrape time,
// so they are exact even for transitions nobody observed; trips come from
// Snapshot.OpenedTotal.
type BreakerMetrics struct {
	transitions *prometheus.CounterVec
	source      atomic.Pointer[breakersBox]
	state       *prometheus.Desc
	trips       *prometheus.Desc
	failures    *prometheus.Desc
}

type breakersBox struct{ b Breakers }

// RegisterBreakerMetrics registers the breaker metrics on reg. breakers
// may be nil and set later with SetBreakers, because the registry's
// OnStateChange hook (which should call ObserveTransition) must exist
// before the registry does:
//
//	bm, err := api.RegisterBreakerMetrics(promReg, nil)
//	cfg.OnStateChange = func(t breaker.Transition) { logTransition(t); bm.ObserveTransition(t) }
//	reg := breaker.NewRegistry(cfg)
//	bm.SetBreakers(reg)
func RegisterBreakerMetrics(reg prometheus.Registerer, breakers Breakers) (*BreakerMetrics, error) {
	m := &BreakerMetrics{
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ragd", Subsystem: "breaker", Name: "transitions_total",
			Help: "Circuit-breaker state transitions, by breaker, from and to state, and reason.",
		}, []string{"breaker", "from", "to", "reason"}),
		state: prometheus.NewDesc("ragd_breaker_state",
			"Circuit-breaker state: 0 closed, 1 half_open, 2 open.", []string{"breaker"}, nil),
		trips: prometheus.NewDesc("ragd_breaker_trips_total",
			"Times the circuit breaker opened (tripped).", []string{"breaker"}, nil),
		failures: prometheus.NewDesc("ragd_breaker_failures",
			"Failures counted by the breaker in its current state.", []string{"breaker"}, nil),
	}
	m.SetBreakers(breakers)
	var err error
	if m.transitions, err = promreg.Register(reg, m.transitions); err != nil {
		return nil, err
	}
	if err := reg.Register(breakerCollector{m}); err != nil {
		return nil, err
	}
	return m, nil
}

// SetBreakers sets (or replaces) the registry read at scrape time. A nil
// value, including a nil *breaker.Registry, exports no breaker series.
func (m *BreakerMetrics) SetBreakers(b Breakers) {
	if isNil(b) {
		m.source.Store(nil)
		return
	}
	m.source.Store(&breakersBox{b})
}

// ObserveTransition counts t. Call it from the breaker registry's
// OnStateChange hook; it is cheap and safe for concurrent use.
func (m *BreakerMetrics) ObserveTransition(t breaker.Transition) {
	m.transitions.WithLabelValues(t.Name, t.From.String(), t.To.String(), string(t.Reason)).Inc()
}

// breakerCollector is the scrape-time view of the snapshots.
type breakerCollector struct{ m *BreakerMetrics }

func (c breakerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.m.state
	ch <- c.m.trips
	ch <- c.m.failures
}

func (c breakerCollector) Collect(ch chan<- prometheus.Metric) {
	box := c.m.source.Load()
	if box == nil {
		return
	}
	for _, s := range box.b.Snapshot() {
		ch <- prometheus.MustNewConstMetric(c.m.state, prometheus.GaugeValue, float64(s.State), s.Name)
		ch <- prometheus.MustNewConstMetric(c.m.trips, prometheus.CounterValue, float64(s.OpenedTotal), s.Name)
		ch <- prometheus.MustNewConstMetric(c.m.failures, prometheus.GaugeValue, float64(s.FailureCount), s.Name)
	}
}
