package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/spi"
)

const maxDemoFailures = 1000

func newBreakerCmd(a *app) *cobra.Command {
	var (
		failures  int
		noRecover bool
	)
	cmd := &cobra.Command{
		Use:   "breaker",
		Short: "Walk a circuit breaker through a simulated outage",
		Long: "breaker drives a real circuit breaker against a simulated backend on a\n" +
			"simulated clock, so it finishes at once. The backend fails N times in a\n" +
			"row, which trips the breaker open; the next call is rejected without\n" +
			"reaching the backend; after the reset timeout the breaker admits a probe.\n" +
			"The backend has recovered (the breaker closes) or, with --no-recover,\n" +
			"it has not (the breaker re-opens). Every transition is printed.\n\n" +
			"Exits 0 when the breaker took exactly the expected walk.",
		Example: "  ragd breaker -f 3\n  ragd breaker -f 2 --no-recover",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if failures < 1 || failures > maxDemoFailures {
				return usageError{fmt.Errorf("--failures must be between 1 and %d, got %d", maxDemoFailures, failures)}
			}
			w := breakerWalk{failures: failures, recover: !noRecover}
			w.backend = w.simulatedBackend
			return w.run(cmd.Context(), a.stdout)
		},
	}
	cmd.Flags().IntVarP(&failures, "failures", "f", 3, "consecutive backend failures, which is also the breaker's failure threshold")
	cmd.Flags().BoolVar(&noRecover, "no-recover", false, "the backend is still down when the breaker probes it")
	return cmd
}

// breakerWalk is one run of the demo.
type breakerWalk struct {
	failures int
	recover  bool
	// backend is called with the 1-based number of the call that reached
	// it.
	backend func(n int) error
}

// simulatedBackend fails the first failures calls, then fails or succeeds
// according to recover.
func (w breakerWalk) simulatedBackend(n int) error {
	if n <= w.failures || !w.recover {
		return fmt.Errorf("simulated backend: %w", spi.ErrUnavailable)
	}
	return nil
}

// run walks the breaker, printing every step to out, and reports an error
// if the walk differs from the expected one.
func (w breakerWalk) run(ctx context.Context, out io.Writer) error {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	elapsed := func() string { return "+" + now.Sub(start).String() }

	var pending, walk []breaker.Transition
	cfg := breaker.DefaultConfig()
	cfg.FailureThreshold = w.failures
	cfg.Now = func() time.Time { return now }
	cfg.OnStateChange = func(t breaker.Transition) { pending = append(pending, t) }
	b, err := breaker.New("demo", cfg)
	if err != nil {
		return err
	}
	printTransitions := func() {
		for _, t := range pending {
			detail := string(t.Reason)
			switch {
			case t.To == breaker.Open:
				detail += fmt.Sprintf("; failures=%d opened_total=%d open_for=%v", t.Failures, t.OpenedTotal, t.OpenFor)
			case t.From == breaker.HalfOpen:
				detail += fmt.Sprintf("; trial_successes=%d", t.TrialSuccesses)
			}
			fmt.Fprintf(out, "[%s]   transition %v -> %v (%s)\n", elapsed(), t.From, t.To, detail)
		}
		walk = append(walk, pending...)
		pending = pending[:0]
	}

	reached := 0
	call := func() error {
		return b.Call(ctx, func(context.Context) error {
			// A transition made on admitting this call (the cooldown has
			// passed: open -> half_open) comes before its outcome.
			printTransitions()
			reached++
			return w.backend(reached)
		})
	}

	fmt.Fprintf(out, "breaker %q: failure_threshold=%d reset_timeout=%v; backend recovers: %v\n",
		b.Name(), cfg.FailureThreshold, cfg.ResetTimeout, w.recover)
	fmt.Fprintf(out, "[%s] state %v\n", elapsed(), b.State())
	for i := 1; i <= w.failures; i++ {
		err := call()
		fmt.Fprintf(out, "[%s] call %d: %s\n", elapsed(), i, outcome(err))
		printTransitions()
	}
	before := reached
	err = call()
	fmt.Fprintf(out, "[%s] call %d: %s\n", elapsed(), w.failures+1, outcome(err))
	rejected := errors.Is(err, breaker.ErrOpen) && reached == before

	now = now.Add(cfg.ResetTimeout)
	fmt.Fprintf(out, "[%s] waited %v; state %v\n", elapsed(), cfg.ResetTimeout, b.State())
	err = call()
	fmt.Fprintf(out, "[%s] probe: %s\n", elapsed(), outcome(err))
	printTransitions()

	final, want := b.State(), breaker.Closed
	if !w.recover {
		want = breaker.Open
	}
	fmt.Fprintf(out, "final state: %v (expected %v)\n", final, want)

	expected := []string{"closed>open", "open>half_open", "half_open>closed"}
	if !w.recover {
		expected[2] = "half_open>open"
	}
	var got []string
	for _, t := range walk {
		got = append(got, t.From.String()+">"+t.To.String())
	}
	switch {
	case !slices.Equal(got, expected):
		return fmt.Errorf("breaker walk %v, expected %v", got, expected)
	case !rejected:
		return fmt.Errorf("call %d was not rejected by the open breaker", w.failures+1)
	case final != want:
		return fmt.Errorf("final state %v, expected %v", final, want)
	}
	return nil
}

func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, breaker.ErrOpen):
		return "rejected without reaching the backend: " + err.Error()
	default:
		return "failed: " + err.Error()
	}
}
