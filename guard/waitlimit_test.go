package guard_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/guard"
	"github.com/ragd/ragd/spi"
)

// serviceTime is a settable ServiceTime.
type serviceTime struct{ ns atomic.Int64 }

func (s *serviceTime) get() time.Duration  { return time.Duration(s.ns.Load()) }
func (s *serviceTime) set(d time.Duration) { s.ns.Store(int64(d)) }

func newWaitLimit(t *testing.T, st *serviceTime, clock *fakeClock, min, max int) guard.Limiter {
	t.Helper()
	cfg := guard.WaitConfig{Deadline: time.Second, ServiceTime: st.get, Min: min, Max: max}
	if clock != nil {
		cfg.Now = clock.Now
	}
	l, err := guard.NewWaitLimit(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// deadlineCtx has a deadline on the fake clock (and never ends by itself).
type deadlineCtx struct {
	context.Context
	d time.Time
}

func (c deadlineCtx) Deadline() (time.Time, bool) { return c.d, true }

// admitN admits calls until one is refused and returns the admitted.
func admitN(t *testing.T, g *guard.Guard, ctx context.Context) []spi.Permit {
	t.Helper()
	var ps []spi.Permit
	for {
		p, err := g.Admit(ctx)
		if errors.Is(err, spi.ErrShed) {
			return ps
		}
		if err != nil {
			t.Fatalf("Admit: %v", err)
		}
		ps = append(ps, p)
		if len(ps) > 10000 {
			t.Fatal("no limit")
		}
	}
}

// The wait limit admits while (in flight + 1) × service time fits 80 % of
// the deadline, the sooner of the source's and the call's own.
func TestWaitLimitAdmitsWhatFits(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	st := &serviceTime{}
	st.set(10 * time.Millisecond)
	g := guard.New("embedder", guard.Config{Limiter: newWaitLimit(t, st, clock, 2, 1000), Now: clock.Now})
	ps := admitN(t, g, context.Background())
	if len(ps) != 80 {
		t.Fatalf("admitted %d at 10ms a call within 80%% of 1s, want 80", len(ps))
	}
	if s := g.Snapshot(); s.Limit != 80 || s.Inflight != 80 || s.ShedTotal != 1 {
		t.Fatalf("snapshot %+v", s)
	}
	ps[0].Done(spi.OutcomeSuccess, 0)
	ps = append(ps[1:], mustAdmit(t, g)) // a call left: one more fits
	// Batching got better: more fit.
	st.set(5 * time.Millisecond)
	ps = append(ps, admitN(t, g, context.Background())...)
	if len(ps) != 160 {
		t.Fatalf("admitted %d at 5ms a call, want 160", len(ps))
	}
	for _, p := range ps {
		p.Done(spi.OutcomeSuccess, 0)
	}
	// A query with 100ms left of its own budget: 16 fit.
	ctx := deadlineCtx{context.Background(), clock.Now().Add(100 * time.Millisecond)}
	if ps = admitN(t, g, ctx); len(ps) != 16 {
		t.Fatalf("admitted %d with 100ms left, want 16", len(ps))
	}
	for _, p := range ps {
		p.Done(spi.OutcomeSuccess, 0)
	}
}

// Min calls always go (a lone query, a source not measured yet, a
// service time past the deadline); Max bounds the queue whatever the
// estimate.
func TestWaitLimitMinMax(t *testing.T) {
	st := &serviceTime{}
	g := guard.New("embedder", guard.Config{Limiter: newWaitLimit(t, st, nil, 2, 50)})
	for _, c := range []struct {
		st   time.Duration
		want int
	}{{0, 2}, {5 * time.Second, 2}, {time.Microsecond, 50}} {
		st.set(c.st)
		ps := admitN(t, g, context.Background())
		if len(ps) != c.want {
			t.Fatalf("service time %v: admitted %d, want %d", c.st, len(ps), c.want)
		}
		for _, p := range ps {
			p.Done(spi.OutcomeNeutral, 0)
		}
	}
	if _, err := guard.NewWaitLimit(guard.WaitConfig{Deadline: time.Second, ServiceTime: st.get, Min: 3, Max: 2}); err == nil {
		t.Fatal("max below min accepted")
	}
}

// Shed vs hang: a model that hangs after it was measured keeps its last
// service time, so the wait limit admits what would have fitted and sheds
// the rest. The admitted calls time out at the deadline with no success
// beside them and leave, making room for the next wave, whose timeouts are
// new evidence: the breaker opens after FailureThreshold waves, the shed
// calls counting nothing (fake clock).
func TestHungModelBehindWaitLimitTrips(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	b := newBreaker(t, clock, 3)
	st := &serviceTime{}
	st.set(100 * time.Millisecond)
	g := guard.New("embedder", guard.Config{Circuit: guard.NewCircuit(b, guard.ProbeConfig{}),
		Limiter: newWaitLimit(t, st, clock, 2, 1000), Now: clock.Now})
	for wave := range 3 {
		if b.State() != breaker.Closed {
			t.Fatalf("wave %d: breaker %v before its timeouts", wave, b.State())
		}
		ps := admitN(t, g, context.Background())
		if len(ps) != 8 {
			t.Fatalf("wave %d: admitted %d, want 8 (800ms of 100ms calls)", wave, len(ps))
		}
		for range 20 { // the open-loop arrivals meanwhile: shed
			if _, err := g.Admit(context.Background()); !errors.Is(err, spi.ErrShed) {
				t.Fatalf("wave %d: Admit behind the hung model = %v, want shed", wave, err)
			}
		}
		clock.Advance(time.Second) // all reach their deadline
		for _, p := range ps {
			p.Done(spi.OutcomeTimeout, time.Second)
		}
		clock.Advance(time.Millisecond)
	}
	if b.State() != breaker.Open {
		t.Fatalf("a hung model behind the wait limit, 3 waves of timeouts: breaker %v, want open", b.State())
	}
	if s := g.Snapshot(); s.TimeoutsCounted != 3 || s.TimeoutsSameStall != 21 || s.ShedTotal != 63 {
		t.Fatalf("snapshot %+v: want 3 timeouts counted (one a wave), 21 of the same stall, 63 shed", s)
	}
}
