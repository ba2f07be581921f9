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
// for its own transaction, which writes a whole batch in two set-based
// statements and leaves the HNSW index to the indexer (index.go).

var _ spi.ChangeLog = (*Backend)(nil)

// logQueries holds the SQL of the change log.
type logQueries struct {
	lock, upsert, delete, entries, current, changed, versions, state, compact string
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
		// One statement for all the upserts of a batch: lock the rows
		// that exist (in id order), decide ownership and sameness on
		// them, append the entries in input order, write the rows with
		// their versions, outside the HNSW index (indexed = false).
		upsert: fmt.Sprintf(`WITH s AS (
  SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::int[], $8::int[], $9::int[], $10::int[],
                       $11::vector[], $12::timestamptz[], $13::bytea[], $14::bool[], $15::text[])
    AS s(ord, id, tenant, title, text, metadata, es, ee, ls, le, embedding, updated_at, hash, keep, scope)),
cur AS (SELECT d.id, d.tenant, d.version, d.content_hash FROM %[1]s d WHERE d.id IN (SELECT id FROM s) ORDER BY d.id FOR UPDATE),
dec AS (SELECT s.*, ((s.scope <> '' AND s.tenant <> s.scope) OR (s.keep AND c.id IS NOT NULL AND c.tenant <> s.tenant)) AS conflict,
               CASE WHEN c.version > 0 AND c.content_hash = s.hash THEN c.version END AS same
        FROM s LEFT JOIN cur c ON c.id = s.id),
entry AS (INSERT INTO %[2]s (op, id) SELECT 1, id FROM dec WHERE NOT conflict AND same IS NULL ORDER BY ord RETURNING seq, id),
up AS (INSERT INTO %[1]s (%[3]s, version, content_hash, indexed)
       SELECT dec.id, dec.tenant, dec.title, dec.text, dec.metadata, ($16::text[])[dec.es + 1 : dec.ee], ($17::text[])[dec.ls + 1 : dec.le],
              dec.embedding, dec.updated_at, entry.seq, dec.hash, false
       FROM dec JOIN entry ON entry.id = dec.id ORDER BY dec.id
       ON CONFLICT (id) DO UPDATE SET tenant = EXCLUDED.tenant, title = EXCLUDED.title, text = EXCLUDED.text,
       metadata = EXCLUDED.metadata, entities = EXCLUDED.entities, links = EXCLUDED.links,
       embedding = EXCLUDED.embedding, updated_at = EXCLUDED.updated_at,
       version = EXCLUDED.version, content_hash = EXCLUDED.content_hash, indexed = false)
SELECT dec.ord, dec.conflict, dec.same, entry.seq FROM dec LEFT JOIN entry ON entry.id = dec.id`, t, log, columns),
		delete: fmt.Sprintf(`WITH s AS (SELECT * FROM unnest($1::int[], $2::text[], $3::text[]) AS s(ord, id, scope)),
del AS (DELETE FROM %[1]s d USING s WHERE d.id = s.id AND (s.scope = '' OR d.tenant = s.scope) RETURNING d.id),
entry AS (INSERT INTO %[2]s (op, id) SELECT 2, s.id FROM s JOIN del ON del.id = s.id ORDER BY s.ord RETURNING seq, id)
SELECT s.ord, entry.seq FROM s LEFT JOIN entry ON entry.id = s.id`, t, log),
		entries: fmt.Sprintf(`SELECT seq, op, id, at FROM %s WHERE seq > $1 ORDER BY seq LIMIT $2`, log),
		current: fmt.Sprintf(`SELECT %s, version FROM %s WHERE id = ANY($1)`, columns, t),
		// The derived stores keep no vectors: Changes leaves them out, which
		// spares PostgreSQL reading each row's TOASTed embedding and ragd
		// decoding it, once per derived store.
		changed:  fmt.Sprintf(`SELECT %s, version FROM %s WHERE id = ANY($1)`, strings.Replace(columns, "embedding", "NULL::vector", 1), t),
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
//
// The whole batch is three statements in one round trip: the log's
// advisory lock, one set-based upsert of every upsert (ownership and
// sameness decided on the rows it locks, the entries appended in input
// order, the rows written with their versions) and one set-based delete.
// The rows enter the HNSW index later (see index.go), so the lock is held
// for the row writes alone.
func (b *Backend) Commit(ctx context.Context, writes []spi.Write) ([]spi.WriteResult, error) {
	out := make([]spi.WriteResult, len(writes))
	now := b.cfg.Now().UTC()
	var ups upsertArgs
	var dels deleteArgs
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
			dels.add(i, id, w.Scope)
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
			ups.add(i, d, w.KeepTenant, w.Scope)
		default:
			out[i].Err = fmt.Errorf("vector: commit: %w: unknown op %d", spi.ErrInvalidQuery, w.Op)
		}
	}
	if len(ups.ord) == 0 && len(dels.ord) == 0 {
		return out, nil
	}
	batch := &pgx.Batch{}
	batch.Queue(b.lq.lock, "ragd.log:"+b.cfg.Table)
	if len(ups.ord) > 0 {
		batch.Queue(b.lq.upsert, ups.args()...)
	}
	if len(dels.ord) > 0 {
		batch.Queue(b.lq.delete, dels.ord, dels.id, dels.scope)
	}
	for attempt := 1; ; attempt++ {
		err := b.commitTx(ctx, batch, len(ups.ord) > 0, len(dels.ord) > 0, out)
		if err == nil {
			return out, nil
		}
		// A deadlock or serialization failure rolled everything back:
		// running the batch again is safe.
		if !retryable(err) || attempt == maxCommitAttempts || ctx.Err() != nil {
			return nil, err
		}
	}
}

