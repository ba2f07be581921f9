package faultproxy_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ragd/ragd/internal/faultproxy"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// echoServer is a real TCP echo server that counts the bytes it received.
type echoServer struct {
	ln       net.Listener
	received atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{ln: ln, conns: map[net.Conn]struct{}{}}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.conns[c] = struct{}{}
			e.mu.Unlock()
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					e.received.Add(int64(n))
					if n > 0 {
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(e.close)
	return e
}

func (e *echoServer) addr() string { return e.ln.Addr().String() }

func (e *echoServer) close() {
	e.ln.Close()
	e.mu.Lock()
	for c := range e.conns {
		c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

func newProxy(t *testing.T, target string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg and reads the echo within 5s.
func roundTrip(c net.Conn, msg string) error {
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	if _, err := io.WriteString(c, msg); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if string(got) != msg {
		return fmt.Errorf("echo = %q, want %q", got, msg)
	}
	return nil
}

// expectSilence writes msg and requires that nothing comes back for d while
// the connection stays open.
func expectSilence(t *testing.T, c net.Conn, msg string, d time.Duration) {
	t.Helper()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatalf("write while blackholed: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 1)
	n, err := c.Read(buf)
	if n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read while blackholed = %d, %v; want nothing until the deadline", n, err)
	}
}

// expectClosed requires that the peer ends c (EOF or reset) within 5s.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("connection still open after 5s, want closed by the proxy")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestNewRejectsBadTarget(t *testing.T) {
	for _, target := range []string{"", "localhost", "127.0.0.1:1:2"} {
		if p, err := faultproxy.New(target); err == nil {
			p.Close()
			t.Errorf("New(%q) = nil error", target)
		}
	}
}

func TestPassForwardsBothWays(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	if p.Mode() != faultproxy.ModePass {
		t.Fatalf("initial mode = %v, want pass", p.Mode())
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", p.Addr())
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for j := range 20 {
				if err := roundTrip(c, fmt.Sprintf("client %d message %d\n", i, j)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A payload larger than one chunk arrives whole and in order.
	c := dial(t, p.Addr())
	big := make([]byte, 300<<10)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	if err := roundTrip(c, string(big)); err != nil {
		t.Fatalf("large payload: %v", err)
	}
	if s := p.Stats(); s.Accepted != 9 || s.Refused != 0 || s.Dropped != 0 {
		t.Fatalf("stats = %+v, want 9 accepted, nothing refused or dropped", s)
	}
}

func TestBlackholeNewConnection(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	p.Blackhole()
	c := dial(t, p.Addr()) // the connect itself succeeds
	expectSilence(t, c, "hello?", 150*time.Millisecond)
	waitFor(t, "the proxy to read the bytes", func() bool { return p.Stats().Dropped == int64(len("hello?")) })
	if n := e.received.Load(); n != 0 {
		t.Fatalf("server received %d bytes through a blackholed proxy", n)
	}
	if s := p.Stats(); s.Accepted != 1 || s.Open != 1 {
		t.Fatalf("stats = %+v, want the connection accepted and held open", s)
	}
}

func TestBlackholeStopsOpenConnections(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	if err := roundTrip(c, "before"); err != nil {
		t.Fatal(err)
	}
	p.Blackhole()
	before := e.received.Load()
	expectSilence(t, c, "during", 150*time.Millisecond)
	if got := e.received.Load(); got != before {
		t.Fatalf("server received %d more bytes after Blackhole", got-before)
	}
	if p.Stats().Dropped == 0 {
		t.Fatal("no bytes dropped: the proxy did not read the blackholed connection")
	}
}

func TestPassAfterBlackhole(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	idle := dial(t, p.Addr())    // open before, unused during the blackhole
	tainted := dial(t, p.Addr()) // open before, loses data during it
	for _, c := range []net.Conn{idle, tainted} {
		if err := roundTrip(c, "warm"); err != nil {
			t.Fatal(err)
		}
	}
	p.Blackhole()
	late := dial(t, p.Addr()) // accepted while blackholed
	expectSilence(t, tainted, "lost", 100*time.Millisecond)
	expectSilence(t, late, "lost too", 100*time.Millisecond)

	p.Pass()
	expectClosed(t, tainted)
	expectClosed(t, late)
	if err := roundTrip(idle, "resumed"); err != nil {
		t.Fatalf("idle connection after Pass: %v", err)
	}
	if err := roundTrip(dial(t, p.Addr()), "fresh"); err != nil {
		t.Fatalf("new connection after Pass: %v", err)
	}
}

func TestRefuse(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	open := dial(t, p.Addr())
	if err := roundTrip(open, "x"); err != nil {
		t.Fatal(err)
	}
	p.Refuse()
	expectClosed(t, open)

	start := time.Now()
	c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	if err == nil {
		defer c.Close()
		err = roundTrip(c, "anyone?")
	}
	if err == nil {
		t.Fatal("round trip through a refusing proxy succeeded")
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("refused connection hung until the deadline (%v) instead of failing fast", time.Since(start))
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.EPIPE) {
		t.Logf("refused with %v", err) // still a failure, just an unusual one
	}
	waitFor(t, "refusal to be counted", func() bool { return p.Stats().Refused >= 1 })
	if s := p.Stats(); s.Open != 0 {
		t.Fatalf("stats = %+v, want no open connection", s)
	}

	p.Pass()
	if err := roundTrip(dial(t, p.Addr()), "back"); err != nil {
		t.Fatalf("after Pass: %v", err)
	}
}

func TestTargetDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Close the target only after the proxy has its own port, or the
	// proxy could be given the very port it forwards to.
	p := newProxy(t, ln.Addr().String())
	ln.Close() // nothing listens there any more
	// The proxy resets the client as soon as its own dial fails; on
	// loopback that can beat the client's connect to completion.
	if c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second); err == nil {
		defer c.Close()
		expectClosed(t, c)
	} else if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("dial = %v, want success or a reset", err)
	}
	waitFor(t, "the failed link to go", func() bool { return p.Stats().Open == 0 })
}

func TestServerClosesConnection(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	if err := roundTrip(c, "x"); err != nil {
		t.Fatal(err)
	}
	e.close()
	expectClosed(t, c)
	waitFor(t, "the link to go", func() bool { return p.Stats().Open == 0 })
}

func TestCloseEndsEverything(t *testing.T) {
	e := startEcho(t)
	p, err := faultproxy.New(e.addr())
	if err != nil {
		t.Fatal(err)
	}
	passing := dial(t, p.Addr())
	if err := roundTrip(passing, "x"); err != nil {
		t.Fatal(err)
	}
	p.Blackhole()
	held := dial(t, p.Addr())
	io.WriteString(held, "y")
	waitFor(t, "the held connection", func() bool { return p.Stats().Open == 2 })

	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	expectClosed(t, passing)
	expectClosed(t, held)
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatal("dial after Close succeeded")
	}
	p.Close() // idempotent
	p.Pass()  // harmless after Close
	// goleak (TestMain) checks that no proxy goroutine survived.
}

// TestConcurrentModeSwitches hammers the proxy with traffic while the mode
// flips; under -race it checks the locking, and afterwards the proxy must
// still pass traffic and leave no goroutine behind.
func TestConcurrentModeSwitches(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var ok atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
				if err != nil {
					continue
				}
				c.SetDeadline(time.Now().Add(50 * time.Millisecond))
				w := bufio.NewWriter(c)
				w.WriteString("ping")
				w.Flush()
				buf := make([]byte, 4)
				if _, err := io.ReadFull(c, buf); err == nil {
					ok.Add(1)
				}
				c.Close()
			}
		}()
	}
	modes := []func(){p.Pass, p.Blackhole, p.Pass, p.Refuse}
	for i := range 200 {
		modes[i%len(modes)]()
		_ = p.Stats()
		time.Sleep(time.Millisecond)
	}
	p.Pass()
	close(stop)
	wg.Wait()
	if ok.Load() == 0 {
		t.Fatal("no round trip succeeded while passing")
	}
	if err := roundTrip(dial(t, p.Addr()), "still works"); err != nil {
		t.Fatal(err)
	}
}

func TestModeString(t *testing.T) {
	for m, want := range map[faultproxy.Mode]string{
		faultproxy.ModePass: "pass", faultproxy.ModeBlackhole: "blackhole", faultproxy.ModeRefuse: "refuse", faultproxy.Mode(9): "Mode(9)",
	} {
		if got := m.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int32(m), got, want)
		}
	}
}
