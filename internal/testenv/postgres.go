package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Server is a PostgreSQL server private to one test. DSN names its
// "postgres" database, which has the vector extension, as superuser.
type Server struct {
	DSN string
	ctl controller
}

// Stop stops the server: afterwards connections are refused. Stopping a
// stopped server is a no-op.
func (s *Server) Stop(ctx context.Context) error { return s.ctl.stop(ctx) }

// Start starts a stopped server again on the same port with the same data and
// returns once it accepts connections. Starting a running server is a no-op.
func (s *Server) Start(ctx context.Context) error { return s.ctl.start(ctx) }

// Kill ends the server at once, as a crash would (SIGKILL to the server
// and every process it started), and waits until it is gone; Start then
// runs crash recovery. Killing a stopped server is a no-op.
func (s *Server) Kill(ctx context.Context) error { return s.ctl.kill(ctx) }

// Pause freezes the server, as a hang would: a process server gets SIGSTOP
// (with every process it started), a container is paused (docker pause).
// Its port still accepts connections; nothing answers on them until
// Unpause. Pausing a paused server is a no-op.
func (s *Server) Pause(ctx context.Context) error { return s.ctl.pause(ctx) }

// Unpause lets a paused server run again and returns once it accepts
// connections.
func (s *Server) Unpause(ctx context.Context) error { return s.ctl.unpause(ctx) }

// controller stops, kills, starts, pauses and unpauses one dedicated
// server: a process (process) or a container (containerCtl).
type controller interface {
	stop(ctx context.Context) error
	kill(ctx context.Context) error
	start(ctx context.Context) error
	pause(ctx context.Context) error
	unpause(ctx context.Context) error
}

// Postgres returns the DSN of a fresh, empty database, with the vector
// extension created, on the shared PostgreSQL server. The database is dropped
// when the test ends. The shared server is RAG_TEST_PG_DSN (an admin DSN), or
// else a pgvector container when Docker is reachable; otherwise the test is
// skipped (failed when RAG_REQUIRE_INTEGRATION=1). With RAG_TESTENV=containers
// it is a container (RAG_PG_IMAGE) shared by the test process.
func Postgres(tb testing.TB) string {
	tb.Helper()
	admin := os.Getenv(EnvPGDSN)
	if useContainers(tb) {
		admin = ""
	}
	if admin == "" {
		if !dockerAvailable() {
			unavailable(tb, "PostgreSQL", "set "+EnvPGDSN+" to an admin DSN of a PostgreSQL server with pgvector")
		}
		var err error
		admin, err = sharedDockerPostgres()
		if err != nil {
			tb.Fatalf("testenv: shared PostgreSQL container: %v", err)
		}
	}
	dsn, err := createDatabase(tb, admin)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	return dsn
}

// createDatabase creates a uniquely named database on the server admin
// points at, creates the vector extension in it and registers its drop.
func createDatabase(tb testing.TB, admin string) (string, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("testenv: connect to shared PostgreSQL (%s): %w", redact(admin), err)
	}
	defer conn.Close(context.Background())

	name := uniqueName("t_", tb.Name(), 63)
	ident := pgx.Identifier{name}.Sanitize()
	for attempt := 0; ; attempt++ {
		_, err = conn.Exec(ctx, "CREATE DATABASE "+ident)
		// 55006: template1 is in use by another session creating a database.
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "55006" || attempt == 20 {
			break
		}
		time.Sleep(time.Duration(50+attempt*50) * time.Millisecond)
	}
	if err != nil {
		return "", fmt.Errorf("testenv: create database %s: %w", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			tb.Errorf("testenv: drop database %s: connect: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
			tb.Errorf("testenv: drop database %s: %v", name, err)
		}
	})

	dsn, err := withDatabase(admin, name)
	if err != nil {
		return "", err
	}
	if err := createVectorExtension(ctx, dsn); err != nil {
		return "", err
	}
	return dsn, nil
}

func createVectorExtension(ctx context.Context, dsn string) error {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("testenv: connect to %s: %w", redact(dsn), err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS vector"); err != nil {
		return fmt.Errorf("testenv: create extension vector (is pgvector installed?): %w", err)
	}
	return nil
}

