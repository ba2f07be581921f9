package guard_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/guard"
	"github.com/ragd/ragd/spi"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeLimiter is a fixed limit that counts what its permits report.
type fakeLimiter struct {
	mu                sync.Mutex
	limit, inflight   int
	recorded, dropped int
}

func (l *fakeLimiter) TryAcquire() (guard.LimitPermit, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight >= l.limit {
		return nil, false
	}
	l.inflight++
	return limitPermit{l}, true
}

func (l *fakeLimiter) Limit() int    { l.mu.Lock(); defer l.mu.Unlock(); return l.limit }
func (l *fakeLimiter) Inflight() int { l.mu.Lock(); defer l.mu.Unlock(); return l.inflight }

type limitPermit struct{ l *fakeLimiter }

func (p limitPermit) Record() { p.l.mu.Lock(); p.l.inflight--; p.l.recorded++; p.l.mu.Unlock() }
func (p limitPermit) Drop()   { p.l.mu.Lock(); p.l.inflight--; p.l.dropped++; p.l.mu.Unlock() }

// fakeClock is the breakers' clock: time moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newBreaker(t *testing.T, clock *fakeClock, threshold int) *breaker.Breaker {
	t.Helper()
	cfg := breaker.DefaultConfig()
	cfg.FailureThreshold = threshold
	cfg.ResetTimeout = 10 * time.Second
	if clock != nil {
		cfg.Now = clock.Now
	}
	b, err := breaker.New("graph", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustAdmit(t *testing.T, g *guard.Guard) spi.Permit {
	t.Helper()
	p, err := g.Admit(context.Background())
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	return p
}

// The slow-versus-dead rule, on a fake clock: timeouts while no other call
// succeeded count against the breaker (once per stall, see below); shed
// calls and neutral outcomes never do.
func TestSlowIsNotDead(t *testing.T) {
	t.Run("timeouts with no success beside them trip", func(t *testing.T) {
		clock := &fakeClock{now: time.Unix(1e9, 0)}
		b := newBreaker(t, clock, 2)
		lim := &fakeLimiter{limit: 4}
		g := guard.New("graph", guard.Config{Circuit: guard.NewCircuit(b, guard.ProbeConfig{}), Limiter: lim, Now: clock.Now})
		for range 2 {
			p := mustAdmit(t, g)
			clock.Advance(time.Second)
			p.Done(spi.OutcomeTimeout, time.Second)
			clock.Advance(time.Millisecond)
		}
		if b.State() != breaker.Open {
			t.Fatalf("two timeouts one after the other: breaker %v, want open", b.State())
		}
		if s := g.Snapshot(); s.TimeoutsCounted != 2 || s.TimeoutsBusy != 0 || s.TimeoutsSameStall != 0 {
			t.Fatalf("snapshot %+v", s)
		}
		if lim.recorded != 2 {
			t.Fatalf("timeouts must feed the limit as slow samples: recorded %d", lim.recorded)
		}
		if _, err := g.Admit(context.Background()); !errors.Is(err, spi.ErrCircuitOpen) {
			t.Fatalf("Admit while open = %v, want ErrCircuitOpen", err)
		}
		if err := g.Check(); !errors.Is(err, spi.ErrCircuitOpen) {
			t.Fatalf("Check while open = %v", err)
		}
	})
	t.Run("shed and neutral never count", func(t *testing.T) {
		b := newBreaker(t, nil, 1)
		lim := &fakeLimiter{limit: 0}
		g := guard.New("graph", guard.Config{Circuit: guard.NewCircuit(b, guard.ProbeConfig{}), Limiter: lim})
		for range 10 {
			if _, err := g.Admit(context.Background()); !errors.Is(err, spi.ErrShed) {
				t.Fatalf("Admit = %v", err)
			}
		}
		lim.limit = 1
		mustAdmit(t, g).Done(spi.OutcomeNeutral, 0)
		if s := b.Snapshot(); s.State != breaker.Closed || s.FailureCount != 0 {
			t.Fatalf("breaker %+v after shed and neutral calls", s)
		}
		mustAdmit(t, g).Done(spi.OutcomeFailure, 0)
		if b.State() != breaker.Open {
			t.Fatal("a failure did not count")
		}
	})
}

func TestAdmitCancelled(t *testing.T) {
	g := guard.New("keyword", guard.Config{Limiter: &fakeLimiter{limit: 1}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Admit(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Admit with a done ctx = %v", err)
	}
}

func TestDoClassifies(t *testing.T) {
	b := newBreaker(t, nil, 1)
	g := guard.New("embedder", guard.Config{Circuit: guard.NewCircuit(b, guard.ProbeConfig{})})
	for _, err := range []error{spi.ErrInvalidQuery, context.Canceled} {
		if _, got := guard.Do(context.Background(), g, func(context.Context) (int, error) { return 0, err }); !errors.Is(got, err) {
			t.Fatalf("Do returned %v, want %v", got, err)
		}
	}
	if b.State() != breaker.Closed {
		t.Fatalf("invalid or cancelled calls tripped the breaker")
	}
	v, err := guard.Do(context.Background(), g, func(context.Context) (int, error) { return 7, nil })
	if v != 7 || err != nil {
		t.Fatalf("Do = %d, %v", v, err)
	}
	_, _ = guard.Do(context.Background(), g, func(context.Context) (int, error) { return 0, spi.ErrUnavailable })
	if b.State() != breaker.Open {
		t.Fatal("an unavailable backend did not count")
	}
	if _, err := guard.Do(context.Background(), g, func(context.Context) (int, error) { return 1, nil }); !errors.Is(err, spi.ErrCircuitOpen) {
		t.Fatalf("Do while open = %v", err)
	}
}

func TestCollector(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	lim := &fakeLimiter{limit: 2}
	g := guard.New("keyword", guard.Config{Limiter: lim, Now: clock.Now})
	slow, fast := mustAdmit(t, g), mustAdmit(t, g)
	if _, err := g.Admit(context.Background()); !errors.Is(err, spi.ErrShed) {
		t.Fatal(err)
	}
	fast.Done(spi.OutcomeSuccess, time.Millisecond)
	clock.Advance(time.Second)
	slow.Done(spi.OutcomeTimeout, time.Second) // busy: fast succeeded meanwhile
	a, b := mustAdmit(t, g), mustAdmit(t, g)
	clock.Advance(time.Second)
	a.Done(spi.OutcomeTimeout, time.Second) // counted
	b.Done(spi.OutcomeTimeout, time.Second) // the same stall
	reg := prometheus.NewRegistry()
	reg.MustRegister(guard.NewCollector(func() []*guard.Guard { return []*guard.Guard{g} }))
	want := `
# HELP ragd_guard_shed_total Calls refused because the source was at its concurrency limit.
# TYPE ragd_guard_shed_total counter
ragd_guard_shed_total{source="keyword"} 1
# HELP ragd_guard_timeouts_total Per-source timeouts by verdict: counted against the breaker, busy (another call to the source succeeded while it ran) or same_stall (it began before the last counted timeout ended).
# TYPE ragd_guard_timeouts_total counter
ragd_guard_timeouts_total{source="keyword",verdict="busy"} 1
ragd_guard_timeouts_total{source="keyword",verdict="counted"} 1
ragd_guard_timeouts_total{source="keyword",verdict="same_stall"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ragd_guard_shed_total", "ragd_guard_timeouts_total"); err != nil {
		t.Fatal(err)
	}
}

// Issue 18 item 1: a hung source under more traffic than its limit. Every
// call takes a slot until its deadline, the slots run out, the rest are
// shed; nothing succeeds. Such timeouts are evidence (no other call
// succeeded while they ran), once per stall: the breaker opens after
// FailureThreshold waves (fake clock).
func TestHungSourceAtItsLimitTrips(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	b := newBreaker(t, clock, 3)
	g := guard.New("vector", guard.Config{Circuit: guard.NewCircuit(b, guard.ProbeConfig{}), Limiter: &fakeLimiter{limit: 2}, Now: clock.Now})
	for wave := range 3 {
		if b.State() != breaker.Closed {
			t.Fatalf("wave %d: breaker %v before its timeouts", wave, b.State())
		}
		first, last := mustAdmit(t, g), mustAdmit(t, g) // the second takes the last slot
		if _, err := g.Admit(context.Background()); !errors.Is(err, spi.ErrShed) {
			t.Fatalf("wave %d: Admit at the limit = %v, want shed", wave, err)
		}
		clock.Advance(800 * time.Millisecond) // both hit their deadline
		first.Done(spi.OutcomeTimeout, 800*time.Millisecond)
		last.Done(spi.OutcomeTimeout, 800*time.Millisecond)
		clock.Advance(time.Millisecond)
	}
	if b.State() != breaker.Open {
		t.Fatalf("a hung source at its limit, 3 waves of timeouts with calls shed: breaker %v, want open", b.State())
	}
	if s := g.Snapshot(); s.TimeoutsCounted != 3 {
		t.Fatalf("snapshot %+v: want 3 counted (one per wave)", s)
	}
}

// A timeout while another call to the source succeeded is an overloaded,
// live source: it does not count.
func TestTimeoutBesideSuccessIsNeutral(t *testing.T) {
	b := newBreaker(t, nil, 1)
	g := guard.New("graph", guard.Config{Circuit: guard.NewCircuit(b, guard.ProbeConfig{}), Limiter: &fakeLimiter{limit: 8}})
	slow, fast := mustAdmit(t, g), mustAdmit(t, g)
	fast.Done(spi.OutcomeSuccess, time.Millisecond)
	slow.Done(spi.OutcomeTimeout, time.Second)
	if b.State() != breaker.Closed {
		t.Fatalf("a timeout beside a success tripped the breaker (threshold 1)")
	}
	if s := g.Snapshot(); s.TimeoutsBusy != 1 || s.TimeoutsCounted != 0 {
		t.Fatalf("snapshot %+v", s)
	}
}

// Calls cut off together by one stall overlap and count once; a hang keeps
// failing call after call and trips (fake clock).
func TestOverlappingTimeoutsCountOnce(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	b := newBreaker(t, clock, 2)
	g := guard.New("graph", guard.Config{Circuit: guard.NewCircuit(b, guard.ProbeConfig{}), Limiter: &fakeLimiter{limit: 16}, Now: clock.Now})
	stalled := make([]spi.Permit, 6)
	for i := range stalled {
		stalled[i] = mustAdmit(t, g)
	}
	clock.Advance(800 * time.Millisecond) // one stall: all six time out together
	for _, p := range stalled {
		p.Done(spi.OutcomeTimeout, 800*time.Millisecond)
	}
	if s := g.Snapshot(); b.State() != breaker.Closed || s.TimeoutsCounted != 1 || s.TimeoutsSameStall != 5 {
		t.Fatalf("one stall: breaker %v, snapshot %+v; want closed, 1 counted, 5 not", b.State(), s)
	}
	// Still hung: the next call, begun after that, times out too.
	clock.Advance(time.Millisecond)
	p := mustAdmit(t, g)
	clock.Advance(800 * time.Millisecond)
	p.Done(spi.OutcomeTimeout, 800*time.Millisecond)
	if b.State() != breaker.Open {
		t.Fatalf("a second, later timeout: breaker %v, want open", b.State())
	}
}

// An answer that never reached the backend (spi.ErrNothingToSearch) is no
// evidence either way: through Do it neither fails the breaker nor counts
// as the success that would excuse a concurrent timeout as busy or reset
// the failure count.
func TestNothingToSearchIsNeutral(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	b := newBreaker(t, clock, 2)
	lim := &fakeLimiter{limit: 8}
	g := guard.New("graph", guard.Config{Circuit: guard.NewCircuit(b, guard.ProbeConfig{}), Limiter: lim, Now: clock.Now})
	nothing := func(context.Context) ([]spi.Ref, error) {
		return nil, fmt.Errorf("graph: match entities: %w", spi.ErrNothingToSearch)
	}
	hung := mustAdmit(t, g)
	if _, err := guard.Do(context.Background(), g, nothing); !errors.Is(err, spi.ErrNothingToSearch) {
		t.Fatalf("Do = %v", err)
	}
	clock.Advance(time.Second)
	hung.Done(spi.OutcomeTimeout, time.Second)
	if s := g.Snapshot(); s.TimeoutsCounted != 1 || s.TimeoutsBusy != 0 {
		t.Fatalf("snapshot %+v: the timeout beside an answer that never reached the backend must count", s)
	}
	if _, err := guard.Do(context.Background(), g, nothing); !errors.Is(err, spi.ErrNothingToSearch) {
		t.Fatalf("Do = %v", err)
	}
	if s := b.Snapshot(); s.State != breaker.Closed || s.FailureCount != 1 {
		t.Fatalf("breaker %+v: want closed with the timeout still counted", s)
	}
	clock.Advance(time.Millisecond)
	p := mustAdmit(t, g)
	clock.Advance(time.Second)
	p.Done(spi.OutcomeTimeout, time.Second)
	if b.State() != breaker.Open {
		t.Fatalf("two timeouts with only nothing-to-search answers between: breaker %v, want open", b.State())
	}
	if lim.dropped != 2 || lim.recorded != 2 {
		t.Fatalf("limit samples: %d recorded, %d dropped; want the two timeouts recorded, the two neutral answers dropped", lim.recorded, lim.dropped)
	}
}

// embedFunc is an spi.Embedder of dimension dim answering with fn.
type embedFunc struct {
	dim int
	fn  func(texts []string) [][]float32
}

func (e embedFunc) Embed(_ context.Context, texts []string) ([][]float32, error) {
	return e.fn(texts), nil
}
func (e embedFunc) Dimension() int { return e.dim }

// TestEmbedderBadAnswersCount is issue 29 item 5: an embedder that answers
// without an error but with vectors no store can hold (NaN from a model
// whose weights hold NaN, Inf, the wrong dimension or count) failed, and
// the breaker counts it; it had stayed closed after 6 such answers at
// threshold 5 because the check sat in the write path, after the guard.
func TestEmbedderBadAnswersCount(t *testing.T) {
	nan := float32(math.NaN())
	for what, answer := range map[string]func(texts []string) [][]float32{
		"NaN":            func(texts []string) [][]float32 { return [][]float32{{1, nan, 0, 0}} },
		"Inf":            func(texts []string) [][]float32 { return [][]float32{{float32(math.Inf(-1)), 1, 0, 0}} },
		"wrong length":   func(texts []string) [][]float32 { return [][]float32{{1, 0, 0}} },
		"too few":        func(texts []string) [][]float32 { return nil },
		"one per text+1": func(texts []string) [][]float32 { return [][]float32{{1, 0, 0, 0}, {0, 1, 0, 0}} },
	} {
		t.Run(what, func(t *testing.T) {
			b := newBreaker(t, nil, 5)
			g := guard.New("document_embedder", guard.Config{Circuit: guard.NewCircuit(b, guard.ProbeConfig{})})
			e := guard.Embedder(embedFunc{dim: 4, fn: answer}, g)
			for i := range 5 {
				if _, err := e.Embed(context.Background(), []string{"x"}); !errors.Is(err, spi.ErrUnavailable) {
					t.Fatalf("answer %d: Embed = %v, want an error matching spi.ErrUnavailable", i+1, err)
				}
			}
			if _, err := e.Embed(context.Background(), []string{"x"}); !errors.Is(err, spi.ErrCircuitOpen) {
				t.Fatalf("sixth call: %v, want the circuit open (breaker %+v)", err, b.Snapshot())
			}
		})
	}
	b := newBreaker(t, nil, 1)
	g := guard.New("document_embedder", guard.Config{Circuit: guard.NewCircuit(b, guard.ProbeConfig{})})
	e := guard.Embedder(embedFunc{dim: 2, fn: func(texts []string) [][]float32 { return [][]float32{{0, 1}, {1, 0}} }}, g)
	if v, err := e.Embed(context.Background(), []string{"a", "b"}); err != nil || len(v) != 2 || b.State() != breaker.Closed {
		t.Fatalf("a good answer: %v, %v, breaker %v", v, err, b.State())
	}
}
