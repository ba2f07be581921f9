package vector_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/vector"
	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/guard"
	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/spi"
)

// failFast bounds how long a call may take against a stopped server.
const failFast = 5 * time.Second

// The server stops mid-test: every call fails fast with ErrUnavailable,
// Health reports down, and once the server is back the same Backend works
// again without being reopened.
func TestServerStopped(t *testing.T) {
	srv := testenv.DedicatedPostgres(t)
	b := mustOpen(t, vector.Config{DSN: srv.DSN, Dimension: 3, ConnectTimeout: time.Second})
	ctx := context.Background()
	doc := spi.Document{ID: "a", Vector: []float32{1, 2, 3}}
	if err := b.Upsert(ctx, []spi.Document{doc}); err != nil {
		t.Fatal(err)
	}
	req := spi.VectorRequest{Vector: []float32{1, 2, 3}, K: 1}
	if _, err := b.Retrieve(ctx, req); err != nil {
		t.Fatal(err)
	}

	stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := srv.Stop(stopCtx); err != nil {
		t.Fatalf("stop server: %v", err)
	}
	calls := map[string]func() error{
		"Retrieve": func() error { _, err := b.Retrieve(ctx, req); return err },
		"Hydrate":  func() error { _, _, err := b.Hydrate(ctx, []string{"a"}); return err },
		"Upsert":   func() error { return b.Upsert(ctx, []spi.Document{doc}) },
		"Delete":   func() error { return b.Delete(ctx, []string{"zzz"}) },
		"Scan":     func() error { return b.Scan(ctx, func(spi.Document) error { return nil }) },
	}
	var slowest time.Duration
	for round := range 2 { // the first round meets pooled connections, the second new dials
		for name, call := range calls {
			start := time.Now()
			err := call()
			d := time.Since(start)
			slowest = max(slowest, d)
			if d > failFast {
				t.Errorf("round %d: %s took %v against a stopped server", round, name, d)
			}
			if !errors.Is(err, spi.ErrUnavailable) {
				t.Errorf("round %d: %s against a stopped server: %v, want ErrUnavailable", round, name, err)
			}
		}
	}
	t.Logf("slowest call against the stopped server: %v", slowest)
	start := time.Now()
	if h := b.Health(ctx); h.Status != spi.StatusDown || h.Detail == "" {
		t.Errorf("Health with the server stopped = %+v, want down with a reason", h)
	}
	if d := time.Since(start); d > failFast {
		t.Errorf("Health took %v against a stopped server", d)
	}

	if err := srv.Start(stopCtx); err != nil {
		t.Fatalf("start server: %v", err)
	}
	refs, err := b.Retrieve(ctx, req)
	if err != nil || len(refs) != 1 || refs[0].ID != "a" {
		t.Fatalf("Retrieve after the server is back = %v, %v", refs, err)
	}
	if h := b.Health(ctx); h.Status != spi.StatusUp {
		t.Errorf("Health after the server is back = %+v", h)
	}
}

// Wrapped in a circuit breaker, a stopped server trips it after
// FailureThreshold failures; the wrapper then rejects without calling the
// server and its Health reports down. After the reset timeout and a restart
// one trial closes it again.
func TestServerStoppedTripsBreaker(t *testing.T) {
	srv := testenv.DedicatedPostgres(t)
	b := mustOpen(t, vector.Config{DSN: srv.DSN, Dimension: 3, ConnectTimeout: time.Second})
	ctx := context.Background()
	if err := b.Upsert(ctx, []spi.Document{{ID: "a", Vector: []float32{1, 2, 3}}}); err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64 // the breaker's clock, in nanoseconds
	clock.Store(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	cfg := breaker.DefaultConfig()
	cfg.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	br, err := breaker.New("vector", cfg)
	if err != nil {
		t.Fatal(err)
	}
	circuit := guard.NewCircuit(br, guard.ProbeConfig{})
	g := guard.New("vector", guard.Config{Circuit: circuit})
	req := spi.VectorRequest{Vector: []float32{1, 2, 3}, K: 1}
	var calls atomic.Int64 // calls that reach the backend
	retrieve := func(ctx context.Context) ([]spi.Ref, error) {
		return guard.Do(ctx, g, func(ctx context.Context) ([]spi.Ref, error) {
			calls.Add(1)
			return b.Retrieve(ctx, req)
		})
	}
	if _, err := retrieve(ctx); err != nil {
		t.Fatal(err)
	}

	stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := srv.Stop(stopCtx); err != nil {
		t.Fatalf("stop server: %v", err)
	}
	for i := range cfg.FailureThreshold {
		_, err := retrieve(ctx)
		if !errors.Is(err, spi.ErrUnavailable) || errors.Is(err, spi.ErrCircuitOpen) {
			t.Fatalf("failure %d: %v, want the backend's ErrUnavailable", i+1, err)
		}
	}
	if br.State() != breaker.Open {
		t.Fatalf("breaker %v after %d failures, want open", br.State(), cfg.FailureThreshold)
	}
	before := calls.Load()
	_, err = retrieve(ctx)
	var re *spi.RejectedError
	if !errors.As(err, &re) || !errors.Is(err, spi.ErrCircuitOpen) || !errors.Is(err, spi.ErrUnavailable) {
		t.Fatalf("Retrieve with the breaker open: %v, want *spi.RejectedError matching ErrCircuitOpen and ErrUnavailable", err)
	}
	if n := calls.Load() - before; n != 0 {
		t.Errorf("the open breaker passed %d call(s) to the backend, want it to reject without calling", n)
	}
	if h := guard.Health(b, circuit).Health(ctx); h.Status != spi.StatusDown {
		t.Errorf("Health with the breaker open = %+v, want down", h)
	}

	if err := srv.Start(stopCtx); err != nil {
		t.Fatalf("start server: %v", err)
	}
	clock.Add(int64(cfg.ResetTimeout + time.Second))
	refs, err := retrieve(ctx)
	if err != nil || len(refs) != 1 {
		t.Fatalf("trial after restart = %v, %v", refs, err)
	}
	if br.State() != breaker.Closed {
		t.Errorf("breaker %v after a successful trial, want closed", br.State())
	}
	if h := guard.Health(b, circuit).Health(ctx); h.Status != spi.StatusUp {
		t.Errorf("Health after recovery = %+v, want up", h)
	}
}
