package testenv

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// TestStartOnFreePorts: a start that fails is tried again on new ports
// (distinct within a try), at most startAttempts times; build's own error ends the tries;
// the server that started is stopped when the test that started it ends.
func TestStartOnFreePorts(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	exit, err := exec.LookPath("false")
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "log")
	// server fails to start (the command exits at once, as a server whose
	// port was taken does) for the first failures builds, then runs.
	server := func(failures int, calls *[][]int) func([]int) (*process, error) {
		return func(ports []int) (*process, error) {
			*calls = append(*calls, ports)
			argv := []string{sleep, "60"}
			if len(*calls) <= failures {
				argv = []string{exit}
			}
			return &process{name: "test server", argv: argv, logPath: logPath, stopSig: syscall.SIGTERM,
				ready: func(ctx context.Context) error {
					if argv[0] == exit {
						return errors.New("refused")
					}
					return nil
				}}, nil
		}
	}
	checkPorts := func(t *testing.T, calls [][]int) {
		t.Helper()
		for _, ports := range calls {
			if len(ports) != 2 || ports[0] <= 0 || ports[0] == ports[1] {
				t.Fatalf("build got ports %v, want two distinct ports", ports)
			}
		}
	}

	t.Run("retried on new ports, stopped at cleanup", func(t *testing.T) {
		var calls [][]int
		var p *process
		t.Run("server", func(t *testing.T) {
			var err error
			p, err = startOnFreePorts(t, 2, server(startAttempts-1, &calls))
			if err != nil {
				t.Fatalf("startOnFreePorts: %v", err)
			}
			if len(calls) != startAttempts {
				t.Fatalf("build called %d times, want %d", len(calls), startAttempts)
			}
			checkPorts(t, calls)
			if !p.running() {
				t.Fatal("the started server is not running")
			}
		})
		if p.running() {
			t.Fatal("the server still runs after its test ended")
		}
	})
	t.Run("gives up after startAttempts", func(t *testing.T) {
		var calls [][]int
		if _, err := startOnFreePorts(t, 2, server(startAttempts, &calls)); err == nil {
			t.Fatal("started although every attempt failed")
		}
		if len(calls) != startAttempts {
			t.Fatalf("build called %d times, want %d", len(calls), startAttempts)
		}
		checkPorts(t, calls)
	})
	t.Run("build error ends the tries", func(t *testing.T) {
		calls := 0
		errBuild := errors.New("no config")
		_, err := startOnFreePorts(t, 1, func([]int) (*process, error) { calls++; return nil, errBuild })
		if !errors.Is(err, errBuild) || calls != 1 {
			t.Fatalf("err %v after %d builds, want errBuild after 1", err, calls)
		}
	})
}
