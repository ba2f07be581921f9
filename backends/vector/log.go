package vector

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgvector/pgvector-go"

	"github.com/ragd/ragd/spi"
)

// The change log (spi.ChangeLog) is two tables beside the documents table
// (for the default table ragd_documents):
//
//	ragd_documents_log       seq bigint identity, op smallint, id text, at timestamptz
//	ragd_documents_log_meta  log_id text, compacted bigint (one row)
//
// and two columns of the documents table: version (the seq of the entry
// that last wrote the row, 0 for rows written before the log existed) and
// content_hash (spi.ContentHash). Every Commit takes a transaction-scoped
// advisory lock before appending, so sequences are assigned in commit
// order: a reader that sees entry n has seen every committed entry below
// it. Commits are serialised (across replicas too); each holds the lock
// only for its own short transaction.

var _ spi.ChangeLog = (*Backend)(nil)

// logQueries holds the SQL of the change log.
type logQueries struct {
	lock, upsert, delete, entries, current, versions, state, compact string
}

func (b *Backend) logTables() (log, meta string) {
	parts := strings.Split(b.cfg.Table, ".")
	base := parts[len(parts)-1]
	mk := func(suffix string) string {
		p := append([]string(nil), parts[:len(parts)-1]...)
		return pgx.Identifier(append(p, truncIdent(base+suffix))).Sanitize()
	}
	return mk("_log"), mk("_log_meta")
}

func (b *Backend) buildLogQueries() logQueries {
	log, meta := b.logTables()
	t := b.table
	return logQueries{
		lock: `SELECT pg_advisory_xact_lock(hashtext($1))`,
		// One statement per upsert: decide ownership and sameness on the
		// locked row, append the entry, write the row with its version.
		upsert: fmt.Sprintf(`WITH cur AS (SELECT tenant, version, content_hash FROM %[1]s WHERE id = $1 FOR UPDATE),
conflict AS (SELECT 1 WHERE ($12::text <> '' AND $2::text <> $12::text) OR EXISTS (SELECT 1 FROM cur WHERE $11::bool AND cur.tenant <> $2::text)),
same AS (SELECT version FROM cur WHERE version > 0 AND content_hash = $10::bytea AND NOT EXISTS (SELECT 1 FROM conflict)),
entry AS (INSERT INTO %[2]s (op, id) SELECT 1, $1 WHERE NOT EXISTS (SELECT 1 FROM conflict) AND NOT EXISTS (SELECT 1 FROM same) RETURNING seq),
up AS (INSERT INTO %[1]s (%[3]s, version, content_hash) SELECT $1, $2, $3::text, $4::text, $5::jsonb, $6::text[], $7::text[], $8::vector, $9::timestamptz, entry.seq, $10 FROM entry
       ON CONFLICT (id) DO UPDATE SET tenant = EXCLUDED.tenant, title = EXCLUDED.title, text = EXCLUDED.text,
       metadata = EXCLUDED.metadata, entities = EXCLUDED.entities, links = EXCLUDED.links,
       embedding = EXCLUDED.embedding, updated_at = EXCLUDED.updated_at,
       version = EXCLUDED.version, content_hash = EXCLUDED.content_hash RETURNING 1)
SELECT EXISTS (SELECT 1 FROM conflict), (SELECT version FROM same), (SELECT seq FROM entry), (SELECT count(*) FROM up)`, t, log, columns),
		delete: fmt.Sprintf(`WITH del AS (DELETE FROM %[1]s WHERE id = $1 AND ($2 = '' OR tenant = $2) RETURNING id),
entry AS (INSERT INTO %[2]s (op, id) SELECT 2, id FROM del RETURNING seq)
SELECT (SELECT seq FROM entry)`, t, log),
		entries:  fmt.Sprintf(`SELECT seq, op, id, at FROM %s WHERE seq > $1 ORDER BY seq LIMIT $2`, log),
		current:  fmt.Sprintf(`SELECT %s, version FROM %s WHERE id = ANY($1)`, columns, t),
		versions: fmt.Sprintf(`SELECT id, version FROM %s WHERE id > $1 ORDER BY id LIMIT $2`, t),
		state: fmt.Sprintf(`SELECT m.log_id, m.compacted, coalesce((SELECT min(seq) FROM %[2]s), 0), coalesce((SELECT max(seq) FROM %[2]s), 0) FROM %[1]s m LIMIT 1`,
			meta, log),
		// The newest entry always stays, so LogState.Last survives compaction.
		compact: fmt.Sprintf(`WITH gone AS (DELETE FROM %[1]s WHERE at < $1 AND seq <= $2 AND seq < (SELECT max(seq) FROM %[1]s) RETURNING seq),
mark AS (UPDATE %[2]s SET compacted = greatest(compacted, (SELECT max(seq) FROM gone)) WHERE EXISTS (SELECT 1 FROM gone))
SELECT count(*) FROM gone`, log, meta),
	}
}

