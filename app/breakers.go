package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/internal/events"
	"github.com/ragd/ragd/spi"
)

// newBreakers builds the registry from rag.yaml's breakers section. Every
// breaker ignores spi.ErrInvalidQuery (the caller's fault, not the
// backend's) and reports its transitions to onChange.
func newBreakers(cfg *config.Config, now func() time.Time, onChange func(breaker.Transition)) (*breaker.Registry, error) {
	base := breakerConfig(cfg.Breakers.BreakerSettings, breaker.DefaultConfig())
	base.Now = now
	base.OnStateChange = onChange
	base.ShouldCount = breaker.IgnoreErrors(spi.ErrInvalidQuery, spi.ErrNotFound)
	// A trial made by a background probe may spend the whole warm-up
	// deadline warming a cold server; its slot must outlive that.
	base.TrialLease = max(base.ResetTimeout, 2*config.Seconds(cfg.Breakers.WarmupTimeoutS), time.Second)
	if err := base.Validate(); err != nil {
		return nil, fmt.Errorf("app: breakers: %w", err)
	}
	reg := breaker.NewRegistry(base)
	for name, o := range cfg.Breakers.Overrides {
		oc := breakerConfig(o, base)
		// The registry runs its own OnStateChange for every breaker;
		// inheriting it here as well would report each transition twice.
		oc.OnStateChange = nil
		oc.TrialLease = max(oc.ResetTimeout, base.TrialLease)
		if err := reg.Override(name, oc); err != nil {
			return nil, fmt.Errorf("app: breakers.overrides.%s: %w", name, err)
		}
	}
	for _, name := range spi.Backends() {
		reg.Get(name) // mint eagerly so status endpoints list them all
	}
	return reg, nil
}

// breakerConfig applies the non-zero settings of s on top of base.
func breakerConfig(s config.BreakerSettings, base breaker.Config) breaker.Config {
	if s.FailureThreshold > 0 {
		base.FailureThreshold = s.FailureThreshold
	}
	if s.ResetTimeoutS > 0 {
		base.ResetTimeout = config.Seconds(s.ResetTimeoutS)
	}
	if s.HalfOpenMaxCalls > 0 {
		base.HalfOpenMaxCalls = s.HalfOpenMaxCalls
	}
	if s.SuccessThreshold > 0 {
		base.SuccessThreshold = s.SuccessThreshold
	}
	return base
}

// onTransition logs every breaker transition as an event with counts only:
// never query text or document bodies (Transition carries none).
func (a *App) onTransition(t breaker.Transition) {
	level := slog.LevelInfo
	if t.To == breaker.Open && t.Restored == nil { // a restored hold is no trip
		level = slog.LevelWarn
	}
	a.Logger.LogAttrs(context.Background(), level, t.Event(), slog.Any("transition", t))
	if a.breakerMetrics != nil {
		a.breakerMetrics.ObserveTransition(t)
	}
	a.publish(events.FromTransition(t))
	a.observeConsole(t)
}

var errNotConfigured = errors.New("app: not configured")
