package ingest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Run applies the record's change log to every derived store, and compacts
// the log, until ctx ends. Writes are accepted whether or not Run runs;
// they reach the derived stores once it does.
func (p *Pipeline) Run(ctx context.Context) {
	if p.log == nil {
		<-ctx.Done()
		return
	}
	var wg sync.WaitGroup
	for _, t := range p.tailers {
		wg.Go(func() { t.run(ctx) })
	}
	if p.retention > 0 {
		wg.Go(func() { p.compactLoop(ctx) })
	}
	wg.Wait()
}

// compactLoop runs Compact every tenth of the retention, at most hourly.
func (p *Pipeline) compactLoop(ctx context.Context) {
	t := time.NewTicker(min(p.retention/10, time.Hour))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := p.Compact(ctx); err != nil && ctx.Err() == nil {
			p.logger.Warn("ingest: compacting the change log failed", "err", err)
		} else if n > 0 {
			p.logger.Info("ingest: compacted the change log", "removed", n)
		}
	}
}

// Compact removes log entries older than the retention that every derived
// store of this process has applied (the newest entry always stays);
// dormant stores do not hold it back. A store that lags behind what was
// removed (a dormant one woken later, a replica's) notices the compaction
// watermark and is resynchronised from the record.
func (p *Pipeline) Compact(ctx context.Context) (int, error) {
	if p.log == nil || p.retention < 0 {
		return 0, nil
	}
	p.compactMu.Lock()
	defer p.compactMu.Unlock()
	ls, err := p.log.LogState(ctx)
	if err != nil {
		return 0, err
	}
	upTo := ls.Last
	for _, t := range p.tailers {
		if !t.dormant() {
			upTo = min(upTo, t.applied())
		}
	}
	n, err := p.log.CompactLog(ctx, p.now().Add(-p.retention), upTo)
	p.metrics.compacted(n)
	return n, err
}

// Limits returns the limits Upsert validates documents by (the API counts
// a batch's members against them before decoding it).
func (p *Pipeline) Limits() Limits { return p.limits }

// Status reports the log's head and every derived store's lag. It reads
// the record (two small queries per lagging store).
func (p *Pipeline) Status(ctx context.Context) (LogStatus, error) {
	st := LogStatus{AsOf: p.now().UTC(), Stores: []StoreLag{}}
	if p.embedder != nil {
		e := p.progress.status()
		st.Embedding = &e
	}
	if p.log == nil {
		return st, nil
	}
	ls, err := p.log.LogState(ctx)
	if err != nil {
		return st, fmt.Errorf("ingest: log status: %w", err)
	}
	st.Head = ls.Last
	for _, t := range p.tailers {
		t.mu.Lock()
		l := StoreLag{Store: t.name, Applied: t.seq, Error: t.lastErr, Dormant: t.dormant()}
		t.mu.Unlock()
		if l.Dormant {
			l.Behind = st.Head - l.Applied
		} else if st.Head > l.Applied {
			l.Behind = st.Head - l.Applied
			next, err := p.log.Changes(ctx, l.Applied, 1)
			if err != nil {
				return st, fmt.Errorf("ingest: log status: %w", err)
			}
			if len(next) > 0 {
				l.LagSeconds = max(0, p.now().Sub(next[0].At).Seconds())
			}
		}
		st.Stores = append(st.Stores, l)
	}
	return st, nil
}

// metrics are the write path's Prometheus series; nil-safe.
type metrics struct {
	commits     prometheus.Counter
	applies     *prometheus.CounterVec
	applyErrs   *prometheus.CounterVec
	skips       *prometheus.CounterVec
	compactions prometheus.Counter
}

// newMetrics registers the change-log counters (their names are the ones
// docs/ingest.md lists; a test in app scrapes a real app for every
// metric the docs name). The per-store counters start at zero for every
// derived store, so an alert on increase() sees the first event too.
func newMetrics(reg prometheus.Registerer, p *Pipeline, stores []string) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "ragd", Subsystem: "log", Name: name, Help: help})
	}
	perStore := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ragd", Subsystem: "log", Name: name, Help: help}, []string{"store"})
	}
	m := &metrics{
		commits:     counter("committed_writes_total", "Writes the record store committed (and appended to its change log)."),
		applies:     perStore("applied_entries_total", "Change-log entries a derived store applied."),
		applyErrs:   perStore("apply_errors_total", "Failed attempts to apply the change log to a derived store (retried)."),
		skips:       perStore("skipped_entries_total", "Entries a derived store rejected as invalid and that were skipped."),
		compactions: counter("compacted_entries_total", "Change-log entries removed by compaction."),
	}
	for _, store := range stores {
		for _, v := range []*prometheus.CounterVec{m.applies, m.applyErrs, m.skips} {
			v.WithLabelValues(store)
		}
	}
	for _, c := range []prometheus.Collector{m.commits, m.applies, m.applyErrs, m.skips, m.compactions, lagCollector{p}} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("ingest: metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) committed(n int) {
	if m != nil {
		m.commits.Add(float64(n))
	}
}

func (m *metrics) applied(store string, n int) {
	if m != nil {
		m.applies.WithLabelValues(store).Add(float64(n))
	}
}

func (m *metrics) applyError(store string) {
	if m != nil {
		m.applyErrs.WithLabelValues(store).Inc()
	}
}

func (m *metrics) skipped(store string) {
	if m != nil {
		m.skips.WithLabelValues(store).Inc()
	}
}

func (m *metrics) compacted(n int) {
	if m != nil && n > 0 {
		m.compactions.Add(float64(n))
	}
}

// lagCollector reports Status at scrape time.
type lagCollector struct{ p *Pipeline }

var (
	descHead = prometheus.NewDesc("ragd_log_head_seq", "The change log's last sequence.", nil, nil)
	descLag  = prometheus.NewDesc("ragd_log_lag_entries", "Log sequences a derived store has not applied yet.", []string{"store"}, nil)
	descAge  = prometheus.NewDesc("ragd_log_lag_seconds", "Age of the oldest log entry a derived store has not applied.", []string{"store"}, nil)
)

func (c lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descHead
	ch <- descLag
	ch <- descAge
}

func (c lagCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := c.p.Status(ctx)
	if err != nil {
		return // the record is down: no lag figures rather than wrong ones
	}
	ch <- prometheus.MustNewConstMetric(descHead, prometheus.GaugeValue, float64(st.Head))
	for _, s := range st.Stores {
		if s.Dormant {
			continue // not kept current: no lag to alert on
		}
		ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(s.Behind), s.Store)
		ch <- prometheus.MustNewConstMetric(descAge, prometheus.GaugeValue, s.LagSeconds, s.Store)
	}
}

// Behind reports whether a derived store this process keeps current has
// not yet applied the change log up to seq. Dormant stores are left out,
// and so is a store whose last apply failed: a store that is down must not
// hold back work that waits for the derived stores (the pgvector record's
// bulk index build, vector.IndexConfig.Busy).
func (p *Pipeline) Behind(seq uint64) bool {
	for _, t := range p.tailers {
		if t.dormant() {
			continue
		}
		t.mu.Lock()
		behind := t.seq < seq && t.lastErr == ""
		t.mu.Unlock()
		if behind {
			return true
		}
	}
	return false
}
