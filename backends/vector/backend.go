package vector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/ragd/ragd/spi"
)

// Backend is the pgvector store. It is safe for concurrent use.
type Backend struct {
	cfg   Config
	pool  *pgxpool.Pool
	table string // sanitized, possibly schema-qualified identifier
	meta  string // sanitized ragd_meta table in the same schema
	op    string // distance operator
	q     queries
	lq    logQueries
	// idx is the HNSW index queries plan against (index.go).
	idx atomic.Pointer[indexState]
	// pending is the tail the last IndexStep found; -1 before one ran.
	pending atomic.Int64
	// leases are the apply leases this process holds or asks for (lease.go).
	leases leases
	// head is the change log's head as this process's index steps last
	// saw it change (index.go, headQuiet).
	head struct {
		mu   sync.Mutex
		seen bool
		seq  int64
		at   time.Time
	}
	// buildHook and commitHook are for interleaving tests only: called
	// before a bulk build's CREATE INDEX (with its V) and before a
	// commit's COMMIT.
	buildHook  func(v int64)
	commitHook func()
}

// Interface guards.
var (
	_ spi.VectorRetrievalBackend = (*Backend)(nil)
	_ spi.Indexer                = (*Backend)(nil)
	_ spi.Scanner                = (*Backend)(nil)
	_ spi.Dimensioner            = (*Backend)(nil)
	_ spi.Closer                 = (*Backend)(nil)
)

// Open validates cfg, connects, and creates the extension, table and indexes
// if they do not exist. Concurrent Opens against one database serialise on
// an advisory lock. An existing table whose embedding column has another
// dimension is an error naming both dimensions. A server that cannot be
// reached yields an error wrapping spi.ErrUnavailable within
// cfg.ConnectTimeout.
func Open(ctx context.Context, cfg Config) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	pcfg, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, errors.New("vector: open: DSN does not parse")
	}
	pcfg.ConnConfig.ConnectTimeout = cfg.ConnectTimeout
	if cfg.MaxConns > 0 {
		pcfg.MaxConns = cfg.MaxConns
	}
	pcfg.MinConns = cfg.MinConns

	b := &Backend{cfg: cfg}
	b.pending.Store(-1)
	parts := strings.Split(cfg.Table, ".")
	b.table = pgx.Identifier(parts).Sanitize()
	b.meta = pgx.Identifier(append(parts[:len(parts)-1:len(parts)-1], "ragd_meta")).Sanitize()
	b.op, _ = cfg.Distance.operator()
	b.q = buildQueries(b.table, b.meta)
	b.lq = b.buildLogQueries()

	// The vector type exists only once the extension does, so the schema is
	// set up on a plain connection before the pool registers the codec on
	// each of its connections.
	if err := b.setupSchema(ctx, pcfg.ConnConfig.Copy()); err != nil {
		return nil, err
	}
	pcfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		return pgxvec.RegisterTypes(ctx, conn)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, wrapErr(ctx, "open", err)
	}
	b.pool = pool
	return b, nil
}

// Dimension reports the configured vector dimension.
func (b *Backend) Dimension() int { return b.cfg.Dimension }

// Distance reports the configured distance.
func (b *Backend) Distance() Distance { return b.cfg.Distance }

// Close releases the pool. Calls after Close fail with spi.ErrUnavailable.
func (b *Backend) Close() error {
	b.closeLeases()
	b.pool.Close()
	return nil
}

// Health pings the server through the pool. It never returns an error: an
// unreachable server is spi.StatusDown with a short reason. When this
// process's indexer last found rows outside the HNSW index, the detail
// says how many.
func (b *Backend) Health(ctx context.Context) spi.Health {
	start := b.cfg.Now()
	err := b.pool.Ping(ctx)
	lat := b.cfg.Now().Sub(start)
	if err != nil {
		detail := "ping failed"
		switch {
		case ctx.Err() != nil:
			detail = "ping: " + ctx.Err().Error()
		case unavailable(err):
			detail = "ping: server unreachable"
		}
		return spi.Health{Status: spi.StatusDown, Detail: detail, Latency: lat}
	}
	h := spi.Health{Status: spi.StatusUp, Latency: lat}
	if n, ok := b.Pending(); ok && n > 0 {
		h.Detail = fmt.Sprintf("%d rows not yet in the HNSW index (searched exactly meanwhile)", n)
	}
	return h
}

