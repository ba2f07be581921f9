package main

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
)

// runRagd runs the CLI as a user would and returns its outputs.
func runRagd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// transitions extracts the "from -> to" steps the command printed.
func transitions(stdout string) []string {
	re := regexp.MustCompile(`transition (\w+) -> (\w+)`)
	var got []string
	for _, m := range re.FindAllStringSubmatch(stdout, -1) {
		got = append(got, m[1]+">"+m[2])
	}
	return got
}

func TestBreakerWalk(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args      []string
		walk      []string
		final     string
		failLines int
		rejected  string
	}{
		{
			args:      []string{"breaker", "-f", "3"},
			walk:      []string{"closed>open", "open>half_open", "half_open>closed"},
			final:     "final state: closed (expected closed)",
			failLines: 3,
			rejected:  "call 4: rejected without reaching the backend",
		},
		{
			args:      []string{"breaker", "-f", "2", "--no-recover"},
			walk:      []string{"closed>open", "open>half_open", "half_open>open"},
			final:     "final state: open (expected open)",
			failLines: 3, // two failures plus the failed probe
			rejected:  "call 3: rejected without reaching the backend",
		},
		{
			args:      []string{"breaker", "--failures=1"},
			walk:      []string{"closed>open", "open>half_open", "half_open>closed"},
			final:     "final state: closed (expected closed)",
			failLines: 1,
			rejected:  "call 2: rejected",
		},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runRagd(t, tt.args...)
			if code != 0 {
				t.Fatalf("exit code %d, stderr %q\n%s", code, stderr, stdout)
			}
			if got := transitions(stdout); strings.Join(got, ",") != strings.Join(tt.walk, ",") {
				t.Fatalf("printed walk %v, want %v\n%s", got, tt.walk, stdout)
			}
			if !strings.Contains(stdout, tt.final) || !strings.Contains(stdout, tt.rejected) {
				t.Fatalf("output lacks %q or %q:\n%s", tt.final, tt.rejected, stdout)
			}
			if n := strings.Count(stdout, ": failed: simulated backend"); n != tt.failLines {
				t.Fatalf("%d failed calls printed, want %d:\n%s", n, tt.failLines, stdout)
			}
			if !strings.Contains(stdout, "[+30s]") {
				t.Fatalf("the simulated clock did not advance by the reset timeout:\n%s", stdout)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"breaker", "-f", "0"},
		{"breaker", "-f", "x"},
		{"breaker", "--bogus"},
		{"breaker", "extra"},
		{"nope"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := runRagd(t, args...)
			if code != exitUsage {
				t.Fatalf("exit code %d, want %d; stdout %q stderr %q", code, exitUsage, stdout, stderr)
			}
			if !strings.HasPrefix(stderr, "ragd: ") || !strings.Contains(stderr, "--help") {
				t.Fatalf("stderr %q should name the problem and point at --help", stderr)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"Usage:", "breaker"}},
		{[]string{"--help"}, []string{"Usage:", "breaker"}},
		{[]string{"help", "breaker"}, []string{"--no-recover", "--failures"}},
		{[]string{"breaker", "--help"}, []string{"--no-recover", "-f, --failures"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runRagd(t, tt.args...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit code %d, stderr %q", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout, w) {
					t.Fatalf("help lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
}

// An unexpected walk must not pass: the backend below never fails enough to
// trip the breaker, or is reached while it should be open.
func TestBreakerWalkDetectsUnexpectedWalks(t *testing.T) {
	t.Parallel()
	errDown := errors.New("down")
	for name, backend := range map[string]func(n int) error{
		"never fails": func(int) error { return nil },
		"fails one too few": func(n int) error {
			if n < 3 {
				return errDown
			}
			return nil
		},
		"never recovers": func(int) error { return errDown },
		"recovers too early": func(n int) error {
			if n == 1 {
				return errDown
			}
			return nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := breakerWalk{failures: 3, recover: true, backend: backend}
			var out bytes.Buffer
			if err := w.run(context.Background(), &out); err == nil {
				t.Fatalf("walk accepted:\n%s", out.String())
			}
		})
	}
}
