package breaker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ragd/ragd/breaker"
	"github.com/sony/gobreaker/v2"
)

// The benchmarks compare Call with sony/gobreaker v2 Execute on the paths a
// retriever hits: closed (the backend works) and open (it is down). Run:
//
//	go test -run '^$' -bench . -benchmem ./breaker/

var errBench = errors.New("bench: backend down")

func okFn(context.Context) error { return nil }

func newBenchBreaker(b *testing.B) *breaker.Breaker {
	b.Helper()
	br, err := breaker.New("bench", breaker.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	return br
}

func newBenchGobreaker() *gobreaker.CircuitBreaker[struct{}] {
	return gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        "bench",
		MaxRequests: 1,
		Timeout:     30 * time.Second,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 5 },
	})
}

func gobOK() (struct{}, error)   { return struct{}{}, nil }
func gobFail() (struct{}, error) { return struct{}{}, errBench }

func BenchmarkClosed(b *testing.B) {
	ctx := context.Background()
	b.Run("breaker/serial", func(b *testing.B) {
		br := newBenchBreaker(b)
		b.ReportAllocs()
		for b.Loop() {
			if err := br.Call(ctx, okFn); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gobreaker/serial", func(b *testing.B) {
		cb := newBenchGobreaker()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cb.Execute(gobOK); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("breaker/parallel", func(b *testing.B) {
		br := newBenchBreaker(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := br.Call(ctx, okFn); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("gobreaker/parallel", func(b *testing.B) {
		cb := newBenchGobreaker()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := cb.Execute(gobOK); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("breaker/failure-rate-rule/serial", func(b *testing.B) {
		cfg := breaker.DefaultConfig()
		cfg.FailureRate = breaker.FailureRate{Threshold: 0.5, MinCalls: 20, Window: 10 * time.Second}
		br, err := breaker.New("bench", cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := br.Call(ctx, okFn); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("breaker/allow/serial", func(b *testing.B) {
		br := newBenchBreaker(b)
		b.ReportAllocs()
		for b.Loop() {
			done, err := br.Allow()
			if err != nil {
				b.Fatal(err)
			}
			done(nil)
		}
	})
}

func BenchmarkOpen(b *testing.B) {
	ctx := context.Background()
	b.Run("breaker/serial", func(b *testing.B) {
		br := newBenchBreaker(b)
		br.ForceOpen()
		b.ReportAllocs()
		for b.Loop() {
			if err := br.Call(ctx, okFn); err == nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gobreaker/serial", func(b *testing.B) {
		cb := newBenchGobreaker()
		for range 5 {
			_, _ = cb.Execute(gobFail)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cb.Execute(gobOK); err == nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("breaker/parallel", func(b *testing.B) {
		br := newBenchBreaker(b)
		br.ForceOpen()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := br.Call(ctx, okFn); err == nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("gobreaker/parallel", func(b *testing.B) {
		cb := newBenchGobreaker()
		for range 5 {
			_, _ = cb.Execute(gobFail)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := cb.Execute(gobOK); err == nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
