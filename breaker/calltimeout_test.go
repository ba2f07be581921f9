package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ragd/ragd/breaker"
)

// slowCall blocks until ctx ends and reports it the way ragd's backends
// do: wrapping ctx's error.
func slowCall(ctx context.Context) error {
	<-ctx.Done()
	return fmt.Errorf("keyword: retrieve: %w", ctx.Err())
}

// callTimeoutCause is how a caller such as the retriever marks its
// per-call deadline.
type callTimeoutCause struct{}

func (callTimeoutCause) Error() string { return "deadline of 10ms exceeded" }
func (callTimeoutCause) Unwrap() []error {
	return []error{context.DeadlineExceeded, breaker.ErrCallTimeout}
}

func TestCallTimeoutCounts(t *testing.T) {
	cases := []struct {
		name  string
		ctx   func() (context.Context, context.CancelFunc)
		trips bool
	}{
		{"per-call deadline marked ErrCallTimeout", func() (context.Context, context.CancelFunc) {
			return context.WithTimeoutCause(context.Background(), 10*time.Millisecond, callTimeoutCause{})
		}, true},
		{"plain caller deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 10*time.Millisecond)
		}, false},
		{"caller deadline with another cause", func() (context.Context, context.CancelFunc) {
			return context.WithTimeoutCause(context.Background(), 10*time.Millisecond, fmt.Errorf("budget: %w", context.DeadlineExceeded))
		}, false},
		{"marked deadline inside a cancelled caller", func() (context.Context, context.CancelFunc) {
			parent, cancel := context.WithCancel(context.Background())
			cancel()
			ctx, cancel2 := context.WithTimeoutCause(parent, time.Hour, callTimeoutCause{})
			return ctx, cancel2
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := breaker.DefaultConfig()
			cfg.FailureThreshold = 2
			b, err := breaker.New("keyword", cfg)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				ctx, cancel := tc.ctx()
				err := b.Call(ctx, slowCall)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
					t.Fatalf("Call = %v, want the ctx error", err)
				}
			}
			if got, want := b.State() == breaker.Open, tc.trips; got != want {
				t.Fatalf("state after two calls = %v, want open: %v", b.State(), want)
			}
		})
	}
}
