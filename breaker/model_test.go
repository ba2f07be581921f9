package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ragd/ragd/breaker"
	"pgregory.net/rapid"
)

// refModel is the breaker's specification in a few lines: single-threaded,
// with an explicit generation number, no failure-rate rule and no backoff.
type refModel struct {
	threshold, maxCalls, successThreshold int
	reset, lease                          time.Duration

	now          time.Duration // since the clock's start
	state        breaker.State
	gen          int
	failures     int // consecutive, while closed
	tripFailures int // while open or half-open
	openUntil    time.Duration
	openedTotal  uint64
	trials       map[int]time.Duration // ticket → admitted at
	nextTicket   int
	successes    int
}

type refToken struct{ gen, ticket int }

func (m *refModel) newGen(s breaker.State) {
	m.state = s
	m.gen++
	m.trials = map[int]time.Duration{}
	m.successes = 0
}

func (m *refModel) open(failures int) {
	m.newGen(breaker.Open)
	m.failures = 0
	m.tripFailures = failures
	m.openUntil = m.now + m.reset
	m.openedTotal++
}

func (m *refModel) close() {
	m.newGen(breaker.Closed)
	m.failures, m.tripFailures = 0, 0
}

func (m *refModel) advance() {
	if m.state == breaker.Open && m.now >= m.openUntil {
		m.newGen(breaker.HalfOpen)
	}
}

// admit returns the token, or the RetryAfter of the rejection.
func (m *refModel) admit() (refToken, time.Duration, bool) {
	m.advance()
	switch m.state {
	case breaker.Closed:
		return refToken{gen: m.gen}, 0, true
	case breaker.Open:
		ms := (m.openUntil - m.now + time.Millisecond - 1) / time.Millisecond
		return refToken{}, ms * time.Millisecond, false
	}
	for id, at := range m.trials {
		if m.now-at >= m.lease {
			delete(m.trials, id)
		}
	}
	if len(m.trials) >= m.maxCalls {
		return refToken{}, 0, false
	}
	m.nextTicket++
	m.trials[m.nextTicket] = m.now
	return refToken{gen: m.gen, ticket: m.nextTicket}, 0, true
}

// outcomes: 0 success, 1 failure, 2 neutral.
func (m *refModel) report(tok refToken, outcome int) {
	if tok.gen != m.gen {
		return
	}
	if tok.ticket == 0 {
		switch outcome {
		case 0:
			m.failures = 0
		case 1:
			m.failures++
			if m.failures >= m.threshold {
				m.open(m.failures)
			}
		}
		return
	}
	if _, ok := m.trials[tok.ticket]; !ok {
		return
	}
	delete(m.trials, tok.ticket)
	switch outcome {
	case 0:
		m.successes++
		if m.successes >= m.successThreshold {
			m.close()
		}
	case 1:
		m.open(m.tripFailures + 1)
	}
}

func (m *refModel) forceOpen() {
	m.advance()
	switch m.state {
	case breaker.Closed:
		m.open(m.failures)
	case breaker.HalfOpen:
		m.open(m.tripFailures)
	}
}

func (m *refModel) forceClose() {
	m.advance()
	if m.state == breaker.Closed {
		// A new generation without a transition: earlier calls are ignored.
		m.gen++
		m.failures = 0
		return
	}
	m.close()
}

func (m *refModel) snapshot() (breaker.State, int, time.Duration) {
	switch m.state {
	case breaker.Closed:
		return breaker.Closed, m.failures, 0
	case breaker.Open:
		if m.now < m.openUntil {
			return breaker.Open, m.tripFailures, m.openUntil - m.now
		}
		return breaker.HalfOpen, m.tripFailures, 0
	}
	return breaker.HalfOpen, m.tripFailures, 0
}

type heldCall struct {
	done func(error)
	tok  refToken
}

var errExempt = errors.New("exempt")

