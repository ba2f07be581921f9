// Package history keeps the last minutes of what the operator console
// charts, in memory and bounded: per step (10 s by default) over a span
// (15 minutes), each source's calls, latency p50/p99, statuses (answered,
// shed, timeout, error, circuit open) and the queries they belong to, with
// how many of those answers were partial, degraded or failed; the
// HTTP edge's requests by class (4xx, 5xx, 429) and the queries' end-to-end
// latency; each breaker's state bands; and sampled gauges — each source's
// adaptive concurrency limit and calls in flight, each derived store's lag.
//
// It holds names, counts and durations only: no query text, no tenant, no
// document. Memory is fixed by the span, the step and the number of
// sources, whatever the traffic: each step keeps a small log-linear
// latency histogram per source (percentiles at most 12.5 % above the truth),
// never the samples.
package history

import (
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ragd/ragd/retriever"
)

// Defaults for the zero fields of Config.
const (
	DefaultStep = 10 * time.Second
	DefaultSpan = 15 * time.Minute
	// maxTransitions bounds the transitions kept per breaker.
	maxTransitions = 1024
)

// Config tunes a Recorder.
type Config struct {
	// Step is the width of one bucket; Span how far back buckets go.
	Step, Span time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Recorder records and summarises. It is safe for concurrent use.
type Recorder struct {
	step  int64 // nanoseconds
	n     int64 // buckets kept
	now   func() time.Time
	start int64 // index of the bucket the recorder was created in

	mu       sync.Mutex
	buckets  []bucket // buckets[idx % n]
	breakers []*band  // by name
}

// bucket is one step of every series.
type bucket struct {
	idx     int64 // step index (unix ns / step); -1 when never used
	queries int
	// answers counts the queries by what their callers got (a query may
	// be both partial and degraded): each at most queries.
	partial, degraded, failed int
	sources                   []sourceBucket
	http                      httpBucket
	gauges                    []gaugeBucket
}

type sourceBucket struct {
	name     string
	statuses [numStatuses]int
	took     hist
}

type httpBucket struct {
	requests, c4xx, c5xx, c429 int
	query                      hist
}

// gaugeBucket keeps the extremes of a sampled gauge within a step.
type gaugeBucket struct {
	kind, name string
	min, max   float64
	last       float64
}

// The statuses a source's bucket counts; anything else counts as other.
const (
	stOK = iota
	stError
	stTimeout
	stShed
	stCircuitOpen
	stSkipped
	stDisabled
	stOther
	numStatuses
)

func statusIndex(s retriever.Status) int {
	switch s {
	case retriever.StatusOK:
		return stOK
	case retriever.StatusError:
		return stError
	case retriever.StatusTimeout:
		return stTimeout
	case retriever.StatusShed:
		return stShed
	case retriever.StatusCircuitOpen:
		return stCircuitOpen
	case retriever.StatusSkipped:
		return stSkipped
	case retriever.StatusDisabled:
		return stDisabled
	}
	return stOther
}

// New returns an empty recorder.
func New(cfg Config) *Recorder {
	if cfg.Step <= 0 {
		cfg.Step = DefaultStep
	}
	if cfg.Span < cfg.Step {
		cfg.Span = max(DefaultSpan, cfg.Step)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Recorder{step: int64(cfg.Step), n: int64(cfg.Span / cfg.Step), now: cfg.Now}
	r.buckets = make([]bucket, r.n)
	for i := range r.buckets {
		r.buckets[i].idx = -1
	}
	r.start = r.index(cfg.Now())
	return r
}

func (r *Recorder) index(t time.Time) int64 {
	ns := t.UnixNano()
	if ns < 0 {
		return 0
	}
	return ns / r.step
}

// current returns the bucket of now, reset when it held an older step.
// The caller holds mu.
func (r *Recorder) current() *bucket {
	idx := r.index(r.now())
	b := &r.buckets[idx%r.n]
	if b.idx != idx {
		b.idx = idx
		b.queries, b.partial, b.degraded, b.failed = 0, 0, 0, 0
		for i := range b.sources {
			b.sources[i].statuses = [numStatuses]int{}
			b.sources[i].took.reset()
		}
		b.http = httpBucket{query: b.http.query}
		b.http.query.reset()
		b.gauges = b.gauges[:0]
	}
	return b
}

func (b *bucket) source(name string) *sourceBucket {
	for i := range b.sources {
		if b.sources[i].name == name {
			return &b.sources[i]
		}
	}
	b.sources = append(b.sources, sourceBucket{name: name})
	return &b.sources[len(b.sources)-1]
}

// ObserveQuery records one query's per-source outcomes (a Result's
// Sources, or a NotEnoughSourcesError's) and what its caller got.
func (r *Recorder) ObserveQuery(sources map[string]retriever.SourceStatus, a retriever.Answer) {
	r.mu.Lock()
	b := r.current()
	b.queries++
	if a.Partial {
		b.partial++
	}
	if a.Degraded {
		b.degraded++
	}
	if a.Failed {
		b.failed++
	}
	for name, st := range sources {
		s := b.source(name)
		s.statuses[statusIndex(st.Status)]++
		if st.TookMS > 0 {
			s.took.add(st.TookMS)
		}
	}
	r.mu.Unlock()
}

// ObserveRequest records one answered API request: its status code and,
// for a query (query true), its end-to-end duration.
func (r *Recorder) ObserveRequest(code int, d time.Duration, query bool) {
	r.mu.Lock()
	b := r.current()
	b.http.requests++
	switch {
	case code == 429:
		b.http.c429++
		b.http.c4xx++
	case code >= 500:
		b.http.c5xx++
	case code >= 400:
		b.http.c4xx++
	}
	if query {
		b.http.query.add(float64(d) / float64(time.Millisecond))
	}
	r.mu.Unlock()
}

// Gauge kinds of Sample.
const (
	GaugeLimit      = "limit"       // a source's adaptive concurrency limit
	GaugeInflight   = "inflight"    // a source's calls in flight
	GaugeLagEntries = "lag_entries" // a derived store's change-log entries not applied
	GaugeLagSeconds = "lag_seconds" // the age of the oldest of them
)

// Sample records the value of gauge kind of name (a source or a store)
// now; a step keeps the lowest, highest and last sample.
func (r *Recorder) Sample(kind, name string, v float64) {
	r.mu.Lock()
	b := r.current()
	i := slices.IndexFunc(b.gauges, func(g gaugeBucket) bool { return g.kind == kind && g.name == name })
	if i < 0 {
		b.gauges = append(b.gauges, gaugeBucket{kind: kind, name: name, min: v, max: v, last: v})
	} else {
		g := &b.gauges[i]
		g.min, g.max, g.last = min(g.min, v), max(g.max, v), v
	}
	r.mu.Unlock()
}

// Breaker states in bands, from best to worst; a step shows the worst
// state the breaker was in during it.
const (
	StateClosed   = "closed"
	StateHalfOpen = "half_open"
	StateOpen     = "open"
	StateHeld     = "held"
)

var stateRank = map[string]int{StateClosed: 0, StateHalfOpen: 1, StateOpen: 2, StateHeld: 3}

// band is one breaker's recent transitions.
type band struct {
	name   string
	before string   // the state before the oldest kept transition
	at     []int64  // transition times, unix ns, increasing
	to     []string // the state each entered
}

// Breaker records that breaker name entered state at t (one of the State
// constants); call it once at start with the current state, then on every
// transition.
func (r *Recorder) Breaker(name, state string, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.IndexFunc(r.breakers, func(b *band) bool { return b.name == name })
	if i < 0 {
		r.breakers = append(r.breakers, &band{name: name, before: state})
		slices.SortFunc(r.breakers, func(a, b *band) int { return strings.Compare(a.name, b.name) })
		return
	}
	b := r.breakers[i]
	ns := t.UnixNano()
	if k := len(b.at); k > 0 && ns < b.at[k-1] {
		ns = b.at[k-1] // keep the list ordered if the clock steps back
	}
	b.at, b.to = append(b.at, ns), append(b.to, state)
	// Forget what is older than the span (keeping the state it left), and
	// never keep more than maxTransitions.
	horizon := r.now().UnixNano() - r.n*r.step - r.step
	drop := 0
	for drop < len(b.at) && (b.at[drop] < horizon || len(b.at)-drop > maxTransitions) {
		drop++
	}
	if drop > 0 {
		b.before = b.to[drop-1]
		b.at, b.to = slices.Delete(b.at, 0, drop), slices.Delete(b.to, 0, drop)
	}
}

// hist is a log-linear latency histogram in milliseconds: eight bins per
// power of two from 2^-6 ms (16 µs) up, so a bin's upper edge is at most
// 12.5 % above any sample in it.
type hist struct {
	bins  [histBins]uint32
	count uint32
}

const (
	histMinExp = -6
	histMaxExp = 18 // 2^18 ms ≈ 4.4 minutes; longer lands in the last bin
	histSub    = 8
	histBins   = (histMaxExp - histMinExp) * histSub
)

func (h *hist) reset() { *h = hist{} }

func (h *hist) add(ms float64) {
	h.bins[histBin(ms)]++
	h.count++
}

func histBin(ms float64) int {
	if !(ms > 0) {
		return 0
	}
	frac, exp := math.Frexp(ms) // ms = frac × 2^exp, frac in [0.5, 1)
	i := (exp-1-histMinExp)*histSub + int((frac*2-1)*histSub)
	return min(max(i, 0), histBins-1)
}

// histUpper is the upper edge of bin i in milliseconds.
func histUpper(i int) float64 {
	exp := i/histSub + histMinExp
	sub := i%histSub + 1
	return math.Ldexp(1+float64(sub)/histSub, exp)
}

// quantile is the upper edge of the bin holding the q-th sample (nearest
// rank), or NaN without samples.
func (h *hist) quantile(q float64) float64 {
	if h.count == 0 {
		return math.NaN()
	}
	rank := uint32(math.Ceil(q * float64(h.count)))
	rank = max(rank, 1)
	var seen uint32
	for i, c := range h.bins {
		seen += c
		if seen >= rank {
			return histUpper(i)
		}
	}
	return histUpper(histBins - 1)
}
