package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// ragdProc is a running `ragd serve`.
type ragdProc struct {
	cmd     *exec.Cmd
	addr    string // host:port it listens on
	logPath string
	log     *lineWriter

	done    chan struct{} // closed when the process has exited
	waitErr error         // valid after done
}

// servingRE matches the line `ragd serve` prints once it listens.
var servingRE = regexp.MustCompile(`ragd: serving on http://(\S+)`)

// startRagd runs `ragd serve -c cfgPath` with env added to the test's
// environment, waits until it listens and /readyz answers 200, and stops it
// (SIGTERM, then SIGKILL) when the test ends. On failure the tail of its
// log is printed.
func startRagd(t *testing.T, cfgPath string, env ...string) *ragdProc {
	t.Helper()
	bin := ragdBinary(t)
	logPath := filepath.Join(t.TempDir(), "ragd.log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	lw := &lineWriter{w: f, onLine: func(line string) {
		if m := servingRE.FindStringSubmatch(line); m != nil {
			select {
			case addrc <- m[1]:
			default:
			}
		}
	}}
	cmd := exec.Command(bin, "serve", "-c", cfgPath)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = lw
	cmd.Stderr = lw
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start ragd: %v", err)
	}
	p := &ragdProc{cmd: cmd, logPath: logPath, log: lw, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(t)
		if p.log.raced.Load() {
			t.Errorf("ragd reported a data race (built with %s=1); see %s", envRace, logPath)
		}
		if t.Failed() {
			t.Logf("ragd log (%s), last lines other than request logs:\n%s", logPath, p.log.tail(40))
		}
	})

	select {
	case p.addr = <-addrc:
	case <-p.done:
		t.Fatalf("ragd exited before listening: %v\n%s", p.waitErr, p.log.tail(40))
	case <-time.After(3 * time.Minute):
		t.Fatalf("ragd did not listen within 3 minutes\n%s", p.log.tail(40))
	}
	c := newClient(p.addr, "")
	deadline := time.Now().Add(time.Minute)
	for {
		st, body, err := c.call(context.Background(), http.MethodGet, "/readyz", nil, nil)
		if err == nil && st == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ragd at %s not ready within a minute: status %d, %v, %s", p.addr, st, err, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return p
}

// signal sends sig to ragd.
func (p *ragdProc) signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// wait waits up to d for ragd to exit and returns its exit code.
func (p *ragdProc) wait(d time.Duration) (int, error) {
	select {
	case <-p.done:
	case <-time.After(d):
		return -1, fmt.Errorf("ragd did not exit within %v", d)
	}
	var ee *exec.ExitError
	if p.waitErr != nil && !errors.As(p.waitErr, &ee) {
		return -1, p.waitErr
	}
	return p.cmd.ProcessState.ExitCode(), nil
}

// stop ends ragd if it still runs: SIGTERM, then SIGKILL after 30 s.
func (p *ragdProc) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.signal(syscall.SIGTERM)
	if _, err := p.wait(30 * time.Second); err != nil {
		t.Logf("ragd: %v; killing it", err)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// lineWriter copies the process output to w and hands every complete line
// to onLine. It keeps the last lines for failure reports.
type lineWriter struct {
	mu     sync.Mutex
	w      *os.File
	onLine func(string)
	buf    []byte
	last   []string
	// raced is set when the race detector reported in the output.
	raced atomic.Bool
}

func (lw *lineWriter) Write(b []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.w.Write(b)
	lw.buf = append(lw.buf, b...)
	for {
		i := bytes.IndexByte(lw.buf, '\n')
		if i < 0 {
			break
		}
		line := string(lw.buf[:i])
		lw.buf = lw.buf[i+1:]
		if strings.Contains(line, "WARNING: DATA RACE") {
			lw.raced.Store(true)
		}
		lw.last = append(lw.last, line)
		if len(lw.last) > 200 {
			lw.last = lw.last[len(lw.last)-200:]
		}
		if lw.onLine != nil {
			lw.onLine(line)
		}
	}
	return len(b), nil
}

// tail returns the last n lines kept, leaving out per-request access logs.
func (lw *lineWriter) tail(n int) string {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	var last []string
	for i := len(lw.last) - 1; i >= 0 && len(last) < n; i-- {
		if !strings.Contains(lw.last[i], `"msg":"api: request"`) {
			last = append(last, lw.last[i])
		}
	}
	slices.Reverse(last)
	return strings.Join(last, "\n")
}

// contains reports whether any output line so far contains s.
func (lw *lineWriter) contains(s string) bool {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	for _, l := range lw.last {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}
