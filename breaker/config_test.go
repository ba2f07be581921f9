package breaker_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/ragd/ragd/breaker"
)

func TestDefaultConfig(t *testing.T) {
	c := breaker.DefaultConfig()
	if c.FailureThreshold != 5 || c.ResetTimeout != 30*time.Second || c.HalfOpenMaxCalls != 1 || c.SuccessThreshold != 1 {
		t.Fatalf("DefaultConfig() = %+v, want 5, 30s, 1, 1", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	if c.FailureRate.Enabled() || c.Backoff.Multiplier != 0 || c.Backoff.Jitter != 0 || c.Backoff.Max != 0 {
		t.Fatal("failure-rate rule and backoff must be off by default")
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*breaker.Config)
		ok   bool
	}{
		{"default", func(*breaker.Config) {}, true},
		{"zero reset timeout", func(c *breaker.Config) { c.ResetTimeout = 0 }, true},
		{"failure threshold 0", func(c *breaker.Config) { c.FailureThreshold = 0 }, false},
		{"failure threshold too large", func(c *breaker.Config) { c.FailureThreshold = math.MaxUint32 + 1 }, false},
		{"negative reset timeout", func(c *breaker.Config) { c.ResetTimeout = -1 }, false},
		{"half-open max calls 0", func(c *breaker.Config) { c.HalfOpenMaxCalls = 0 }, false},
		{"success threshold 0", func(c *breaker.Config) { c.SuccessThreshold = 0 }, false},
		{"negative lease", func(c *breaker.Config) { c.TrialLease = -time.Second }, false},
		{"rate ok", func(c *breaker.Config) {
			c.FailureRate = breaker.FailureRate{Threshold: 0.5, MinCalls: 10, Window: time.Minute}
		}, true},
		{"rate threshold > 1", func(c *breaker.Config) {
			c.FailureRate = breaker.FailureRate{Threshold: 1.5, MinCalls: 10, Window: time.Minute}
		}, false},
		{"rate NaN", func(c *breaker.Config) {
			c.FailureRate = breaker.FailureRate{Threshold: math.NaN(), MinCalls: 10, Window: time.Minute}
		}, false},
		{"rate without window", func(c *breaker.Config) {
			c.FailureRate = breaker.FailureRate{Threshold: 0.5, MinCalls: 10}
		}, false},
		{"rate without min calls", func(c *breaker.Config) {
			c.FailureRate = breaker.FailureRate{Threshold: 0.5, Window: time.Minute}
		}, false},
		{"rate negative buckets", func(c *breaker.Config) {
			c.FailureRate = breaker.FailureRate{Threshold: 0.5, MinCalls: 1, Window: time.Minute, Buckets: -1}
		}, false},
		{"backoff ok", func(c *breaker.Config) { c.Backoff = breaker.Backoff{Multiplier: 2, Max: 5 * time.Minute, Jitter: 0.1} }, true},
		{"backoff without max", func(c *breaker.Config) { c.Backoff = breaker.Backoff{Multiplier: 2} }, false},
		{"backoff multiplier < 1", func(c *breaker.Config) { c.Backoff = breaker.Backoff{Multiplier: 0.5, Max: time.Hour} }, false},
		{"backoff max below reset timeout", func(c *breaker.Config) { c.Backoff = breaker.Backoff{Multiplier: 2, Max: time.Second} }, false},
		{"jitter > 1", func(c *breaker.Config) { c.Backoff = breaker.Backoff{Jitter: 1.5} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := breaker.DefaultConfig()
			tt.mod(&c)
			err := c.Validate()
			if tt.ok != (err == nil) {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, breaker.ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
			if _, nerr := breaker.New("x", c); (nerr == nil) != tt.ok {
				t.Fatalf("New() = %v, want ok=%v", nerr, tt.ok)
			}
		})
	}
}

func TestStateStringAndText(t *testing.T) {
	for s, want := range map[breaker.State]string{breaker.Closed: "closed", breaker.Open: "open", breaker.HalfOpen: "half_open"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", s, s.String(), want)
		}
		b, err := json.Marshal(s)
		if err != nil || string(b) != `"`+want+`"` {
			t.Errorf("json(%v) = %s, %v", s, b, err)
		}
		var back breaker.State
		if err := json.Unmarshal(b, &back); err != nil || back != s {
			t.Errorf("round trip of %v = %v, %v", s, back, err)
		}
	}
	if _, err := breaker.ParseState("ajar"); err == nil {
		t.Error("ParseState accepted an unknown state")
	}
	if _, err := json.Marshal(breaker.State(9)); err == nil {
		t.Error("an invalid state marshalled")
	}
	if breaker.Closed != 0 || !(breaker.Closed < breaker.HalfOpen && breaker.HalfOpen < breaker.Open) {
		t.Error("states must be ordered best to worst with Closed as the zero value")
	}
}

func TestSnapshotJSON(t *testing.T) {
	clock := newClock()
	cfg := testConfig(clock, 2)
	b := mustNew(t, "vector", cfg)
	trip(t, b)
	clock.Advance(2500*time.Millisecond + 300*time.Microsecond)
	s := b.Snapshot()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"vector","state":"open","failure_count":2,"failure_threshold":2,"opened_total":1,"reset_timeout_ms":10000,"retry_in_ms":7500,"since":"2026-03-01T12:00:00Z"}`
	if string(data) != want {
		t.Fatalf("json = %s\nwant   %s", data, want)
	}
	var back breaker.Snapshot
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Name != s.Name || back.State != s.State || back.FailureCount != 2 || back.OpenedTotal != 1 ||
		back.ResetTimeout != 10*time.Second || back.RetryIn != 7500*time.Millisecond {
		t.Fatalf("round trip = %+v", back)
	}
	if err := json.Unmarshal([]byte(`{"state":"ajar"}`), &back); err == nil {
		t.Fatal("unknown state decoded")
	}
}
