package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ragd/ragd/internal/testenv"
)

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func TestPostgresGivesFreshDatabaseWithVector(t *testing.T) {
	ctx := context.Background()
	a, b := testenv.Postgres(t), testenv.Postgres(t)
	ca, cb := connect(t, a), connect(t, b)

	var nameA, nameB string
	if err := ca.QueryRow(ctx, "SELECT current_database()").Scan(&nameA); err != nil {
		t.Fatal(err)
	}
	if err := cb.QueryRow(ctx, "SELECT current_database()").Scan(&nameB); err != nil {
		t.Fatal(err)
	}
	if nameA == nameB || nameA == "postgres" {
		t.Fatalf("databases %q and %q: want two distinct fresh databases", nameA, nameB)
	}

	var tables int
	if err := ca.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("fresh database has %d tables", tables)
	}

	var dist float64
	if err := ca.QueryRow(ctx, "SELECT '[1,2,3]'::vector <-> '[1,2,5]'::vector").Scan(&dist); err != nil {
		t.Fatalf("vector extension: %v", err)
	}
	if dist != 2 {
		t.Errorf("L2 distance = %v, want 2", dist)
	}

	// Isolation: a table in one database is invisible in the other.
	if _, err := ca.Exec(ctx, "CREATE TABLE only_in_a (id int)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := cb.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Error("a table created in one test database is visible in another")
	}
}

func TestPostgresDropsDatabaseAtCleanup(t *testing.T) {
	var dsn string
	t.Run("inner", func(t *testing.T) {
		dsn = testenv.Postgres(t)
		connect(t, dsn) // an open connection must not block the drop
	})
	if t.Skipped() || dsn == "" {
		t.Skip("no PostgreSQL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err == nil {
		c.Close(ctx)
		t.Fatal("the test database still exists after cleanup")
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3D000" { // invalid_catalog_name
		t.Fatalf("connect after cleanup: %v, want database does not exist (3D000)", err)
	}
}

// The admin DSN may be in keyword/value form as well as URL form.
func TestPostgresKeywordValueDSN(t *testing.T) {
	admin := os.Getenv(testenv.EnvPGDSN)
	if admin == "" {
		t.Skip(testenv.EnvPGDSN + " not set")
	}
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	kv := fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable",
		cfg.Host, cfg.Port, cfg.User, cfg.Database)
	if cfg.Password != "" {
		kv += " password=" + cfg.Password
	}
	t.Setenv(testenv.EnvPGDSN, kv)
	dsn := testenv.Postgres(t)
	var name string
	if err := connect(t, dsn).QueryRow(context.Background(), "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	if name == cfg.Database || !strings.HasPrefix(name, "t_") {
		t.Errorf("connected to %q, want a fresh test database", name)
	}
}

func TestDedicatedPostgresStopStartKeepsData(t *testing.T) {
	s := testenv.DedicatedPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	pool, err := pgxpool.New(ctx, s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE TABLE docs (id text PRIMARY KEY, embedding vector(3))"); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "INSERT INTO docs VALUES ('a', '[1,2,3]')"); err != nil {
		t.Fatal(err)
	}

	if err := s.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	pingCtx, pingCancel := context.WithTimeout(ctx, 10*time.Second)
	err = pool.Ping(pingCtx)
	pingCancel()
	if err == nil {
		t.Fatal("ping succeeded on a stopped server")
	}
	_, err = pgx.Connect(ctx, s.DSN)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("connect to a stopped server: %v, want connection refused", err)
	}

	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatalf("second Start: %v", err)
	}
	var emb string
	// The pool reconnects by itself once the server is back.
	if err := pool.QueryRow(ctx, "SELECT embedding::text FROM docs WHERE id = 'a'").Scan(&emb); err != nil {
		t.Fatalf("read after restart: %v", err)
	}
	if emb != "[1,2,3]" {
		t.Errorf("embedding after restart = %s, want [1,2,3]", emb)
	}
}

func TestDedicatedPostgresServersAreSeparate(t *testing.T) {
	a, b := testenv.DedicatedPostgres(t), testenv.DedicatedPostgres(t)
	if a.DSN == b.DSN {
		t.Fatalf("two dedicated servers share DSN %s", a.DSN)
	}
	ctx := context.Background()
	if _, err := connect(t, a.DSN).Exec(ctx, "CREATE TABLE only_in_a (id int)"); err != nil {
		t.Fatal(err)
	}
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := connect(t, b.DSN).QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").Scan(&n); err != nil {
		t.Fatalf("b after stopping a: %v", err)
	}
	if n != 0 {
		t.Error("a table of one dedicated server is visible in another")
	}
}