// setupSchema creates the extension, table and indexes in one transaction
// under a transaction-scoped advisory lock keyed by the table name, then
// checks the embedding column's dimension.
func (b *Backend) setupSchema(ctx context.Context, ccfg *pgx.ConnConfig) error {
	conn, err := pgx.ConnectConfig(ctx, ccfg)
	if err != nil {
		return wrapErr(ctx, "open: connect", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	cfg := b.cfg
	parts := strings.Split(cfg.Table, ".")
	base := parts[len(parts)-1]
	idx := func(suffix string) string { return pgx.Identifier{truncIdent(base + "_" + suffix)}.Sanitize() }

	stmts := []string{
		`SELECT pg_advisory_xact_lock(hashtext('ragd.vector.schema'))`,
		`CREATE EXTENSION IF NOT EXISTS vector`,
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	id         text COLLATE "C" PRIMARY KEY,
	tenant     text NOT NULL DEFAULT '',
	title      text NOT NULL DEFAULT '',
	text       text NOT NULL DEFAULT '',
	metadata   jsonb NOT NULL DEFAULT '{}',
	entities   text[] NOT NULL DEFAULT '{}',
	links      text[] NOT NULL DEFAULT '{}',
	embedding  vector(%d) NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT now()
)`, b.table, cfg.Dimension),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (key text PRIMARY KEY, value text NOT NULL)`, b.meta),
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return wrapErr(ctx, "open: schema", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return wrapErr(ctx, "open: schema", err)
		}
	}
	// A new table keeps vectors inline (STORAGE MAIN: compressed or moved
	// out only as a last resort), so exact scans of the tail and bulk
	// index builds do not fetch each vector from the TOAST table. An
	// existing table is left as it is (ALTER TABLE locks it).
	var storage string
	var empty bool
	if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT a.attstorage::text, NOT EXISTS (SELECT 1 FROM %s) FROM pg_attribute a
WHERE a.attrelid = to_regclass($1) AND a.attname = 'embedding' AND NOT a.attisdropped`, b.table), b.table).Scan(&storage, &empty); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return wrapErr(ctx, "open: schema", err)
	}
	if storage == "e" && empty {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s ALTER COLUMN embedding SET STORAGE MAIN`, b.table)); err != nil {
			return wrapErr(ctx, "open: schema", err)
		}
	}
	// Check the dimension before building an index over a foreign column.
	var typmod int
	var typ string
	err = tx.QueryRow(ctx, `
SELECT a.atttypmod, format_type(a.atttypid, a.atttypmod)
FROM pg_attribute a
WHERE a.attrelid = to_regclass($1) AND a.attname = 'embedding' AND NOT a.attisdropped`, b.table).Scan(&typmod, &typ)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("vector: open: table %s exists but has no embedding column", cfg.Table)
	}
	if err != nil {
		return wrapErr(ctx, "open: schema", err)
	}
	if !strings.HasPrefix(typ, "vector") {
		return fmt.Errorf("vector: open: table %s: embedding column has type %s, want vector(%d)", cfg.Table, typ, cfg.Dimension)
	}
	if typmod != cfg.Dimension {
		return &DimensionMismatchError{Table: cfg.Table, Existing: typmod, Configured: cfg.Dimension}
	}
	more := []struct{ name, ddl string }{
		{"tenant_idx", `CREATE INDEX IF NOT EXISTS %s ON %s (tenant)`},
		{"metadata_idx", `CREATE INDEX IF NOT EXISTS %s ON %s USING gin (metadata jsonb_path_ops)`},
	}
	for _, ix := range more {
		// CREATE INDEX locks the table even when the index exists: only
		// run it when it does not (see setupLog).
		var has bool
		name := pgx.Identifier(append(parts[:len(parts)-1:len(parts)-1], truncIdent(base+"_"+ix.name))).Sanitize()
		err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&has)
		if err == nil && !has {
			_, err = tx.Exec(ctx, fmt.Sprintf(ix.ddl, idx(ix.name), b.table))
		}
		if err != nil {
			return wrapErr(ctx, "open: schema", err)
		}
	}
	if err := b.checkEmbedder(ctx, tx); err != nil {
		return err
	}
	if err := b.setupLog(ctx, tx); err != nil {
		return err
	}
	st, err := b.setupIndex(ctx, tx)
	if err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return wrapErr(ctx, "open: schema", err)
	}
	b.idx.Store(&st)
	cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "vector: schema ready",
		slog.String("table", cfg.Table), slog.Int("dimension", cfg.Dimension), slog.String("distance", string(cfg.Distance)))
	return nil
}