// setupLog creates the log tables and columns inside the schema
// transaction of Open. A column that exists is not altered again: ALTER
// TABLE takes the table's exclusive lock even then, and a restart after a
// crash can find transactions of the killed process still holding locks
// (and waiting on the log's advisory lock): queueing behind them would be
// a deadlock.
func (b *Backend) setupLog(ctx context.Context, tx pgx.Tx) error {
	log, meta := b.logTables()
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return fmt.Errorf("vector: open: log id: %w", err)
	}
	for col, def := range map[string]string{"version": "bigint NOT NULL DEFAULT 0", "content_hash": "bytea"} {
		var has bool
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped)`,
			b.table, col).Scan(&has)
		if err == nil && !has {
			_, err = tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s %s`, b.table, col, def))
		}
		if err != nil {
			return wrapErr(ctx, "open: log schema", err)
		}
	}
	stmts := []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	op  smallint NOT NULL,
	id  text COLLATE "C" NOT NULL,
	at  timestamptz NOT NULL DEFAULT clock_timestamp()
)`, log),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (log_id text NOT NULL, compacted bigint NOT NULL DEFAULT 0)`, meta),
		fmt.Sprintf(`INSERT INTO %s (log_id) SELECT '%s' WHERE NOT EXISTS (SELECT 1 FROM %s)`, meta, hex.EncodeToString(id[:]), meta),
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return wrapErr(ctx, "open: log schema", err)
		}
	}
	return nil
}

