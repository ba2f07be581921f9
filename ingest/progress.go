package ingest

import (
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// rateHalfLife is how fast the throughput estimate forgets: a batch this
// long ago weighs half as much as the latest.
const rateHalfLife = 10 * time.Second

// embedProgress tracks EmbedStatus. It is safe for concurrent use.
type embedProgress struct {
	now func() time.Time

	mu       sync.Mutex
	pending  int
	embedded uint64
	reused   uint64
	rate     float64   // texts/s, exponentially weighted
	last     time.Time // when the last batch finished

	mPending  prometheus.GaugeFunc
	mEmbedded prometheus.CounterFunc
	mReused   prometheus.CounterFunc
}

// queued adds n texts to the pending ones; keptStored and done remove
// them.
func (e *embedProgress) queued(n int) {
	e.mu.Lock()
	e.pending += n
	e.mu.Unlock()
}

// keptStored records n documents that kept their stored vector.
func (e *embedProgress) keptStored(n int) {
	e.mu.Lock()
	e.pending -= n
	e.reused += uint64(n)
	e.mu.Unlock()
}

// done records a batch of n texts that began at start and has just
// finished (ok or not: the texts are no longer pending). Throughput is
// measured between consecutive completions, or from the batch's own start
// after an idle spell, so concurrent batches add up and idle time does not
// count.
func (e *embedProgress) done(n int, start time.Time, ok bool) {
	end := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pending -= n
	if !ok {
		return
	}
	e.embedded += uint64(n)
	from := start
	if e.last.After(from) {
		from = e.last
	}
	sec := end.Sub(from).Seconds()
	if sec <= 0 {
		sec = 1e-6
	}
	inst := float64(n) / sec
	if e.rate == 0 {
		e.rate, e.last = inst, end
		return
	}
	// Weight the new sample by the time since the previous one finished,
	// idle time included: a rate measured before a pause (or on texts a
	// vector cache answered in microseconds) fades instead of steering the
	// ETA of the next bulk load.
	w := 1 - math.Exp2(-end.Sub(e.last).Seconds()/rateHalfLife.Seconds())
	e.last = end
	e.rate += w * (inst - e.rate)
}

func (e *embedProgress) status() EmbedStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := EmbedStatus{Pending: e.pending, Embedded: e.embedded, Reused: e.reused, RatePerSecond: e.rate}
	if s.Pending > 0 && e.rate > 0 {
		s.ETASeconds = float64(s.Pending) / e.rate
	}
	return s
}

// register exports the progress as metrics.
func (e *embedProgress) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	e.mPending = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ragd_ingest_embed_pending",
		Help: "Texts of writes in flight that wait for their vector."}, func() float64 { return float64(e.status().Pending) })
	e.mEmbedded = prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ragd_ingest_embedded_total",
		Help: "Document texts the write path had embedded."}, func() float64 { return float64(e.status().Embedded) })
	e.mReused = prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ragd_ingest_embed_reused_total",
		Help: "Documents written without embedding because their embedded text was unchanged."}, func() float64 { return float64(e.status().Reused) })
	for _, c := range []prometheus.Collector{e.mPending, e.mEmbedded, e.mReused} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
