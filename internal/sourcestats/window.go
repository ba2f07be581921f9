// Package sourcestats keeps what the operator console shows of the last
// minute: how many answers were partial, degraded or failed (the user
// impact), and per source beside its breaker the call latency (p50 and
// p99), the share of recent queries the source answered and its newest
// failure, computed from the outcomes of recent queries. It also turns bursts of
// timed-out or shed calls into timeline events (timed out on an operator's
// deadline: a query's own shorter deadline is caller_deadline, no burst).
//
// Only source names, statuses, the retriever's operator-safe reasons
// (retriever.SourceStatus.Error: never query text), durations and the
// query's tenant are kept — never query text or documents — and at most
// Config.Capacity queries.
package sourcestats

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ragd/ragd/internal/events"
	"github.com/ragd/ragd/retriever"
)

// Defaults for the zero fields of Config.
const (
	DefaultSpan           = time.Minute
	DefaultCapacity       = 4096
	DefaultBurstThreshold = 5
	DefaultBurstWindow    = 10 * time.Second
)

// DefaultBurstStatuses are the source statuses whose repetition is a burst.
// A source cut off by the query's own deadline (caller_deadline) is not
// among them: a tenant asking for 1 ms deadlines says nothing about the
// source and must not put a timeout burst on the operator's timeline.
var DefaultBurstStatuses = []retriever.Status{retriever.StatusTimeout, retriever.StatusShed}

// ErrConfig is wrapped by every Config.Validate error.
var ErrConfig = errors.New("sourcestats: invalid config")