// Commit implements spi.ChangeLog in one transaction. Each id may appear
// once per call (a repeated id wraps spi.ErrInvalidQuery). A document
// PostgreSQL cannot hold fails the whole call with spi.ErrInvalidQuery, so
// the caller can bisect; documents that fail ragd's own checks get their
// own WriteResult.Err instead. A COMMIT whose answer is lost wraps
// spi.ErrOutcomeUnknown.
func (b *Backend) Commit(ctx context.Context, writes []spi.Write) ([]spi.WriteResult, error) {
	out := make([]spi.WriteResult, len(writes))
	now := b.cfg.Now().UTC()
	batch := &pgx.Batch{}
	batch.Queue(b.lq.lock, "ragd.log:"+b.cfg.Table)
	var order []queuedWrite
	seen := make(map[string]bool, len(writes))
	for i, w := range writes {
		id := w.Doc.ID
		if seen[id] {
			return nil, fmt.Errorf("vector: commit: %w: id %q appears twice", spi.ErrInvalidQuery, id)
		}
		seen[id] = true
		switch w.Op {
		case spi.OpDelete:
			if !storable(id) || id == "" {
				out[i].Err = spi.ErrNotFound
				continue
			}
			batch.Queue(b.lq.delete, id, w.Scope)
			order = append(order, queuedWrite{i, false})
		case spi.OpUpsert:
			d := w.Doc
			if err := validateDoc(&d); err != nil {
				out[i].Err = fmt.Errorf("vector: commit: %w", err)
				continue
			}
			if err := b.checkVector(d.Vector); err != nil {
				out[i].Err = fmt.Errorf("vector: commit: document %q: %w", d.ID, err)
				continue
			}
			if d.UpdatedAt.IsZero() {
				d.UpdatedAt = now
			}
			md := d.Metadata
			if md == nil {
				md = map[string]string{}
			}
			h := spi.ContentHash(d)
			batch.Queue(b.lq.upsert, d.ID, d.Tenant, d.Title, d.Text, md, nonNil(d.Entities), nonNil(d.Links),
				pgvector.NewVector(d.Vector), d.UpdatedAt, h[:], w.KeepTenant, w.Scope)
			order = append(order, queuedWrite{i, true})
		default:
			out[i].Err = fmt.Errorf("vector: commit: %w: unknown op %d", spi.ErrInvalidQuery, w.Op)
		}
	}
	if len(order) == 0 {
		return out, nil
	}
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		return nil, wrapErr(ctx, "commit", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	if err := b.runCommitBatch(ctx, tx, batch, order, out); err != nil {
		return nil, commitErr(ctx, err)
	}
	if err := tx.Commit(ctx); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return nil, commitErr(ctx, err)
		}
		// The COMMIT was sent; whether it took effect is unknown.
		return nil, fmt.Errorf("vector: commit: %w: %w", spi.ErrOutcomeUnknown, wrapErr(ctx, "commit", err))
	}
	return out, nil
}

// queuedWrite is a write queued in a commit batch: its index and whether
// it is an upsert.
type queuedWrite struct {
	i  int
	up bool
}

func (b *Backend) runCommitBatch(ctx context.Context, tx pgx.Tx, batch *pgx.Batch, order []queuedWrite, out []spi.WriteResult) (err error) {
	br := tx.SendBatch(ctx, batch)
	defer func() {
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := br.Exec(); err != nil {
		return err
	}
	for _, q := range order {
		o := &out[q.i]
		if !q.up {
			var seq *int64
			if err := br.QueryRow().Scan(&seq); err != nil {
				return err
			}
			if seq == nil {
				o.Err = spi.ErrNotFound
			} else {
				o.Version, o.Changed = uint64(*seq), true
			}
			continue
		}
		var conflict bool
		var same, seq *int64
		var n int64
		if err := br.QueryRow().Scan(&conflict, &same, &seq, &n); err != nil {
			return err
		}
		switch {
		case conflict:
			o.Err = spi.ErrTenantConflict
		case same != nil:
			o.Version = uint64(*same)
		case seq != nil:
			o.Version, o.Changed = uint64(*seq), true
		}
	}
	return nil
}

// commitErr classifies a failed commit: data the server refused is the
// documents' fault (spi.ErrInvalidQuery), the rest as wrapErr does.
func commitErr(ctx context.Context, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23")) {
		return fmt.Errorf("vector: commit: %w: %s", spi.ErrInvalidQuery, pgErr.Message)
	}
	return wrapErr(ctx, "commit", err)
}