// TestModel runs random sequences of calls, held calls finishing late, clock
// moves and forced transitions against the breaker and refModel, and checks
// that they agree after every step.
func TestModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &refModel{
			threshold:        rapid.IntRange(1, 4).Draw(t, "threshold"),
			maxCalls:         rapid.IntRange(1, 3).Draw(t, "maxCalls"),
			successThreshold: rapid.IntRange(1, 3).Draw(t, "successThreshold"),
			reset:            time.Duration(rapid.IntRange(0, 5).Draw(t, "resetS")) * time.Second,
			lease:            time.Duration(rapid.IntRange(1, 8).Draw(t, "leaseS")) * time.Second,
			trials:           map[int]time.Duration{},
		}
		clock := newClock()
		var opened uint64
		cfg := breaker.Config{
			FailureThreshold: m.threshold,
			ResetTimeout:     m.reset,
			HalfOpenMaxCalls: m.maxCalls,
			SuccessThreshold: m.successThreshold,
			TrialLease:       m.lease,
			ShouldCount:      breaker.IgnoreErrors(errExempt),
			Now:              clock.Now,
			OnStateChange: func(tr breaker.Transition) {
				if tr.To == breaker.Open {
					opened = tr.OpenedTotal
				}
			},
		}
		b, err := breaker.New("model", cfg)
		if err != nil {
			t.Fatal(err)
		}
		var held []heldCall
		outcomeErr := []error{nil, errBackend, errExempt}

		check := func(step string) {
			st, failures, retryIn := m.snapshot()
			if got := b.State(); got != st {
				t.Fatalf("%s: State() = %v, model %v", step, got, st)
			}
			s := b.Snapshot()
			if s.State != st || s.FailureCount != failures || s.RetryIn != retryIn || s.OpenedTotal != m.openedTotal {
				t.Fatalf("%s: Snapshot = %+v, model state %v failures %d retryIn %v opened %d",
					step, s, st, failures, retryIn, m.openedTotal)
			}
			if opened != m.openedTotal {
				t.Fatalf("%s: last opened event says OpenedTotal %d, model %d", step, opened, m.openedTotal)
			}
		}
		call := func(t *rapid.T) {
			outcome := rapid.IntRange(0, 2).Draw(t, "outcome")
			tok, retry, ok := m.admit()
			ran := false
			err := b.Call(context.Background(), func(context.Context) error { ran = true; return outcomeErr[outcome] })
			if ran != ok {
				t.Fatalf("Call ran=%v, model admits=%v", ran, ok)
			}
			if ok {
				m.report(tok, outcome)
			} else {
				var oe *breaker.OpenError
				if !errors.As(err, &oe) || oe.RetryAfter != retry {
					t.Fatalf("rejection = %v, model RetryAfter %v", err, retry)
				}
			}
			check(fmt.Sprint("call ", outcome))
		}
		t.Repeat(map[string]func(*rapid.T){
			"call": call,
			"allow": func(t *rapid.T) {
				tok, _, ok := m.admit()
				done, err := b.Allow()
				if (err == nil) != ok {
					t.Fatalf("Allow err=%v, model admits=%v", err, ok)
				}
				if ok {
					held = append(held, heldCall{done, tok})
				}
				check("allow")
			},
			"finish": func(t *rapid.T) {
				if len(held) == 0 {
					t.Skip("nothing held")
				}
				i := rapid.IntRange(0, len(held)-1).Draw(t, "held")
				outcome := rapid.IntRange(0, 2).Draw(t, "outcome")
				h := held[i]
				held = append(held[:i], held[i+1:]...)
				h.done(outcomeErr[outcome])
				m.report(h.tok, outcome)
				check(fmt.Sprint("finish ", outcome))
			},
			"advance": func(t *rapid.T) {
				// Half-second steps hit cooldown and lease edges exactly;
				// the odd millisecond exercises RetryAfter rounding.
				d := time.Duration(rapid.IntRange(0, 8).Draw(t, "halfSeconds"))*500*time.Millisecond +
					time.Duration(rapid.SampledFrom([]int{0, 0, 0, 1}).Draw(t, "ms"))*time.Millisecond
				clock.Advance(d)
				m.now += d
				check("advance")
			},
			"forceOpen": func(t *rapid.T) {
				b.ForceOpen()
				m.forceOpen()
				check("forceOpen")
			},
			"forceClose": func(t *rapid.T) {
				b.ForceClose()
				m.forceClose()
				check("forceClose")
			},
		})
	})
}
