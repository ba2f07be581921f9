package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// process runs one native server process that a test owns. It is started
// again with the same arguments after a stop, so the server comes back on the
// same port with the same data.
type process struct {
	name    string
	argv    []string
	env     []string // nil: inherit
	logPath string
	user    *osUser                     // run as this OS user (nil: as the test process)
	stopSig os.Signal                   // graceful shutdown signal
	ready   func(context.Context) error // one readiness probe

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	paused bool // frozen by pause
}

// start launches the process unless it runs, then waits until ready answers.
func (p *process) start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return nil
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testenv: %s: log: %w", p.name, err)
	}
	cmd := newCommand(p.argv, logf, p.user)
	cmd.Env = p.env
	err = cmd.Start()
	logf.Close()
	if err != nil {
		return fmt.Errorf("testenv: %s: start: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	p.cmd, p.done = cmd, done

	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	var lastErr error
	for {
		probeCtx, probeCancel := context.WithTimeout(ctx, 10*time.Second)
		lastErr = p.ready(probeCtx)
		probeCancel()
		if lastErr == nil {
			return nil
		}
		select {
		case <-done:
			p.cmd, p.done, p.paused = nil, nil, false
			return fmt.Errorf("testenv: %s exited while starting (%v); log %s:\n%s",
				p.name, cmd.ProcessState, p.logPath, tail(p.logPath, 4000))
		case <-ctx.Done():
			p.killLocked()
			return fmt.Errorf("testenv: %s not ready: %w (last probe: %v); log %s:\n%s",
				p.name, context.Cause(ctx), lastErr, p.logPath, tail(p.logPath, 4000))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// startAttempts is how many port choices startOnFreePorts tries.
const startAttempts = 3

// startOnFreePorts starts the server that build describes for nPorts free
// loopback ports, and stops it when tb's test ends. A start that fails is
// tried again on new ports (most likely a port was taken between the
// choice and the server's bind), startAttempts times in all; an error of
// build itself ends the tries at once.
func startOnFreePorts(tb testing.TB, nPorts int, build func(ports []int) (*process, error)) (*process, error) {
	tb.Helper()
	var lastErr error
	for range startAttempts {
		ports, err := freePorts(nPorts)
		if err != nil {
			return nil, err
		}
		p, err := build(ports)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		lastErr = p.start(ctx)
		cancel()
		if lastErr != nil {
			continue
		}
		tb.Cleanup(func() {
			if err := p.stop(context.Background()); err != nil {
				tb.Logf("%v", err)
			}
		})
		return p, nil
	}
	return nil, lastErr
}

// stop shuts the process down gracefully and waits for it to exit; it kills
// the process when ctx ends first. Stopping a stopped process is a no-op.
func (p *process) stop(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	if err := p.cmd.Process.Signal(p.stopSig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.killLocked()
		return fmt.Errorf("testenv: %s: stop: %w", p.name, err)
	}
	if p.paused {
		// A frozen server handles the signal once it runs again.
		thawGroup(p.cmd.Process.Pid)
		p.paused = false
	}
	ctx, cancel := context.WithTimeout(ctx, stopTimeout)
	defer cancel()
	select {
	case <-p.done:
		p.cmd, p.done, p.paused = nil, nil, false
		return nil
	case <-ctx.Done():
		p.killLocked()
		return fmt.Errorf("testenv: %s: graceful stop: %w (killed)", p.name, context.Cause(ctx))
	}
}

// kill kills the process and every process in its group (a server's
// workers) with SIGKILL and waits for it. Killing a stopped process is a
// no-op.
func (p *process) kill(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	killGroup(p.cmd.Process.Pid)
	p.killLocked()
	return nil
}

// killLocked kills the process and waits for it. p.mu must be held.
func (p *process) killLocked() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	p.cmd, p.done, p.paused = nil, nil, false
}

// pause freezes the server and every process it started (SIGSTOP): the
// kernel still accepts connections on its port, and nothing answers them,
// as with a hung server.
func (p *process) pause(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("testenv: %s: pause: not running", p.name)
	}
	if p.paused {
		return nil
	}
	if err := freezeGroup(p.cmd.Process.Pid); err != nil {
		return fmt.Errorf("testenv: %s: pause: %w", p.name, err)
	}
	p.paused = true
	return nil
}

// unpause continues a paused server and waits until it answers.
func (p *process) unpause(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("testenv: %s: unpause: not running", p.name)
	}
	if p.paused {
		thawGroup(p.cmd.Process.Pid)
		p.paused = false
	}
	return waitReady(ctx, p.ready)
}

// newCommand builds a command writing to out and running as u (nil: as self).
func newCommand(argv []string, out *os.File, u *osUser) *exec.Cmd {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr(u)
	return cmd
}

// running reports whether the process runs (started and not stopped).
func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}
