// Package faultproxy is a TCP proxy that injects network faults between a
// client and a real server, for resilience tests and benchmarks.
//
// A Proxy listens on 127.0.0.1 on a free port and forwards every accepted
// connection to its target. Its mode can be switched at any time, from any
// goroutine:
//
//   - Pass forwards bytes both ways.
//   - Blackhole models a hung server or a network partition: new connections
//     are still accepted (the client's connect succeeds) and what clients
//     send is read, but nothing is ever forwarded or answered. Connections
//     that were already open stop forwarding too, in both directions.
//   - Refuse models a server that went away: every open connection is reset,
//     and new connections are accepted and reset at once, so clients fail
//     immediately instead of waiting for a deadline.
//
// Bytes read while blackholed are dropped, so a connection that lost data
// carries a broken protocol stream; switching back to Pass therefore closes
// such connections (and those accepted while blackholed), as a real client
// would after its timeout. Connections that stayed idle resume forwarding.
//
// Half-closes are not propagated: when either side ends a connection, the
// proxy closes both. Close stops the listener, closes every connection and
// returns once every goroutine the proxy started has exited.
package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Mode is what a Proxy does with traffic.
type Mode int32

// Modes, see the package comment.
const (
	ModePass Mode = iota
	ModeBlackhole
	ModeRefuse
)

// String returns "pass", "blackhole" or "refuse".
func (m Mode) String() string {
	switch m {
	case ModePass:
		return "pass"
	case ModeBlackhole:
		return "blackhole"
	case ModeRefuse:
		return "refuse"
	}
	return fmt.Sprintf("Mode(%d)", int32(m))
}

// DialTimeout bounds the proxy's connection attempt to the target; when it
// fails, the client's connection is reset.
const DialTimeout = 5 * time.Second

// bufSize is the chunk a pump reads and forwards at a time.
const bufSize = 32 << 10

// Stats are a Proxy's counters.
type Stats struct {
	// Accepted counts connections accepted and kept (forwarded or
	// blackholed); Refused counts connections reset on accept.
	Accepted, Refused int64
	// Open is the number of client connections currently held; a
	// connection the proxy closed on a mode change is no longer counted
	// once the mode change returns.
	Open int
	// Dropped counts bytes read and dropped while blackholed, both
	// directions.
	Dropped int64
}

// Proxy is a fault-injecting TCP proxy. Its methods are safe for
// concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	mode   atomic.Int32

	// ctx ends the proxy's dials when Close is called; it belongs to the
	// proxy's own goroutines.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	links  map[*link]struct{}
	wg     sync.WaitGroup

	accepted, refused, dropped atomic.Int64
}

// New starts a proxy in ModePass on 127.0.0.1 (a free port) forwarding to
// target, a host:port. The target is not dialled until a client connects.
func New(target string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("faultproxy: target %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{target: target, ln: ln, ctx: ctx, cancel: cancel, links: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the proxy's listening address, host:port on 127.0.0.1.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Mode returns the current mode.
func (p *Proxy) Mode() Mode { return Mode(p.mode.Load()) }

// Pass forwards traffic again. Connections that lost data while
// blackholed, or were accepted while blackholed, are closed.
func (p *Proxy) Pass() { p.setMode(ModePass) }

// Blackhole stops all forwarding: connections are accepted and read but
// never answered, on new and open connections alike.
func (p *Proxy) Blackhole() { p.setMode(ModeBlackhole) }

// Refuse resets every open connection and every new one as it arrives.
func (p *Proxy) Refuse() { p.setMode(ModeRefuse) }

// Stats returns the proxy's counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	open := len(p.links)
	p.mu.Unlock()
	return Stats{Accepted: p.accepted.Load(), Refused: p.refused.Load(), Open: open, Dropped: p.dropped.Load()}
}

// Close stops accepting, closes every connection and waits for the proxy's
// goroutines to exit. It is idempotent and always returns nil.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		p.cancel()
		p.ln.Close()
		for l := range p.links {
			l.close(true)
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

func (p *Proxy) setMode(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode.Store(int32(m))
	if p.closed {
		return
	}
	// A link closed here leaves the set at once, so that Stats.Open is
	// exact when setMode returns; its goroutines still end on their own
	// (Close waits for them) and their own remove is then a no-op.
	for l := range p.links {
		switch {
		case m == ModeRefuse:
			l.close(true)
			delete(p.links, l)
		case m == ModePass && l.isTainted():
			l.close(false)
			delete(p.links, l)
		}
	}
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || p.ctx.Err() != nil {
				return
			}
			// Out of file descriptors and the like: back off briefly.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
			continue
		}
		p.admit(c)
	}
}

// admit registers c according to the current mode.
func (p *Proxy) admit(c net.Conn) {
	p.mu.Lock()
	m := p.Mode()
	if p.closed || m == ModeRefuse {
		p.mu.Unlock()
		p.refused.Add(1)
		reset(c)
		c.Close()
		return
	}
	l := &link{p: p, client: c, tainted: m == ModeBlackhole}
	p.links[l] = struct{}{}
	p.wg.Add(1)
	p.mu.Unlock()
	p.accepted.Add(1)
	go l.run(m == ModeBlackhole)
}

func (p *Proxy) remove(l *link) {
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// link is one proxied client connection.
type link struct {
	p      *Proxy
	client net.Conn

	mu      sync.Mutex
	server  net.Conn // nil until dialled, or for a blackholed link
	tainted bool     // data was dropped (or it never had a server)
	closed  bool
}

// run serves the link until either side ends it. A link accepted while
// blackholed only reads and drops.
func (l *link) run(blackholed bool) {
	p := l.p
	defer p.wg.Done()
	defer p.remove(l)
	defer l.close(false)
	if blackholed {
		l.drain()
		return
	}
	d := net.Dialer{Timeout: DialTimeout}
	s, err := d.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		l.close(true)
		return
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		s.Close()
		return
	}
	l.server = s
	l.mu.Unlock()

	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer l.close(false)
		l.pump(s, l.client)
	}()
	l.pump(l.client, s)
}

// pump copies src to dst chunk by chunk, dropping chunks while the proxy is
// not passing traffic.
func (l *link) pump(src, dst net.Conn) {
	buf := make([]byte, bufSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if l.dropping() {
				l.p.dropped.Add(int64(n))
			} else if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// drain reads the client and drops everything until it goes away.
func (l *link) drain() {
	buf := make([]byte, bufSize)
	for {
		n, err := l.client.Read(buf)
		l.p.dropped.Add(int64(n))
		if err != nil {
			return
		}
	}
}

// dropping reports whether a chunk read now must be dropped, and marks the
// link tainted if so. The mode is read under the link's lock so that
// setMode, which stores the mode before inspecting links under their locks,
// never misses a taint.
func (l *link) dropping() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if Mode(l.p.mode.Load()) == ModePass {
		return false
	}
	l.tainted = true
	return true
}

func (l *link) isTainted() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tainted
}

// close closes both connections once; with rst the client sees a reset.
func (l *link) close(rst bool) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	s := l.server
	l.mu.Unlock()
	if rst {
		reset(l.client)
	}
	l.client.Close()
	if s != nil {
		s.Close()
	}
}

// reset makes the next Close send a TCP RST instead of a FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
}
