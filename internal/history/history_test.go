package history_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/history"
	"github.com/ragd/ragd/retriever"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// t0 is the start of a 10-second step.
var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func newRecorder(c *clock) *history.Recorder {
	return history.New(history.Config{Step: 10 * time.Second, Span: time.Minute, Now: c.Now})
}

func ok(ms float64) retriever.SourceStatus {
	return retriever.SourceStatus{Status: retriever.StatusOK, TookMS: ms}
}

func TestSourcesPerStep(t *testing.T) {
	c := &clock{t: t0.Add(time.Second)}
	r := newRecorder(c)
	for i := range 100 {
		r.ObserveQuery(map[string]retriever.SourceStatus{
			"vector": ok(float64(i + 1)),
			"graph":  {Status: retriever.StatusTimeout, TookMS: 800},
		}, retriever.Answer{Partial: true, Degraded: i%2 == 0})
	}
	c.Advance(10 * time.Second)
	r.ObserveQuery(map[string]retriever.SourceStatus{"vector": {Status: retriever.StatusShed}, "graph": {Status: retriever.StatusCircuitOpen}}, retriever.Answer{Failed: true})
	c.Advance(20 * time.Second) // a quiet step, then the current one
	s := r.Summary()
	if s.Steps != 4 || !s.Start.Equal(t0) || s.StepMS != 10000 || s.SpanMS != 60000 {
		t.Fatalf("steps %d start %v step %d span %d", s.Steps, s.Start, s.StepMS, s.SpanMS)
	}
	if !slices.Equal(s.Queries, []int{100, 1, 0, 0}) {
		t.Fatalf("queries %v", s.Queries)
	}
	// What the callers got, per step (issue 30 item 6: the user impact).
	if !slices.Equal(s.Partial, []int{100, 0, 0, 0}) || !slices.Equal(s.Degraded, []int{50, 0, 0, 0}) || !slices.Equal(s.Failed, []int{0, 1, 0, 0}) {
		t.Fatalf("partial %v degraded %v failed %v", s.Partial, s.Degraded, s.Failed)
	}
	if len(s.Sources) != 2 || s.Sources[0].Name != "graph" || s.Sources[1].Name != "vector" {
		t.Fatalf("sources %+v", s.Sources)
	}
	g, v := s.Sources[0], s.Sources[1]
	if !slices.Equal(v.OK, []int{100, 0, 0, 0}) || !slices.Equal(v.Shed, []int{0, 1, 0, 0}) || !slices.Equal(v.Calls, []int{100, 0, 0, 0}) {
		t.Fatalf("vector %+v", v)
	}
	if !slices.Equal(g.Timeout, []int{100, 0, 0, 0}) || !slices.Equal(g.CircuitOpen, []int{0, 1, 0, 0}) {
		t.Fatalf("graph %+v", g)
	}
	// Latencies 1..100 ms: p50 is 50, p99 is 99; the histogram reports
	// at most 12.5 % above.
	within(t, "vector p50", v.P50MS[0], 50)
	within(t, "vector p99", v.P99MS[0], 99)
	if v.P50MS[1] != nil || v.P99MS[2] != nil {
		t.Fatalf("latency in steps without calls: %v %v", v.P50MS[1], v.P99MS[2])
	}
}

