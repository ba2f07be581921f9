package vector_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/ragd/ragd/backends/vector"
	"github.com/ragd/ragd/spi"
)

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name        string
		err         error
		unavailable bool
	}{
		{"connection failure 08006", &pgconn.PgError{Code: "08006"}, true},
		{"admin shutdown 57P01", &pgconn.PgError{Code: "57P01"}, true},
		{"cannot connect now 57P03", &pgconn.PgError{Code: "57P03"}, true},
		{"too many connections 53300", &pgconn.PgError{Code: "53300"}, true},
		{"statement timeout 57014", &pgconn.PgError{Code: "57014"}, true},
		{"unique violation 23505", &pgconn.PgError{Code: "23505"}, false},
		{"syntax error 42601", &pgconn.PgError{Code: "42601"}, false},
		{"undefined table 42P01", &pgconn.PgError{Code: "42P01"}, false},
		{"refused dial", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"unexpected EOF", fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF), true},
		{"closed pool", puddle.ErrClosedPool, true},
		{"plain error", errors.New("cannot scan into map"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := vector.WrapErr(context.Background(), "retrieve", tt.err)
			if got := errors.Is(err, spi.ErrUnavailable); got != tt.unavailable {
				t.Fatalf("WrapErr(%v) unavailable = %v, want %v (%v)", tt.err, got, tt.unavailable, err)
			}
			if !errors.Is(err, tt.err) && !tt.unavailable {
				t.Errorf("WrapErr(%v) lost the cause: %v", tt.err, err)
			}
		})
	}
	if vector.WrapErr(context.Background(), "x", nil) != nil {
		t.Error("WrapErr(nil) != nil")
	}
}

// The caller's own cancellation is never the backend's fault, even when the
// driver reports it as a broken connection.
func TestErrorMappingCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := vector.WrapErr(ctx, "retrieve", fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF))
	if errors.Is(err, spi.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call mapped to %v, want context.Canceled and not ErrUnavailable", err)
	}
	cause := errors.New("budget spent")
	ctx, cancel2 := context.WithCancelCause(context.Background())
	cancel2(cause)
	if err := vector.WrapErr(ctx, "retrieve", context.Canceled); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled with cause: %v, want it to wrap context.Canceled", err)
	}
	if err := vector.WrapErr(ctx, "retrieve", io.EOF); !errors.Is(err, cause) {
		t.Fatalf("cancelled with cause: %v, want it to wrap the cause", err)
	}
}
