package breaker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ragd/ragd/breaker"
)

func Example() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := breaker.DefaultConfig()
	cfg.FailureThreshold = 2
	cfg.Now = func() time.Time { return now } // a fake clock: no sleeping
	cfg.OnStateChange = func(t breaker.Transition) {
		fmt.Printf("%s: %v -> %v (%s)\n", t.Event(), t.From, t.To, t.Reason)
	}
	b, err := breaker.New("vector", cfg)
	if err != nil {
		panic(err)
	}

	down := errors.New("connection refused")
	for range 2 {
		err = b.Call(context.Background(), func(context.Context) error { return down })
		fmt.Println("call:", err)
	}
	err = b.Call(context.Background(), func(context.Context) error { return nil })
	fmt.Println("call:", err)

	now = now.Add(cfg.ResetTimeout)
	fmt.Println("state after the cooldown:", b.State())
	err = b.Call(context.Background(), func(context.Context) error { return nil })
	fmt.Println("trial:", err, "state:", b.State())
	// Output:
	// call: connection refused
	// breaker.opened: closed -> open (failure_threshold)
	// call: connection refused
	// call: breaker: circuit open: vector (retry in 30s): tripped by: connection refused
	// state after the cooldown: half_open
	// breaker.half_opened: open -> half_open (cooldown_elapsed)
	// breaker.closed: half_open -> closed (trial_success)
	// trial: <nil> state: closed
}

func ExampleBreaker_Allow() {
	b, _ := breaker.New("embedder", breaker.DefaultConfig())

	done, err := b.Allow()
	if err != nil {
		fmt.Println("skipped:", err)
		return
	}
	work := func() error { return nil } // the caller's own protected work
	done(work())
	fmt.Println(b.State())
	// Output: closed
}

func ExampleOpenError() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := breaker.DefaultConfig()
	cfg.FailureThreshold = 1
	cfg.Now = func() time.Time { return now }
	b, _ := breaker.New("graph", cfg)
	_ = b.Call(context.Background(), func(context.Context) error { return errors.New("timeout") })

	now = now.Add(10 * time.Second)
	err := b.Call(context.Background(), func(context.Context) error { return nil })
	var oe *breaker.OpenError
	if errors.As(err, &oe) {
		fmt.Println("retry after:", oe.RetryAfter, "cause:", oe.Cause)
	}
	fmt.Println(errors.Is(err, breaker.ErrOpen))
	// Output:
	// retry after: 20s cause: timeout
	// true
}

func ExampleIgnoreErrors() {
	cfg := breaker.DefaultConfig()
	cfg.FailureThreshold = 1
	errInvalid := errors.New("invalid query")
	cfg.ShouldCount = breaker.IgnoreErrors(errInvalid)
	b, _ := breaker.New("vector", cfg)

	bad := fmt.Errorf("vector: %w: dimension 3, want 384", errInvalid)
	_ = b.Call(context.Background(), func(context.Context) error { return bad })
	fmt.Println(b.State()) // a bad request says nothing about the backend
	// Output: closed
}

func ExampleRegistry() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := breaker.DefaultConfig()
	cfg.Now = func() time.Time { return now }
	cfg.OnStateChange = func(t breaker.Transition) { // sees every breaker
		fmt.Println("event:", t.Name, t.Event())
	}
	reg := breaker.NewRegistry(cfg)
	graph := breaker.DefaultConfig()
	graph.FailureThreshold = 1
	if err := reg.Override("graph", graph); err != nil {
		panic(err)
	}

	reg.Get("vector")
	_ = reg.Get("graph").Call(context.Background(), func(context.Context) error { return errors.New("down") })

	enc := json.NewEncoder(os.Stdout)
	for _, s := range reg.Snapshot() {
		_ = enc.Encode(s)
	}
	if _, err := reg.ForceClose("keyword"); errors.Is(err, breaker.ErrUnknownBreaker) {
		fmt.Println(err)
	}
	// Output:
	// event: graph breaker.opened
	// {"name":"graph","state":"open","failure_count":1,"failure_threshold":1,"opened_total":1,"reset_timeout_ms":30000,"retry_in_ms":30000,"since":"2026-01-01T00:00:00Z"}
	// {"name":"vector","state":"closed","failure_count":0,"failure_threshold":5,"opened_total":0,"reset_timeout_ms":30000,"retry_in_ms":0,"since":"2026-01-01T00:00:00Z"}
	// breaker: unknown breaker: "keyword"
}

func ExampleBreaker_Admit() {
	b, _ := breaker.New("keyword", breaker.Config{FailureThreshold: 2, ResetTimeout: time.Minute, HalfOpenMaxCalls: 1, SuccessThreshold: 1})
	// The caller classifies each outcome itself: a timeout it knows was
	// caused by overload is neutral, a refused connection is a failure.
	for _, refused := range []bool{false, true, true} {
		t, err := b.Admit()
		if err != nil {
			fmt.Println(err)
			continue
		}
		if refused {
			t.Failure(errors.New("connection refused"))
		} else {
			t.Neutral()
		}
	}
	_, err := b.Admit()
	fmt.Println(b.State(), errors.Is(err, breaker.ErrOpen))
	// Output:
	// open true
}
