package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ragd/ragd/internal/loadgen"
)

type scenarioFlags struct {
	mode                   string
	neo4jPID               int
	pgPID                  int
	neo4jStop, neo4jStart  string
	resetTimeout           time.Duration
	tripWithin, recoverFor time.Duration
}

func (f *scenarioFlags) register() {
	flag.StringVar(&f.mode, "scenario", "", "run a fault scenario instead of one load run: embedded, vector-hung or servers")
	flag.IntVar(&f.neo4jPID, "neo4j-pid", 0, "servers: Neo4j's process id, for SIGSTOP/SIGCONT")
	flag.IntVar(&f.pgPID, "pg-pid", 0, "servers: PostgreSQL's postmaster process id (it and its children are stopped)")
	flag.StringVar(&f.neo4jStop, "neo4j-stop", "", "servers: shell command that stops Neo4j")
	flag.StringVar(&f.neo4jStart, "neo4j-start", "", "servers: shell command that starts Neo4j and returns once it answers")
	flag.DurationVar(&f.resetTimeout, "reset-timeout", 10*time.Second, "the server's breakers.reset_timeout_s, for the recovery goal (reset + 5 s)")
	flag.DurationVar(&f.tripWithin, "trip-within", 30*time.Second, "longest wait for a breaker to open")
	flag.DurationVar(&f.recoverFor, "recover-within", 90*time.Second, "longest wait for a healed source to answer")
}

func (f *scenarioFlags) run(ctx context.Context, cfg loadgen.Config) error {
	var faults []loadgen.Fault
	switch f.mode {
	case "embedded":
		faults = []loadgen.Fault{
			injected(cfg, "vector", "vector", "vector store hung (injected)", map[string]any{"hang": true}),
			injected(cfg, "keyword", "keyword", "keyword index slow, 2 s a call (injected)", map[string]any{"delay_ms": 2000}),
		}
	case "vector-hung":
		faults = []loadgen.Fault{
			injected(cfg, "vector", "vector", "vector store hung (injected)", map[string]any{"hang": true}),
		}
	case "servers":
		if f.neo4jPID == 0 || f.pgPID == 0 || f.neo4jStop == "" || f.neo4jStart == "" {
			return fmt.Errorf("-scenario servers needs -neo4j-pid, -pg-pid, -neo4j-stop and -neo4j-start")
		}
		faults = []loadgen.Fault{
			signalled("graph", "graph", "Neo4j SIGSTOPped", func() []int { return []int{f.neo4jPID} }),
			signalled("vector", "vector", "PostgreSQL SIGSTOPped", func() []int { return withChildren(f.pgPID) }),
			{Source: "graph", Breaker: "graph", Label: "Neo4j restarted",
				Inject: shell(f.neo4jStop), Heal: shell(f.neo4jStart)},
		}
	default:
		return fmt.Errorf("-scenario %q: want embedded, vector-hung or servers", f.mode)
	}
	s := loadgen.Scenario{Base: cfg, TripWithin: f.tripWithin, RecoverWithin: f.recoverFor, Out: os.Stdout}
	out, err := s.Run(ctx, faults)
	if out != nil {
		summarise(out, f.resetTimeout)
	}
	return err
}

// summarise prints the goals' figures under the table.
func summarise(out *loadgen.Outcome, reset time.Duration) {
	h := out.Healthy
	all := 1.0
	for _, src := range loadgen.Sources {
		if st, ok := h.SourceStatus[src]; ok && st["disabled"] < len(h.Samples) {
			all = min(all, h.SourceOK[src])
		}
	}
	fmt.Printf("\nhealthy: %.1f %% of answers had every enabled source ok (the least-answering source), %d breaker transitions\n",
		100*all, len(h.Transitions))
	for _, r := range out.Rows {
		if strings.HasSuffix(r.Label, ": breaker open") && h.P99 > 0 {
			fmt.Printf("%s: p99 %.1f ms = %.2f× healthy p99, %d non-200\n", r.Label, ms(r.P99), float64(r.P99)/float64(h.P99), r.Non200+r.Errors)
		}
	}
	for label, d := range out.TripAfter {
		if d < 0 {
			fmt.Printf("%s: breaker did not open\n", label)
		} else {
			fmt.Printf("%s: breaker open %.1f s after the fault\n", label, d.Seconds())
		}
	}
	for label, d := range out.Recovery {
		if d < 0 {
			fmt.Printf("%s: source NOT back\n", label)
		} else {
			fmt.Printf("%s: source back %.1f s after healing (goal: reset_timeout + 5 s = %.0f s)\n", label, d.Seconds(), (reset + 5*time.Second).Seconds())
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func injected(cfg loadgen.Config, source, breaker, label string, fault map[string]any) loadgen.Fault {
	return loadgen.Fault{Source: source, Breaker: breaker, Label: label,
		Inject: func(ctx context.Context) error { return loadgen.SetFault(ctx, cfg, source, fault) },
		Heal:   func(ctx context.Context) error { return loadgen.SetFault(ctx, cfg, source, nil) },
	}
}

// signalled stops (SIGSTOP) and resumes (SIGCONT) the processes pids
// lists at each step.
func signalled(source, breaker, label string, pids func() []int) loadgen.Fault {
	var stopped []int
	send := func(sig syscall.Signal) func(context.Context) error {
		return func(context.Context) error {
			if sig == syscall.SIGSTOP {
				stopped = pids()
			}
			for _, p := range stopped {
				if err := syscall.Kill(p, sig); err != nil {
					return fmt.Errorf("signal %d to %d: %w", sig, p, err)
				}
			}
			return nil
		}
	}
	return loadgen.Fault{Source: source, Breaker: breaker, Label: label, Inject: send(syscall.SIGSTOP), Heal: send(syscall.SIGCONT)}
}

func shell(cmd string) func(context.Context) error {
	return func(ctx context.Context) error {
		c := exec.CommandContext(ctx, "sh", "-c", cmd)
		c.Stdout, c.Stderr = os.Stderr, os.Stderr
		return c.Run()
	}
}

// withChildren returns pid and its direct children (PostgreSQL's backends),
// read from /proc.
func withChildren(pid int) []int {
	out := []int{pid}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}
