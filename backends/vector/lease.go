package vector

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ragd/ragd/spi"
)

// leaseCheck is how often ApplyLease checks a held lease's connection, or
// tries again to take a lease another process holds.
const leaseCheck = time.Second

var _ spi.ApplyLeaser = (*Backend)(nil)

// leases are the apply leases of this process (spi.ApplyLeaser): one
// PostgreSQL session advisory lock per name, each on a connection of its
// own, outside the pool, which holds it for as long as the connection
// lives. Invariant: a lease with held set has a conn whose session holds
// the lock; mu guards the map and every lease.
type leases struct {
	mu     sync.Mutex
	m      map[string]*lease
	closed bool
}

type lease struct {
	conn *pgx.Conn // nil until connected, and after a failure
	held bool
	at   time.Time // the last check or attempt
}

// leaseKey is the advisory lock of the lease name on this table.
func (b *Backend) leaseKey(name string) string { return "ragd.apply:" + b.cfg.Table + ":" + name }

// ApplyLease implements spi.ApplyLeaser with a session advisory lock on
// a connection of its own: PostgreSQL releases it when the holder closes
// the backend, exits or loses the connection. A held lease's connection
// is pinged at most every second (so a lost one is noticed then); a
// lease another process holds is tried again at most every second, on the
// same connection.
func (b *Backend) ApplyLease(ctx context.Context, name string) (bool, error) {
	b.leases.mu.Lock()
	defer b.leases.mu.Unlock()
	if b.leases.closed {
		return false, wrapErr(ctx, "lease", spi.ErrUnavailable)
	}
	if b.leases.m == nil {
		b.leases.m = map[string]*lease{}
	}
	l := b.leases.m[name]
	if l == nil {
		l = &lease{}
		b.leases.m[name] = l
	}
	now := b.cfg.Now()
	if l.conn != nil && now.Sub(l.at) < leaseCheck {
		return l.held, nil
	}
	l.at = now
	if l.conn == nil {
		conn, err := pgx.ConnectConfig(ctx, b.pool.Config().ConnConfig.Copy())
		if err != nil {
			return false, wrapErr(ctx, "lease", err)
		}
		l.conn = conn
	}
	var err error
	if l.held {
		err = l.conn.Ping(ctx)
	} else {
		err = l.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtext($1))`, b.leaseKey(name)).Scan(&l.held)
	}
	if err != nil {
		// Closing the session releases the lock if it still held it.
		l.conn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // the connection is dropped either way
		l.conn, l.held = nil, false
		return false, wrapErr(ctx, "lease", err)
	}
	return l.held, nil
}

// closeLeases releases every lease; later calls fail.
func (b *Backend) closeLeases() {
	b.leases.mu.Lock()
	defer b.leases.mu.Unlock()
	b.leases.closed = true
	for _, l := range b.leases.m {
		if l.conn != nil {
			l.conn.Close(context.Background()) //nolint:errcheck // closing releases the lock
			l.conn, l.held = nil, false
		}
	}
}