// Config tunes a Window. Zero fields take the defaults above.
type Config struct {
	// Span is how far back Snapshot looks.
	Span time.Duration
	// Capacity bounds the queries remembered; under heavy load the window
	// is the last Capacity queries when they span less than Span.
	Capacity int
	// BurstStatuses are the statuses that form bursts.
	BurstStatuses []retriever.Status
	// A burst of a source and status starts when BurstThreshold calls end
	// with that status within BurstWindow, and ends when none has for
	// BurstWindow.
	BurstThreshold int
	BurstWindow    time.Duration
	// Publish receives burst events; nil drops them.
	Publish func(events.Event)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Validate reports negative settings.
func (c Config) Validate() error {
	if c.Span < 0 || c.Capacity < 0 || c.BurstThreshold < 0 || c.BurstWindow < 0 {
		return fmt.Errorf("%w: span, capacity, burst threshold and burst window must not be negative", ErrConfig)
	}
	return nil
}

// Window is the sliding window. It is safe for concurrent use.
type Window struct {
	cfg Config

	mu     sync.Mutex
	ring   []query // ring[(n-1) % len(ring)] is the newest query
	n      uint64  // queries observed
	bursts map[burstKey]*burst
}

// query is one observed query.
type query struct {
	at      time.Time
	tenant  string
	answer  retriever.Answer
	failed  bool // some outcome failed: a scan for failures reads it, not the outcomes
	sources []outcome
}

type outcome struct {
	name   string
	status retriever.Status
	tookMS float64
	failed bool   // see failed
	reason string // retriever.SourceStatus.Error, of failures only
}

// New validates cfg and returns an empty window.
func New(cfg Config) (*Window, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Span == 0 {
		cfg.Span = DefaultSpan
	}
	if cfg.Capacity == 0 {
		cfg.Capacity = DefaultCapacity
	}
	if cfg.BurstStatuses == nil {
		cfg.BurstStatuses = DefaultBurstStatuses
	}
	if cfg.BurstThreshold == 0 {
		cfg.BurstThreshold = DefaultBurstThreshold
	}
	if cfg.BurstWindow == 0 {
		cfg.BurstWindow = DefaultBurstWindow
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Window{cfg: cfg, ring: make([]query, cfg.Capacity), bursts: map[burstKey]*burst{}}, nil
}

// Observe records one query's per-source statuses (a Result's Sources, or
// a NotEnoughSourcesError's) and what its caller got.
func (w *Window) Observe(tenant string, sources map[string]retriever.SourceStatus, a retriever.Answer) {
	var evs []events.Event
	w.mu.Lock()
	now := w.cfg.Now()
	w.n++
	q := &w.ring[(w.n-1)%uint64(len(w.ring))]
	q.at, q.tenant, q.answer, q.failed, q.sources = now, tenant, a, false, q.sources[:0]
	for name, st := range sources {
		o := outcome{name: name, status: st.Status, tookMS: st.TookMS, failed: failed(st)}
		if o.failed {
			o.reason = st.Error
			q.failed = true
		}
		q.sources = append(q.sources, o)
		if slices.Contains(w.cfg.BurstStatuses, st.Status) {
			if e, ok := w.burstCall(name, st.Status, now); ok {
				evs = append(evs, e)
			}
		}
	}
	evs = append(evs, w.endBursts(now)...)
	w.mu.Unlock()
	w.publish(evs)
}

// Snapshot summarises the queries of the last Span; with a non-empty
// tenant, only that tenant's queries (and failures). It also ends bursts
// that went quiet.
func (w *Window) Snapshot(tenant string) Snapshot {
	type acc struct {
		src  Source
		took []float64
	}
	w.mu.Lock()
	now := w.cfg.Now()
	evs := w.endBursts(now)
	snap := Snapshot{SpanMS: w.cfg.Span.Milliseconds(), Sources: []Source{}, Failures: []Failure{}}
	var by []*acc // a handful of sources: a slice beats a map here
	size := uint64(len(w.ring))
	inSpan := true
	for i := uint64(0); i < min(w.n, size); i++ {
		q := &w.ring[(w.n-1-i)%size]
		if tenant != "" && q.tenant != tenant {
			continue
		}
		// Newest first: the first failure of a source met is its newest.
		for j := 0; q.failed && j < len(q.sources); j++ {
			o := &q.sources[j]
			if o.failed && !slices.ContainsFunc(snap.Failures, func(f Failure) bool { return f.Source == o.name }) {
				snap.Failures = append(snap.Failures, Failure{Source: o.name, Status: o.status, Error: o.reason, At: q.at})
			}
		}
		if inSpan = inSpan && now.Sub(q.at) <= w.cfg.Span; !inSpan {
			continue // older entries are older still: failures only
		}
		snap.Queries++
		if q.answer.Partial {
			snap.Answers.Partial++
		}
		if q.answer.Degraded {
			snap.Answers.Degraded++
		}
		if q.answer.Failed {
			snap.Answers.Failed++
		}
		for _, o := range q.sources {
			i := slices.IndexFunc(by, func(a *acc) bool { return a.src.Name == o.name })
			if i < 0 {
				i = len(by)
				by = append(by, &acc{src: Source{Name: o.name, Statuses: map[retriever.Status]int{}}, took: make([]float64, 0, size)})
			}
			a := by[i]
			a.src.Statuses[o.status]++
			if o.status == retriever.StatusOK {
				a.src.Answered++
			}
			if o.tookMS > 0 && timed(o.status) {
				a.took = append(a.took, o.tookMS)
			}
		}
	}
	w.mu.Unlock()
	w.publish(evs)
	if n := float64(snap.Queries); n > 0 {
		a := &snap.Answers
		a.PartialShare, a.DegradedShare, a.FailedShare = float64(a.Partial)/n, float64(a.Degraded)/n, float64(a.Failed)/n
	}
	slices.SortFunc(snap.Failures, func(a, b Failure) int { return strings.Compare(a.Source, b.Source) })
	for _, a := range by {
		s := a.src
		s.Share = float64(s.Answered) / float64(snap.Queries)
		if s.Calls = len(a.took); s.Calls > 0 {
			slices.Sort(a.took)
			s.P50MS, s.P99MS = percentile(a.took, 0.50), percentile(a.took, 0.99)
		}
		snap.Sources = append(snap.Sources, s)
	}
	slices.SortFunc(snap.Sources, func(a, b Source) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return snap
}

// timed reports whether a call that ended with status says how fast the
// source is. One cut off by a deadline the query chose (caller_deadline)
// lasted as long as the caller allowed, and one skipped because its
// backend had nothing to search never reached the backend: neither is a
// latency sample, or a tenant sending 1 ms deadlines or texts with no
// word in them would set the console's p50 and p99.
func timed(status retriever.Status) bool {
	return status != retriever.StatusCallerDeadline && status != retriever.StatusSkipped
}

// failed reports whether a source's outcome is a failure the console
// shows as the source's newest: an error other than the caller's own doing
// (an invalid query, a cancelled request), a timeout of the operator's
// deadline, or a shed call. circuit_open is the breaker's consequence,
// caller_deadline the query's choice: neither.
func failed(st retriever.SourceStatus) bool {
	switch st.Status {
	case retriever.StatusTimeout, retriever.StatusShed:
		return true
	case retriever.StatusError:
		return st.Error != retriever.ReasonInvalidQuery && st.Error != retriever.ReasonCanceled
	}
	return false
}

// percentile is the nearest-rank percentile of sorted samples.
func percentile(sorted []float64, p float64) *float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	v := sorted[max(i, 0)]
	return &v
}

func (w *Window) publish(evs []events.Event) {
	if w.cfg.Publish == nil {
		return
	}
	for _, e := range evs {
		w.cfg.Publish(e)
	}
}
