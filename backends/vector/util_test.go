package vector_test

import (
	"context"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"
	pgxvec "github.com/pgvector/pgvector-go/pgx"
)

func randVec(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// idx parses the number in an id such as "d0042".
func idx(id string) int {
	n, err := strconv.Atoi(strings.TrimLeft(id, "d"))
	if err != nil {
		panic(err)
	}
	return n
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if err := pgxvec.RegisterTypes(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	return conn
}

// withParams adds run-time parameters (name, value pairs) to a DSN in URL
// or keyword/value form; PostgreSQL applies them to every session.
func withParams(t *testing.T, dsn string, kv ...string) string {
	t.Helper()
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		for i := 0; i < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	for i := 0; i < len(kv); i += 2 {
		dsn += " " + kv[i] + "=" + kv[i+1]
	}
	return dsn
}

// analyze refreshes planner statistics, as autovacuum would after a load.
func analyze(t *testing.T, dsn string) {
	t.Helper()
	if _, err := connect(t, dsn).Exec(context.Background(), "ANALYZE"); err != nil {
		t.Fatal(err)
	}
}

// explain returns the plan of query with a vector as $1.
func explain(t *testing.T, dsn, query string, vec []float32, args ...any) string {
	t.Helper()
	conn := connect(t, dsn)
	rows, err := conn.Query(context.Background(), "EXPLAIN "+query, append([]any{pgvector.NewVector(vec)}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