// withDatabase returns dsn with its database replaced by name. Both URL
// (postgres://...) and keyword/value (host=... port=...) forms are accepted.
func withDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("testenv: parse %s: %w", EnvPGDSN, err)
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	// In keyword/value form a later keyword overrides an earlier one.
	return strings.TrimSpace(dsn) + " dbname=" + name, nil
}

// redact hides a password in a DSN for error messages.
func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		return u.String()
	}
	if i := strings.Index(dsn, "password="); i >= 0 {
		end := strings.IndexByte(dsn[i:], ' ')
		if end < 0 {
			return dsn[:i] + "password=xxxxx"
		}
		return dsn[:i] + "password=xxxxx" + dsn[i+end:]
	}
	return dsn
}

// DedicatedPostgres starts a PostgreSQL server private to the calling test
// and stops it when the test ends. The server is a throw-away cluster made
// with the binaries in RAG_TEST_PG_BIN (in the test's temporary directory, on
// a free loopback port), or else a pgvector container when Docker is
// reachable; otherwise the test is skipped (failed when
// RAG_REQUIRE_INTEGRATION=1). With RAG_TESTENV=containers it is a container
// (RAG_PG_IMAGE) on a fixed loopback port.
func DedicatedPostgres(tb testing.TB) *Server {
	tb.Helper()
	bin := os.Getenv(EnvPGBin)
	if useContainers(tb) {
		bin = ""
	}
	if bin == "" {
		if !dockerAvailable() {
			unavailable(tb, "dedicated PostgreSQL", "set "+EnvPGBin+" to a PostgreSQL bin directory (with initdb and postgres, and pgvector installed)")
		}
		s, err := dockerDedicatedPostgres(tb)
		if err != nil {
			tb.Fatalf("%v", err)
		}
		return s
	}
	s, err := nativePostgres(tb, bin)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	return s
}

func nativePostgres(tb testing.TB, bin string) (*Server, error) {
	tb.Helper()
	for _, exe := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(bin, exe)); err != nil {
			return nil, fmt.Errorf("testenv: %s=%s: %w", EnvPGBin, bin, err)
		}
	}
	owner, err := postgresUser()
	if err != nil {
		return nil, err
	}
	base := tb.TempDir()
	data := filepath.Join(base, "pgdata")
	if err := handOver(owner, data, filepath.Dir(base)); err != nil {
		return nil, err
	}
	logPath := filepath.Join(base, "postgres.log")

	initdb := &process{
		name:    "initdb",
		argv:    []string{filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"},
		logPath: logPath,
		user:    owner,
	}
	if err := runOnce(initdb); err != nil {
		return nil, err
	}

	var dsn string
	p, err := startOnFreePorts(tb, 1, func(ports []int) (*process, error) {
		port := ports[0]
		dsn = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
		return &process{
			name: fmt.Sprintf("postgres on port %d", port),
			argv: []string{filepath.Join(bin, "postgres"), "-D", data,
				"-p", fmt.Sprint(port),
				"-c", "listen_addresses=127.0.0.1",
				"-c", "unix_socket_directories=",
				"-c", "fsync=off",
				"-c", "shared_buffers=32MB",
				"-c", "max_connections=60",
			},
			logPath: logPath,
			user:    owner,
			stopSig: syscall.SIGINT, // "fast" shutdown: disconnects clients
			ready:   pingPostgres(dsn),
		}, nil
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := createVectorExtension(ctx, dsn); err != nil {
		return nil, err
	}
	return &Server{DSN: dsn, ctl: p}, nil
}

// runOnce runs a short-lived command (initdb) to completion.
func runOnce(p *process) error {
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testenv: %s: log: %w", p.name, err)
	}
	defer logf.Close()
	cmd := newCommand(p.argv, logf, p.user)
	cmd.Env = p.env
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("testenv: %s: %w; log %s:\n%s", p.name, err, p.logPath, tail(p.logPath, 4000))
	}
	return nil
}

// pingPostgres returns a readiness probe that connects to dsn and pings.
func pingPostgres(dsn string) func(context.Context) error {
	return func(ctx context.Context) error {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		return c.Ping(ctx)
	}
}
