package vector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/ragd/ragd/spi"
)

// wrapErr wraps err from a database call made with ctx as
// "vector: <op>: ...", adding spi.ErrUnavailable when the failure is the
// server's or the network's, and the context's error when the caller gave
// up. It returns nil for a nil err.
func wrapErr(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		// The caller's cancellation or deadline is not the backend's fault.
		cause := context.Cause(ctx)
		if errors.Is(err, cause) || errors.Is(err, ctx.Err()) {
			return fmt.Errorf("vector: %s: %w", op, err)
		}
		return fmt.Errorf("vector: %s: %w (%v)", op, cause, err)
	}
	if unavailable(err) {
		return fmt.Errorf("vector: %s: %w: %v", op, spi.ErrUnavailable, err)
	}
	return fmt.Errorf("vector: %s: %w", op, err)
}

// unavailable reports whether err means the server could not serve the call:
// connection failures, lost connections, timeouts, a closed pool, and the
// SQLSTATE classes for connection exceptions (08), operator intervention
// such as shutdown (57P01..57P03) and insufficient resources (53).
func unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		code := pgErr.Code
		switch {
		case strings.HasPrefix(code, "08"), strings.HasPrefix(code, "53"):
			return true
		case code == "57P01", code == "57P02", code == "57P03", code == "57014":
			// admin_shutdown, crash_shutdown, cannot_connect_now,
			// query_canceled (statement_timeout or a server-side cancel).
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr),
		errors.As(err, &netErr),
		pgconn.SafeToRetry(err),
		pgconn.Timeout(err),
		errors.Is(err, puddle.ErrClosedPool),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, context.DeadlineExceeded):
		return true
	}
	// pgx reports use of a connection that died underneath it this way.
	return strings.Contains(err.Error(), "conn closed")
}
