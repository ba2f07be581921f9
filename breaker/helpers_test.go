package breaker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/breaker"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	errBackend    = errors.New("backend: connection refused")
	errBadRequest = errors.New("backend: bad request")
)

// fakeClock is the injected Config.Now; tests move it by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// recorder collects transitions.
type recorder struct {
	mu sync.Mutex
	ts []breaker.Transition
}

func (r *recorder) record(t breaker.Transition) {
	r.mu.Lock()
	r.ts = append(r.ts, t)
	r.mu.Unlock()
}

func (r *recorder) all() []breaker.Transition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]breaker.Transition(nil), r.ts...)
}

// walk renders the recorded transitions as "from>to" steps.
func (r *recorder) walk() []string {
	var out []string
	for _, t := range r.all() {
		out = append(out, t.From.String()+">"+t.To.String())
	}
	return out
}

// testConfig is DefaultConfig on clock with a small threshold.
func testConfig(clock *fakeClock, threshold int) breaker.Config {
	cfg := breaker.DefaultConfig()
	cfg.FailureThreshold = threshold
	cfg.ResetTimeout = 10 * time.Second
	cfg.Now = clock.Now
	return cfg
}

func mustNew(tb testing.TB, name string, cfg breaker.Config) *breaker.Breaker {
	tb.Helper()
	b, err := breaker.New(name, cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return b
}

func callFail(b *breaker.Breaker) error {
	return b.Call(context.Background(), func(context.Context) error { return errBackend })
}

func callOK(b *breaker.Breaker) error {
	return b.Call(context.Background(), func(context.Context) error { return nil })
}

// trip fails calls until b opens.
func trip(tb testing.TB, b *breaker.Breaker) {
	tb.Helper()
	for range b.Snapshot().FailureThreshold {
		if err := callFail(b); !errors.Is(err, errBackend) {
			tb.Fatalf("call while closed: %v, want the backend's error", err)
		}
	}
	if s := b.State(); s != breaker.Open {
		tb.Fatalf("state after %d failures = %v, want open", b.Snapshot().FailureThreshold, s)
	}
}

func wantState(tb testing.TB, b *breaker.Breaker, want breaker.State) {
	tb.Helper()
	if got := b.State(); got != want {
		tb.Fatalf("State() = %v, want %v", got, want)
	}
}