// maxCommitAttempts bounds the runs of a commit that PostgreSQL aborted
// for a deadlock or a serialization failure.
const maxCommitAttempts = 3

func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// commitTx runs batch in one transaction and fills out from its answers.
func (b *Backend) commitTx(ctx context.Context, batch *pgx.Batch, hasUps, hasDels bool, out []spi.WriteResult) error {
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		return wrapErr(ctx, "commit", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	if err := runCommitBatch(ctx, tx, batch, hasUps, hasDels, out); err != nil {
		if retryable(err) {
			return err
		}
		return commitErr(ctx, err)
	}
	if b.commitHook != nil {
		b.commitHook()
	}
	if err := tx.Commit(ctx); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return commitErr(ctx, err)
		}
		// The COMMIT was sent; whether it took effect is unknown.
		return fmt.Errorf("vector: commit: %w: %w", spi.ErrOutcomeUnknown, wrapErr(ctx, "commit", err))
	}
	return nil
}

// upsertArgs are a batch's upserts as the columns of the set-based upsert
// (one array per column; entities and links flattened, each document's
// slice given by its start and end offsets).
type upsertArgs struct {
	ord                            []int32
	id, tenant, title, text, scope []string
	metadata                       []spi.Metadata
	es, ee, ls, le                 []int32
	embedding                      []pgvector.Vector
	updatedAt                      []time.Time
	hash                           [][]byte
	keep                           []bool
	entities, links                []string
}

func (u *upsertArgs) add(i int, d spi.Document, keep bool, scope string) {
	md := d.Metadata
	if md == nil {
		md = spi.Metadata{}
	}
	h := spi.ContentHash(d)
	u.ord = append(u.ord, int32(i))
	u.id = append(u.id, d.ID)
	u.tenant = append(u.tenant, d.Tenant)
	u.title = append(u.title, d.Title)
	u.text = append(u.text, d.Text)
	u.metadata = append(u.metadata, md)
	u.es = append(u.es, int32(len(u.entities)))
	u.entities = append(u.entities, d.Entities...)
	u.ee = append(u.ee, int32(len(u.entities)))
	u.ls = append(u.ls, int32(len(u.links)))
	u.links = append(u.links, d.Links...)
	u.le = append(u.le, int32(len(u.links)))
	u.embedding = append(u.embedding, pgvector.NewVector(d.Vector))
	u.updatedAt = append(u.updatedAt, d.UpdatedAt)
	u.hash = append(u.hash, h[:])
	u.keep = append(u.keep, keep)
	u.scope = append(u.scope, scope)
}

// args are the upsert statement's parameters, $1..$17.
func (u *upsertArgs) args() []any {
	return []any{u.ord, u.id, u.tenant, u.title, u.text, u.metadata, u.es, u.ee, u.ls, u.le,
		u.embedding, u.updatedAt, u.hash, u.keep, u.scope, nonNil(u.entities), nonNil(u.links)}
}

// deleteArgs are a batch's deletes as the columns of the set-based delete.
type deleteArgs struct {
	ord       []int32
	id, scope []string
}

func (d *deleteArgs) add(i int, id, scope string) {
	d.ord = append(d.ord, int32(i))
	d.id = append(d.id, id)
	d.scope = append(d.scope, scope)
}

// runCommitBatch sends the lock, the upsert and the delete and reads
// their answers: one row per write, named by its index in the call.
func runCommitBatch(ctx context.Context, tx pgx.Tx, batch *pgx.Batch, hasUps, hasDels bool, out []spi.WriteResult) (err error) {
	br := tx.SendBatch(ctx, batch)
	defer func() {
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := br.Exec(); err != nil {
		return err
	}
	if hasUps {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		var ord int32
		var conflict bool
		var same, seq *int64
		_, err = pgx.ForEachRow(rows, []any{&ord, &conflict, &same, &seq}, func() error {
			o := &out[ord]
			switch {
			case conflict:
				o.Err = spi.ErrTenantConflict
			case same != nil:
				o.Version = uint64(*same)
			case seq != nil:
				o.Version, o.Changed = uint64(*seq), true
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if hasDels {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		var ord int32
		var seq *int64
		_, err = pgx.ForEachRow(rows, []any{&ord, &seq}, func() error {
			o := &out[ord]
			if seq == nil {
				o.Err = spi.ErrNotFound
			} else {
				o.Version, o.Changed = uint64(*seq), true
			}
			return nil
		})
		if err != nil {
			return err
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
	cur, err := b.current(ctx, b.lq.changed, ids)
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

func (b *Backend) current(ctx context.Context, query string, ids []string) (map[string]versioned, error) {
	rows, err := b.pool.Query(ctx, query, ids)
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
	cur, err := b.current(ctx, b.lq.current, query)
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