// Changes implements spi.ChangeLog. The entries and the documents are read
// by two queries; a document written in between is returned in its newer
// state, which appliers accept (its own entry follows).
func (b *Backend) Changes(ctx context.Context, after uint64, limit int) ([]spi.Change, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := b.pool.Query(ctx, b.lq.entries, int64(after), limit)
	if err != nil {
		return nil, wrapErr(ctx, "changes", err)
	}
	var out []spi.Change
	var ids []string
	for rows.Next() {
		var seq int64
		var op int16
		var c spi.Change
		if err := rows.Scan(&seq, &op, &c.ID, &c.At); err != nil {
			rows.Close()
			return nil, wrapErr(ctx, "changes", err)
		}
		c.Seq, c.Op, c.At = uint64(seq), spi.Op(op), c.At.UTC()
		out = append(out, c)
		ids = append(ids, c.ID)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr(ctx, "changes", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	cur, err := b.current(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i := range out {
		fillChange(&out[i], cur, out[i].Seq)
	}
	return out, nil
}

type versioned struct {
	doc     spi.Document
	version uint64
}

func (b *Backend) current(ctx context.Context, ids []string) (map[string]versioned, error) {
	rows, err := b.pool.Query(ctx, b.lq.current, ids)
	if err != nil {
		return nil, wrapErr(ctx, "changes", err)
	}
	defer rows.Close()
	out := make(map[string]versioned, len(ids))
	for rows.Next() {
		var v int64
		d, err := scanDoc(rows, &v)
		if err != nil {
			return nil, wrapErr(ctx, "changes", err)
		}
		out[d.ID] = versioned{d, uint64(v)}
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr(ctx, "changes", err)
	}
	return out, nil
}

func fillChange(c *spi.Change, cur map[string]versioned, tomb uint64) {
	if v, ok := cur[c.ID]; ok {
		d := v.doc
		c.Doc, c.Version = &d, v.version
		return
	}
	c.Doc, c.Version = nil, tomb
}

// Current implements spi.ChangeLog.
func (b *Backend) Current(ctx context.Context, ids []string) ([]spi.Change, error) {
	st, err := b.LogState(ctx)
	if err != nil {
		return nil, err
	}
	query := make([]string, 0, len(ids))
	for _, id := range ids {
		if storable(id) {
			query = append(query, id)
		}
	}
	cur, err := b.current(ctx, query)
	if err != nil {
		return nil, err
	}
	out := make([]spi.Change, len(ids))
	for i, id := range ids {
		out[i].ID = id
		fillChange(&out[i], cur, st.Last)
	}
	return out, nil
}

// LogState implements spi.ChangeLog.
func (b *Backend) LogState(ctx context.Context) (spi.LogState, error) {
	var st spi.LogState
	var compacted, first, last int64
	if err := b.pool.QueryRow(ctx, b.lq.state).Scan(&st.ID, &compacted, &first, &last); err != nil {
		return spi.LogState{}, wrapErr(ctx, "log state", err)
	}
	st.Compacted, st.First, st.Last = uint64(compacted), uint64(first), uint64(last)
	return st, nil
}

// Versions implements spi.ChangeLog, in pages of Config.ScanPageSize.
func (b *Backend) Versions(ctx context.Context, fn func(id string, version uint64) error) error {
	after := ""
	for {
		rows, err := b.pool.Query(ctx, b.lq.versions, after, b.cfg.ScanPageSize)
		if err != nil {
			return wrapErr(ctx, "versions", err)
		}
		type iv struct {
			id string
			v  int64
		}
		page := make([]iv, 0, b.cfg.ScanPageSize)
		for rows.Next() {
			var p iv
			if err := rows.Scan(&p.id, &p.v); err != nil {
				rows.Close()
				return wrapErr(ctx, "versions", err)
			}
			page = append(page, p)
		}
		if err := rows.Err(); err != nil {
			return wrapErr(ctx, "versions", err)
		}
		for _, p := range page {
			if err := fn(p.id, uint64(p.v)); err != nil {
				return err
			}
		}
		if len(page) < b.cfg.ScanPageSize {
			return nil
		}
		after = page[len(page)-1].id
	}
}

// CompactLog implements spi.ChangeLog; the newest entry is always kept.
func (b *Backend) CompactLog(ctx context.Context, before time.Time, upTo uint64) (int, error) {
	var n int64
	if err := b.pool.QueryRow(ctx, b.lq.compact, before, int64(upTo)).Scan(&n); err != nil {
		return 0, wrapErr(ctx, "compact log", err)
	}
	return int(n), nil
}