func within(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil || *got < want || *got > want*1.125 {
		t.Errorf("%s = %v, want in [%v, %v]", what, deref(got), want, want*1.125)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestSpanIsBounded: steps older than the span are forgotten and their
// slots start empty when reused.
func TestSpanIsBounded(t *testing.T) {
	c := &clock{t: t0}
	r := newRecorder(c)
	for range 12 {
		r.ObserveQuery(map[string]retriever.SourceStatus{"vector": ok(1)}, retriever.Answer{Partial: true, Failed: true})
		r.ObserveRequest(200, time.Millisecond, true)
		r.Sample(history.GaugeLimit, "vector", 8)
		c.Advance(10 * time.Second)
	}
	s := r.Summary()
	if s.Steps != 6 || !s.Start.Equal(t0.Add(70*time.Second)) {
		t.Fatalf("steps %d start %v, want 6 from %v", s.Steps, s.Start, t0.Add(70*time.Second))
	}
	if !slices.Equal(s.Queries, []int{1, 1, 1, 1, 1, 0}) || !slices.Equal(s.HTTP.Requests, []int{1, 1, 1, 1, 1, 0}) ||
		!slices.Equal(s.Partial, s.Queries) || !slices.Equal(s.Failed, s.Queries) || !slices.Equal(s.Degraded, []int{0, 0, 0, 0, 0, 0}) {
		t.Fatalf("queries %v requests %v partial %v failed %v degraded %v", s.Queries, s.HTTP.Requests, s.Partial, s.Failed, s.Degraded)
	}
	if len(s.Gauges) != 1 || s.Gauges[0].Max[5] != nil || *s.Gauges[0].Max[4] != 8 {
		t.Fatalf("gauges %+v", s.Gauges)
	}
}

func TestRequests(t *testing.T) {
	c := &clock{t: t0}
	r := newRecorder(c)
	for _, code := range []int{200, 200, 207, 400, 401, 429, 500, 503} {
		r.ObserveRequest(code, 0, false)
	}
	for ms := 1; ms <= 10; ms++ {
		r.ObserveRequest(200, time.Duration(ms)*time.Millisecond, true)
	}
	h := r.Summary().HTTP
	if h.Requests[0] != 18 || h.Status4xx[0] != 3 || h.Status429[0] != 1 || h.Status5xx[0] != 2 {
		t.Fatalf("http %+v", h)
	}
	within(t, "query p99", h.QueryP99MS[0], 10)
	within(t, "query p50", h.QueryP50MS[0], 5)
}

func TestGaugesKeepExtremes(t *testing.T) {
	c := &clock{t: t0}
	r := newRecorder(c)
	for _, v := range []float64{32, 12, 40, 20} {
		r.Sample(history.GaugeLimit, "vector", v)
	}
	r.Sample(history.GaugeLagEntries, "keyword", 3)
	s := r.Summary()
	if len(s.Gauges) != 2 || s.Gauges[0].Kind != history.GaugeLagEntries || s.Gauges[1].Name != "vector" ||
		*s.Gauges[1].Min[0] != 12 || *s.Gauges[1].Max[0] != 40 {
		t.Fatalf("gauges %+v", s.Gauges)
	}
}

// TestBreakerBands: each step shows the worst state of the breaker in it,
// including states that lasted less than a step, and the state carries
// into quiet steps.
func TestBreakerBands(t *testing.T) {
	c := &clock{t: t0}
	r := newRecorder(c)
	r.Breaker("graph", history.StateClosed, c.Now())
	r.Breaker("vector", history.StateClosed, c.Now())
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	r.Breaker("graph", history.StateOpen, at(12))
	r.Breaker("graph", history.StateHalfOpen, at(14))
	r.Breaker("graph", history.StateClosed, at(15)) // a blip inside step 1
	r.Breaker("graph", history.StateHeld, at(31))
	r.Breaker("graph", history.StateClosed, at(45))
	c.Advance(55 * time.Second)
	s := r.Summary()
	if len(s.Breakers) != 2 || s.Breakers[0].Name != "graph" {
		t.Fatalf("breakers %+v", s.Breakers)
	}
	want := []string{"closed", "open", "closed", "held", "held", "closed"}
	if got := s.Breakers[0].States; !slices.Equal(got, want) {
		t.Fatalf("graph bands %v, want %v", got, want)
	}
	if got := s.Breakers[1].States; !slices.Equal(got, []string{"closed", "closed", "closed", "closed", "closed", "closed"}) {
		t.Fatalf("vector bands %v", got)
	}
	// Two spans later the transitions are forgotten but the state they
	// left is kept.
	r.Breaker("graph", history.StateOpen, c.Now())
	c.Advance(2 * time.Minute)
	r.Breaker("vector", history.StateOpen, c.Now())
	s = r.Summary()
	if got := s.Breakers[0].States; got[0] != "open" || got[5] != "open" {
		t.Fatalf("graph bands after two spans %v, want all open", got)
	}
}

// TestHistogramQuantiles checks the histogram against the exact nearest-
// rank percentile of random latencies spread over six orders of magnitude.
func TestHistogramQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		c := &clock{t: t0}
		r := newRecorder(c)
		n := 1 + rng.IntN(2000)
		samples := make([]float64, n)
		for i := range samples {
			samples[i] = math.Exp(rng.Float64()*14 - 4) // 0.02 ms to 22 s
			r.ObserveQuery(map[string]retriever.SourceStatus{"vector": ok(samples[i])}, retriever.Answer{})
		}
		sort.Float64s(samples)
		exact := func(q float64) float64 { return samples[max(int(math.Ceil(q*float64(n)))-1, 0)] }
		v := r.Summary().Sources[0]
		for _, q := range []struct {
			got  *float64
			want float64
		}{{v.P50MS[0], exact(0.5)}, {v.P99MS[0], exact(0.99)}} {
			if q.got == nil || *q.got < q.want || *q.got > q.want*1.125 {
				t.Fatalf("trial %d (%d samples): got %v, exact %v", trial, n, deref(q.got), q.want)
			}
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	r := history.New(history.Config{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				r.ObserveQuery(map[string]retriever.SourceStatus{"vector": ok(float64(i)), "keyword": ok(1)}, retriever.Answer{})
				r.ObserveRequest(200, time.Millisecond, true)
				if i%50 == 0 {
					r.Sample(history.GaugeInflight, "vector", float64(g))
					r.Breaker("vector", history.StateClosed, time.Now())
					_ = r.Summary()
				}
			}
		}()
	}
	wg.Wait()
	s := r.Summary()
	total := 0
	for _, q := range s.Queries {
		total += q
	}
	if total != 4000 {
		t.Fatalf("%d queries recorded, want 4000", total)
	}
}
