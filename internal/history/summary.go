package history

import (
	"math"
	"slices"
	"strings"
	"time"
)

// Summary is the recorder's report, the body of GET /v1/status/history.
// Every series has Steps values, oldest first; the last step is the
// current, partial one. Steps before the recorder started are not
// reported, so a fresh server has short series.
type Summary struct {
	StepMS int64 `json:"step_ms"`
	SpanMS int64 `json:"span_ms"`
	// Start is when the first step began.
	Start time.Time `json:"start"`
	Steps int       `json:"steps"`
	// Queries counts the queries observed per step (answered or failed
	// for lack of sources); Partial, Degraded and Failed those of them
	// whose callers got a partial or degraded answer, or none
	// (retriever.AnswerOf: a query may be partial and degraded both).
	Queries  []int           `json:"queries"`
	Partial  []int           `json:"partial"`
	Degraded []int           `json:"degraded"`
	Failed   []int           `json:"failed"`
	HTTP     HTTPSeries      `json:"http"`
	Sources  []SourceSeries  `json:"sources"`
	Breakers []BreakerSeries `json:"breakers"`
	Gauges   []GaugeSeries   `json:"gauges"`
}

// HTTPSeries are the API's requests per step: all of them, those answered
// 4xx (429 included), 5xx and 429, and the end-to-end latency of queries
// (null in a step without one).
type HTTPSeries struct {
	Requests   []int      `json:"requests"`
	Status4xx  []int      `json:"status_4xx"`
	Status5xx  []int      `json:"status_5xx"`
	Status429  []int      `json:"status_429"`
	QueryP50MS []*float64 `json:"query_p50_ms"`
	QueryP99MS []*float64 `json:"query_p99_ms"`
}

// SourceSeries is one source per step: the calls made (time spent on it)
// and their latency percentiles (null without calls), and the queries by
// the source's status in them. A source's share of queries answered is
// OK over Summary.Queries.
type SourceSeries struct {
	Name        string     `json:"name"`
	Calls       []int      `json:"calls"`
	P50MS       []*float64 `json:"p50_ms"`
	P99MS       []*float64 `json:"p99_ms"`
	OK          []int      `json:"ok"`
	Error       []int      `json:"error"`
	Timeout     []int      `json:"timeout"`
	Shed        []int      `json:"shed"`
	CircuitOpen []int      `json:"circuit_open"`
}

// BreakerSeries is the worst state of one breaker in each step: closed,
// half_open, open or held.
type BreakerSeries struct {
	Name   string   `json:"name"`
	States []string `json:"states"`
}

// GaugeSeries is one sampled gauge: its lowest and highest sample per step
// (null in a step without a sample).
type GaugeSeries struct {
	Kind string     `json:"kind"`
	Name string     `json:"name"`
	Min  []*float64 `json:"min"`
	Max  []*float64 `json:"max"`
}

// Summary reports every series over the span.
func (r *Recorder) Summary() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.index(r.now())
	first := max(r.start, cur-r.n+1)
	steps := int(cur - first + 1)
	if steps < 1 { // the clock went back before the start
		first, steps = cur, 1
	}
	s := Summary{
		StepMS: r.step / int64(time.Millisecond), SpanMS: r.n * r.step / int64(time.Millisecond),
		Start: time.Unix(0, first*r.step).UTC(), Steps: steps,
		Queries: make([]int, steps), Partial: make([]int, steps), Degraded: make([]int, steps), Failed: make([]int, steps),
		HTTP: HTTPSeries{
			Requests: make([]int, steps), Status4xx: make([]int, steps), Status5xx: make([]int, steps), Status429: make([]int, steps),
			QueryP50MS: make([]*float64, steps), QueryP99MS: make([]*float64, steps),
		},
		Sources:  []SourceSeries{},
		Breakers: []BreakerSeries{},
		Gauges:   []GaugeSeries{},
	}
	for i := range steps {
		b := &r.buckets[(first+int64(i))%r.n]
		if b.idx != first+int64(i) {
			continue // nothing recorded in this step
		}
		s.Queries[i], s.Partial[i], s.Degraded[i], s.Failed[i] = b.queries, b.partial, b.degraded, b.failed
		h := b.http
		s.HTTP.Requests[i], s.HTTP.Status4xx[i], s.HTTP.Status5xx[i], s.HTTP.Status429[i] = h.requests, h.c4xx, h.c5xx, h.c429
		s.HTTP.QueryP50MS[i], s.HTTP.QueryP99MS[i] = num(h.query.quantile(0.5)), num(h.query.quantile(0.99))
		for j := range b.sources {
			src := &b.sources[j]
			ss := s.source(src.name, steps)
			st := src.statuses
			ss.OK[i], ss.Error[i], ss.Timeout[i], ss.Shed[i], ss.CircuitOpen[i] = st[stOK], st[stError], st[stTimeout], st[stShed], st[stCircuitOpen]
			ss.Calls[i] = int(src.took.count)
			ss.P50MS[i], ss.P99MS[i] = num(src.took.quantile(0.5)), num(src.took.quantile(0.99))
		}
		for _, g := range b.gauges {
			gs := s.gauge(g.kind, g.name, steps)
			gs.Min[i], gs.Max[i] = num(g.min), num(g.max)
		}
	}
	slices.SortFunc(s.Sources, func(a, b SourceSeries) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(s.Gauges, func(a, b GaugeSeries) int {
		if c := strings.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, b := range r.breakers {
		s.Breakers = append(s.Breakers, BreakerSeries{Name: b.name, States: b.states(first*r.step, r.step, steps)})
	}
	return s
}

// states is the worst state of the band in each of steps steps of step ns
// from start (unix ns).
func (b *band) states(start, step int64, steps int) []string {
	out := make([]string, steps)
	state := b.before
	j := 0
	for j < len(b.at) && b.at[j] <= start {
		state = b.to[j]
		j++
	}
	for i := range steps {
		end := start + int64(i+1)*step
		worst := state
		for j < len(b.at) && b.at[j] < end {
			state = b.to[j]
			if stateRank[state] > stateRank[worst] {
				worst = state
			}
			j++
		}
		out[i] = worst
	}
	return out
}

func (s *Summary) source(name string, steps int) *SourceSeries {
	for i := range s.Sources {
		if s.Sources[i].Name == name {
			return &s.Sources[i]
		}
	}
	s.Sources = append(s.Sources, SourceSeries{Name: name,
		Calls: make([]int, steps), P50MS: make([]*float64, steps), P99MS: make([]*float64, steps),
		OK: make([]int, steps), Error: make([]int, steps), Timeout: make([]int, steps), Shed: make([]int, steps), CircuitOpen: make([]int, steps)})
	return &s.Sources[len(s.Sources)-1]
}

func (s *Summary) gauge(kind, name string, steps int) *GaugeSeries {
	for i := range s.Gauges {
		if s.Gauges[i].Kind == kind && s.Gauges[i].Name == name {
			return &s.Gauges[i]
		}
	}
	s.Gauges = append(s.Gauges, GaugeSeries{Kind: kind, Name: name, Min: make([]*float64, steps), Max: make([]*float64, steps)})
	return &s.Gauges[len(s.Gauges)-1]
}

// num is v as a JSON number, or nil (null) for NaN and infinities.
func num(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