// EmbedderChangedError is returned by Open when the table's vectors were
// made by another embedder than the configured one (Config.Embedder).
// Vectors of two embedders are not comparable: rebuild them with the
// configured one (ragd reembed) or configure the previous embedder.
type EmbedderChangedError struct {
	Table      string
	Recorded   string
	Configured string
}

func (e *EmbedderChangedError) Error() string {
	return fmt.Sprintf("vector: open: table %s holds vectors made by embedder [%s] but the configured embedder is [%s]; "+
		"vectors of different embedders cannot be compared: run `ragd reembed` to rebuild them with the configured embedder, "+
		"or configure the previous one", e.Table, e.Recorded, e.Configured)
}

// embedderKey is the ragd_meta key of the table's embedder identity.
func (b *Backend) embedderKey() string { return "embedder:" + b.cfg.Table }

// checkEmbedder records Config.Embedder for a table that records none or
// holds no row, and fails with *EmbedderChangedError when the table
// records another.
func (b *Backend) checkEmbedder(ctx context.Context, tx pgx.Tx) error {
	if b.cfg.Embedder == "" {
		return nil
	}
	var rec string
	err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT value FROM %s WHERE key = $1`, b.meta), b.embedderKey()).Scan(&rec)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return wrapErr(ctx, "open: embedder", err)
	}
	if rec == b.cfg.Embedder {
		return nil
	}
	if rec != "" {
		var rows bool
		if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %s)`, b.table)).Scan(&rows); err != nil {
			return wrapErr(ctx, "open: embedder", err)
		}
		if rows {
			return &EmbedderChangedError{Table: b.cfg.Table, Recorded: rec, Configured: b.cfg.Embedder}
		}
	}
	return b.putEmbedder(ctx, tx, b.cfg.Embedder)
}

func (b *Backend) putEmbedder(ctx context.Context, db interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, id string) error {
	_, err := db.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (key, value) VALUES ($1, $2)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, b.meta), b.embedderKey(), id)
	if err != nil {
		return wrapErr(ctx, "embedder", err)
	}
	return nil
}

// Embedder returns the identity of the embedder recorded with the vectors,
// "" when none is.
func (b *Backend) Embedder(ctx context.Context) (string, error) {
	var id string
	err := b.pool.QueryRow(ctx, fmt.Sprintf(`SELECT value FROM %s WHERE key = $1`, b.meta), b.embedderKey()).Scan(&id)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", wrapErr(ctx, "embedder", err)
	}
	return id, nil
}

// RecordEmbedder records id as the identity of the embedder that made the
// stored vectors, once they have all been rebuilt with it.
func (b *Backend) RecordEmbedder(ctx context.Context, id string) error {
	return b.putEmbedder(ctx, b.pool, id)
}

// truncIdent keeps an identifier within PostgreSQL's 63-byte limit.
func truncIdent(s string) string {
	if len(s) > 63 {
		return s[:63]
	}
	return s
}

// DimensionMismatchError is returned by Open when the table's embedding
// column was created with a different dimension than configured.
type DimensionMismatchError struct {
	Table      string
	Existing   int
	Configured int
}

func (e *DimensionMismatchError) Error() string {
	return fmt.Sprintf("vector: open: table %s stores vector(%d) but the configured dimension is %d; "+
		"use the embedder the table was built with, or another table", e.Table, e.Existing, e.Configured)
}
