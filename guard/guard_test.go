package guard_test

import (
	"context"
	"errors"
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

// The slow-versus-dead rule, on a fake clock: timeouts of an unsaturated
// source count against its breaker; timeouts of calls that took the last
// slot, or that ran while other calls were shed, do not; shed calls and
// neutral outcomes never do.
func TestSlowIsNotDead(t *testing.T) {
	t.Run("unsaturated timeouts trip", func(t *testing.T) {
		clock := &fakeClock{now: time.Unix(1e9, 0)}
		b := newBreaker(t, clock, 2)
		lim := &fakeLimiter{limit: 4}
		g := guard.New("graph", guard.Config{Circuit: guard.NewCircuit(b, guard.ProbeConfig{}), Limiter: lim})
		for range 2 {
			mustAdmit(t, g).Done(spi.OutcomeTimeout, time.Second)
		}
		if b.State() != breaker.Open {
			t.Fatalf("two timeouts of an unsaturated source: breaker %v, want open", b.State())
		}
		if s := g.Snapshot(); s.TimeoutsCounted != 2 || s.TimeoutsSaturated != 0 {
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
	t.Run("last slot is saturated", func(t *testing.T) {
		b := newBreaker(t, nil, 2)
		lim := &fakeLimiter{limit: 2}
		g := guard.New("graph", guard.Config{Circuit: guard.NewCircuit(b, guard.ProbeConfig{}), Limiter: lim})
		for range 3 {
			first, last := mustAdmit(t, g), mustAdmit(t, g) // the second takes the last slot
			last.Done(spi.OutcomeTimeout, time.Second)
			first.Done(spi.OutcomeSuccess, time.Millisecond)
		}
		if b.State() != breaker.Closed {
			t.Fatalf("timeouts of calls at the limit tripped the breaker: %v", b.State())
		}
		if s := g.Snapshot(); s.TimeoutsSaturated != 3 || s.TimeoutsCounted != 0 {
			t.Fatalf("snapshot %+v", s)
		}
	})
	t.Run("shed while in flight", func(t *testing.T) {
		b := newBreaker(t, nil, 1)
		lim := &fakeLimiter{limit: 2}
		g := guard.New("graph", guard.Config{Circuit: guard.NewCircuit(b, guard.ProbeConfig{}), Limiter: lim})
		slow := mustAdmit(t, g)                 // 1 of 2: unsaturated at admission
		other := mustAdmit(t, g)                // 2 of 2
		_, err := g.Admit(context.Background()) // shed
		if !errors.Is(err, spi.ErrShed) || !errors.Is(err, spi.ErrUnavailable) {
			t.Fatalf("Admit at the limit = %v, want ErrShed", err)
		}
		slow.Done(spi.OutcomeTimeout, time.Second)
		other.Done(spi.OutcomeNeutral, 0)
		if b.State() != breaker.Closed {
			t.Fatalf("a timeout while calls were shed tripped the breaker (threshold 1): %v", b.State())
		}
		if s := g.Snapshot(); s.ShedTotal != 1 {
			t.Fatalf("shed total %d, want 1", s.ShedTotal)
		}
		if lim.dropped != 1 || lim.inflight != 0 {
			t.Fatalf("limiter: dropped %d inflight %d", lim.dropped, lim.inflight)
		}
		// Unsaturated again: the next timeout counts.
		mustAdmit(t, g).Done(spi.OutcomeTimeout, time.Second)
		if b.State() != breaker.Open {
			t.Fatalf("an unsaturated timeout did not count: %v", b.State())
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
	lim := &fakeLimiter{limit: 1}
	g := guard.New("keyword", guard.Config{Limiter: lim})
	p := mustAdmit(t, g)
	if _, err := g.Admit(context.Background()); !errors.Is(err, spi.ErrShed) {
		t.Fatal(err)
	}
	p.Done(spi.OutcomeTimeout, time.Second) // saturated: not counted
	reg := prometheus.NewRegistry()
	reg.MustRegister(guard.NewCollector(func() []*guard.Guard { return []*guard.Guard{g} }))
	want := `
# HELP ragd_guard_shed_total Calls refused because the source was at its concurrency limit.
# TYPE ragd_guard_shed_total counter
ragd_guard_shed_total{source="keyword"} 1
# HELP ragd_guard_timeouts_total Per-source timeouts, by whether they counted against the breaker (counted=false: the source was saturated).
# TYPE ragd_guard_timeouts_total counter
ragd_guard_timeouts_total{counted="false",source="keyword"} 1
ragd_guard_timeouts_total{counted="true",source="keyword"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ragd_guard_shed_total", "ragd_guard_timeouts_total"); err != nil {
		t.Fatal(err)
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
	if s := g.Snapshot(); s.TimeoutsSaturated != 1 {
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
	if s := g.Snapshot(); b.State() != breaker.Closed || s.TimeoutsCounted != 1 || s.TimeoutsSaturated != 5 {
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
