package vector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The HNSW index is kept off the write path.
//
// Linking a row into pgvector's HNSW graph as it is written costs about
// 5 ms of CPU per 384-dimensional row on the machines ragd is measured on
// (docs/vector.md), forty times the rest of the write, and bulk-building
// the same index costs a tenth of that per row. So a commit writes rows
// with indexed = false and no HNSW work, and the index is a partial one:
//
//	CREATE INDEX <base>_<distance>_hnsw_v<V> ON <table> USING hnsw (embedding <ops>)
//	    WHERE (indexed OR version <= V)
//
// for a constant V recorded in ragd_meta. Every live row satisfies exactly
// one of "the main part", (indexed OR version <= V), and "the tail",
// (NOT indexed AND version > V), so Retrieve asks both (the HNSW index for
// the first, an exact scan over the btree on version WHERE NOT indexed for
// the second) and merges: a document is searchable as soon as its commit
// returns, whatever the index's progress.
//
// One process at a time (a session advisory lock) moves the tail into the
// index (IndexStep, RunIndexer): a small tail row by row, by setting
// indexed = true (pgvector links each updated row, on-line); a tail of at
// least Index.RebuildMin rows and Index.RebuildRatio of the table by
// building a new partial index with a larger V in bulk (CREATE INDEX
// CONCURRENTLY: writes and queries go on), switching ragd_meta to it and
// dropping the old one Index.Grace later, when every replica has read the
// switch.
//
// A bulk build waits while writes go on: a tail past the rebuild threshold
// is built once the change log's head has stood still for Index.Quiet (and
// Index.Busy, when set, says the derived stores have caught up with it), or
// once it holds more than Index.DeferMax rows. Building whenever the
// tail passed a tenth of the table rebuilt a table being filled over and
// over (6-7 builds for 20,000 documents written at once, each row built
// about three times), taking the CPU the writes and the derived stores
// needed; now there is one build after the load. Meanwhile queries find
// the deferred rows by the exact scan over the tail, so answers stay
// exact for them and recall does not drop; DeferMax bounds that scan.
//
// A table whose HNSW index predates this (a full index, no V) is "legacy":
// queries use it alone until the first IndexStep builds the partial one.

// Index defaults.
const (
	DefaultRebuildMin    = 1000
	DefaultRebuildRatio  = 0.1
	DefaultAbsorbBatch   = 32
	DefaultBuildMemoryMB = 1024
	DefaultIndexInterval = time.Second
	DefaultIndexGrace    = 30 * time.Second
	DefaultIndexQuiet    = 2 * time.Second
	DefaultDeferMax      = 20000
	// indexRefresh is how often a process re-reads which index is current.
	indexRefresh = time.Second
)

// IndexConfig tunes how rows reach the HNSW index. Zero values take the
// defaults above.
type IndexConfig struct {
	// RebuildMin and RebuildRatio: a tail of at least RebuildMin rows and
	// at least RebuildRatio of the indexed rows is bulk-built into a new
	// index; a smaller one is linked in row by row. Bulk-building costs
	// about a tenth of linking per row, but it rebuilds every row.
	RebuildMin   int
	RebuildRatio float64
	// AbsorbBatch is how many tail rows one step links in; a writer that
	// rewrites one of them waits for the step.
	AbsorbBatch int
	// BuildMemoryMB is maintenance_work_mem for a bulk build: pgvector
	// builds in memory while the graph fits (about 2 KiB per
	// 384-dimensional row), and much more slowly on disk after that.
	BuildMemoryMB int
	// BuildWorkers is max_parallel_maintenance_workers for a bulk build;
	// 0 keeps the server's setting.
	BuildWorkers int
	// Interval is how long RunIndexer waits when there was nothing to do.
	Interval time.Duration
	// Grace is how long a replaced index is kept (and maintained) so that
	// processes still planning with it find it; at least a few seconds
	// more than the re-read interval (1 s).
	Grace time.Duration
	// Quiet and DeferMax: a tail past the rebuild threshold is built in
	// bulk once the change log's head has not moved for Quiet (as this
	// process's steps see it), or once the tail holds more than DeferMax
	// rows, whichever comes first; until then queries scan it exactly.
	Quiet    time.Duration
	DeferMax int
	// Busy, when set, reports whether work that should come before a bulk
	// build is still under way with the change log's head at head: ragd
	// passes "a derived store this process keeps current is behind head"
	// (ingest.Pipeline.Behind). A build then waits as while the head
	// moves, up to DeferMax rows: on a machine the derived stores share
	// with PostgreSQL, the build took the CPU the graph needed to catch up
	// (docs/vector.md "Writes"), and queries scan the tail exactly
	// meanwhile.
	Busy func(head uint64) bool
}

func (c IndexConfig) withDefaults() IndexConfig {
	if c.RebuildMin == 0 {
		c.RebuildMin = DefaultRebuildMin
	}
	if c.RebuildRatio == 0 {
		c.RebuildRatio = DefaultRebuildRatio
	}
	if c.AbsorbBatch == 0 {
		c.AbsorbBatch = DefaultAbsorbBatch
	}
	if c.BuildMemoryMB == 0 {
		c.BuildMemoryMB = DefaultBuildMemoryMB
	}
	if c.Interval == 0 {
		c.Interval = DefaultIndexInterval
	}
	if c.Grace == 0 {
		c.Grace = DefaultIndexGrace
	}
	if c.Quiet == 0 {
		c.Quiet = DefaultIndexQuiet
	}
	if c.DeferMax == 0 {
		c.DeferMax = DefaultDeferMax
	}
	return c
}

func (c IndexConfig) validate() []error {
	var errs []error
	if c.RebuildMin < 0 || c.AbsorbBatch < 0 || c.BuildMemoryMB < 0 || c.BuildWorkers < 0 || c.DeferMax < 0 {
		errs = append(errs, fmt.Errorf("Config.Index sizes must be >= 0, got rebuild_min %d, absorb_batch %d, build_memory_mb %d, build_workers %d, defer_max %d",
			c.RebuildMin, c.AbsorbBatch, c.BuildMemoryMB, c.BuildWorkers, c.DeferMax))
	}
	if c.RebuildRatio < 0 || c.RebuildRatio > 10 {
		errs = append(errs, fmt.Errorf("Config.Index.RebuildRatio must be in [0, 10], got %g", c.RebuildRatio))
	}
	if c.Interval < 0 || c.Grace < 0 || c.Quiet < 0 {
		errs = append(errs, fmt.Errorf("Config.Index durations must be >= 0, got interval %s, grace %s, quiet %s", c.Interval, c.Grace, c.Quiet))
	}
	return errs
}

// indexState is which HNSW index queries plan against.
type indexState struct {
	// legacy: a full index covers every row; there is no tail.
	legacy bool
	// v is the partial index's constant.
	v int64
	// at is when the state was read.
	at time.Time
}

// indexMeta is the ragd_meta value naming the current partial index.
type indexMeta struct {
	V        int64     `json:"v"`
	Switched time.Time `json:"switched"`
}

func (b *Backend) indexMetaKey() string { return "hnsw:" + b.cfg.Table + ":" + string(b.cfg.Distance) }

// indexNames returns the unqualified names of the legacy full index, the
// partial indexes' prefix and the tail's btree.
func (b *Backend) indexNames() (legacy, prefix, tail string) {
	parts := strings.Split(b.cfg.Table, ".")
	base := parts[len(parts)-1]
	p := "_" + string(b.cfg.Distance) + "_hnsw_v"
	return truncIdent(base + "_embedding_" + string(b.cfg.Distance) + "_idx"),
		base[:min(len(base), 63-len(p)-20)] + p,
		truncIdent(base + "_tail_idx")
}

// qualified returns name in the table's schema, sanitized.
func (b *Backend) qualified(name string) string {
	parts := strings.Split(b.cfg.Table, ".")
	return pgx.Identifier(append(parts[:len(parts)-1:len(parts)-1], name)).Sanitize()
}

func (b *Backend) partialName(v int64) string {
	_, prefix, _ := b.indexNames()
	return prefix + strconv.FormatInt(v, 10)
}

// createPartialSQL is the DDL of the partial index for v.
func (b *Backend) createPartialSQL(v int64, concurrently bool) string {
	_, opclass := b.cfg.Distance.operator()
	c := ""
	if concurrently {
		c = "CONCURRENTLY "
	}
	return fmt.Sprintf(`CREATE INDEX %sIF NOT EXISTS %s ON %s USING hnsw (embedding %s) WITH (m = %d, ef_construction = %d) WHERE (indexed OR version <= %d)`,
		c, pgx.Identifier{b.partialName(v)}.Sanitize(), b.table, opclass, b.cfg.HNSW.M, b.cfg.HNSW.EfConstruction, v)
}

// setupIndex runs in Open's schema transaction, after setupLog: the
// indexed column, the tail's btree and, unless a legacy full index or
// the recorded partial one exists, a partial index (V = the log's head,
// so rows already in the table are built into it now).
func (b *Backend) setupIndex(ctx context.Context, tx pgx.Tx) (indexState, error) {
	legacy, _, tailName := b.indexNames()
	var has bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'indexed' AND NOT attisdropped)`,
		b.table).Scan(&has)
	if err == nil && !has {
		_, err = tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s ADD COLUMN IF NOT EXISTS indexed boolean NOT NULL DEFAULT false`, b.table))
	}
	if err == nil {
		err = b.createIfMissing(ctx, tx, tailName, fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON %s (version) WHERE NOT indexed`,
			pgx.Identifier{tailName}.Sanitize(), b.table))
	}
	if err != nil {
		return indexState{}, wrapErr(ctx, "open: index schema", err)
	}
	m, found, err := b.readIndexMeta(ctx, tx)
	if err != nil {
		return indexState{}, err
	}
	if !found {
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, b.qualified(legacy)).Scan(&has); err != nil {
			return indexState{}, wrapErr(ctx, "open: index schema", err)
		}
		if has {
			return indexState{legacy: true, at: b.cfg.Now()}, nil
		}
		log, _ := b.logTables()
		if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT coalesce(max(seq), 0) FROM %s`, log)).Scan(&m.V); err != nil {
			return indexState{}, wrapErr(ctx, "open: index schema", err)
		}
		m.Switched = b.cfg.Now().UTC()
		if err := b.writeIndexMeta(ctx, tx, m); err != nil {
			return indexState{}, err
		}
	}
	if err := b.createIfMissing(ctx, tx, b.partialName(m.V), b.createPartialSQL(m.V, false)); err != nil {
		return indexState{}, wrapErr(ctx, "open: index schema", err)
	}
	return indexState{v: m.V, at: b.cfg.Now()}, nil
}

// createIfMissing runs ddl unless the index name exists: CREATE INDEX
// locks the table even when the index exists (see setupLog).
func (b *Backend) createIfMissing(ctx context.Context, tx pgx.Tx, name, ddl string) error {
	var has bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, b.qualified(name)).Scan(&has); err != nil || has {
		return err
	}
	_, err := tx.Exec(ctx, ddl)
	return err
}

type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (b *Backend) readIndexMeta(ctx context.Context, db queryRower) (indexMeta, bool, error) {
	var raw string
	err := db.QueryRow(ctx, b.q.indexState, b.indexMetaKey()).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return indexMeta{}, false, nil
	}
	if err != nil {
		return indexMeta{}, false, wrapErr(ctx, "index state", err)
	}
	var m indexMeta
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return indexMeta{}, false, fmt.Errorf("vector: index state: %s holds %q: %w", b.meta, raw, err)
	}
	return m, true, nil
}

func (b *Backend) writeIndexMeta(ctx context.Context, db interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, m indexMeta) error {
	raw, _ := json.Marshal(m) // cannot fail
	_, err := db.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (key, value) VALUES ($1, $2)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, b.meta), b.indexMetaKey(), string(raw))
	return wrapErr(ctx, "index state", err)
}

// state returns the index state queries plan against, and whether it is
// due for a re-read.
func (b *Backend) state() (indexState, bool) {
	s := b.idx.Load()
	return *s, b.cfg.Now().Sub(s.at) >= indexRefresh
}

// setState records a state read from ragd_meta (or the legacy index).
func (b *Backend) setState(legacy bool, m indexMeta) {
	b.idx.Store(&indexState{legacy: legacy, v: m.V, at: b.cfg.Now()})
}

// IndexReport says what one IndexStep found and did.
type IndexReport struct {
	// Skipped: another process holds the indexer's lock.
	Skipped bool
	// Tail is how many rows were outside the HNSW index when the step
	// began (searched exactly until they are in), counted up to the
	// rebuild threshold and one more.
	Tail int
	// Absorbed rows were linked into the index one by one.
	Absorbed int
	// Rebuilt: a new partial index was built in bulk and made current
	// (V is its constant).
	Rebuilt bool
	V       int64
	// Deferred: the tail is past the rebuild threshold but the change
	// log's head moved within Index.Quiet (or Index.Busy said so) and the
	// tail is within Index.DeferMax, so the build waits (nothing else was
	// done).
	Deferred bool
	// Dropped indexes: replaced ones past Index.Grace and failed builds.
	Dropped int
}

// Pending reports the rows the last IndexStep of this process found
// outside the HNSW index (searched exactly meanwhile), and whether this
// process has run one.
func (b *Backend) Pending() (int, bool) {
	n := b.pending.Load()
	return int(n), n >= 0
}

// RunIndexer runs IndexStep until ctx ends, waiting Index.Interval after a
// step that found nothing to do or failed. Several processes may run it;
// one at a time works.
func (b *Backend) RunIndexer(ctx context.Context) {
	for {
		r, err := b.IndexStep(ctx)
		if err != nil && ctx.Err() == nil {
			b.cfg.Logger.Warn("vector: index step failed", "table", b.cfg.Table, "err", err)
		}
		if err == nil && !r.Skipped && (r.Absorbed > 0 || r.Rebuilt) {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(b.cfg.Index.Interval):
		}
	}
}

// indexLockKey is the session advisory lock one indexer holds.
func (b *Backend) indexLockKey() string { return "ragd.index:" + b.cfg.Table }

// IndexStep moves rows from the tail into the HNSW index once: it drops
// replaced indexes past their grace and failed builds, then bulk-builds a
// new index when the tail is large (see IndexConfig) or the table has a
// legacy full index, and otherwise links up to Index.AbsorbBatch tail rows
// into the current one. It returns at once with Skipped when another
// process holds the indexer's lock.
func (b *Backend) IndexStep(ctx context.Context) (IndexReport, error) {
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return IndexReport{}, wrapErr(ctx, "index", err)
	}
	defer conn.Release()
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtext($1))`, b.indexLockKey()).Scan(&got); err != nil {
		return IndexReport{}, wrapErr(ctx, "index", err)
	}
	if !got {
		return IndexReport{Skipped: true}, nil
	}
	defer func() {
		// A connection that cannot unlock is closed, which unlocks.
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext($1))`, b.indexLockKey()); err != nil {
			conn.Conn().Close(context.WithoutCancel(ctx)) //nolint:errcheck // closing is the fallback
		}
	}()
	return b.indexStep(ctx, conn)
}

func (b *Backend) indexStep(ctx context.Context, conn *pgxpool.Conn) (IndexReport, error) {
	var r IndexReport
	cur, err := b.adoptNewest(ctx, conn)
	if err != nil {
		return r, err
	}
	if r.Dropped, err = b.dropReplaced(ctx, conn, cur); err != nil {
		return r, err
	}
	cfg := b.cfg.Index
	if cur.legacy {
		r.Tail = -1
		return b.rebuild(ctx, conn, r)
	}
	var live float64
	if err := conn.QueryRow(ctx, `SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = to_regclass($1)`, b.table).Scan(&live); err != nil {
		return r, wrapErr(ctx, "index", err)
	}
	threshold := max(cfg.RebuildMin, int(cfg.RebuildRatio*live))
	log, _ := b.logTables()
	var head int64
	if err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT (SELECT count(*) FROM (SELECT 1 FROM %s WHERE NOT indexed AND version > $1 LIMIT $2) t),
	(SELECT coalesce(max(seq), 0) FROM %s)`, b.table, log),
		cur.v, max(threshold, cfg.DeferMax)+1).Scan(&r.Tail, &head); err != nil {
		return r, wrapErr(ctx, "index", err)
	}
	b.pending.Store(int64(r.Tail))
	quiet := b.headQuiet(head) && (cfg.Busy == nil || !cfg.Busy(uint64(head)))
	switch {
	case r.Tail == 0:
		return r, nil
	case r.Tail > threshold && !quiet && r.Tail <= cfg.DeferMax:
		r.Deferred = true
		return r, nil
	case r.Tail > threshold:
		return b.rebuild(ctx, conn, r)
	}
	tag, err := conn.Exec(ctx, fmt.Sprintf(`UPDATE %[1]s SET indexed = true WHERE id IN (
	SELECT id FROM %[1]s WHERE NOT indexed AND version > $1 ORDER BY version LIMIT $2 FOR UPDATE SKIP LOCKED)`, b.table), cur.v, cfg.AbsorbBatch)
	if err != nil {
		return r, wrapErr(ctx, "index: absorb", err)
	}
	r.Absorbed = int(tag.RowsAffected())
	b.pending.Store(int64(max(r.Tail-r.Absorbed, 0)))
	return r, nil
}

// headQuiet records the change log's head as a step read it and reports
// whether it has stood still for Index.Quiet. A process's first reading
// counts as a move: it cannot tell how long the head stood there.
func (b *Backend) headQuiet(head int64) bool {
	b.head.mu.Lock()
	defer b.head.mu.Unlock()
	now := b.cfg.Now()
	if !b.head.seen || head != b.head.seq {
		b.head.seen, b.head.seq, b.head.at = true, head, now
	}
	return now.Sub(b.head.at) >= b.cfg.Index.Quiet
}

// ourIndex is one of the table's HNSW indexes ragd made.
type ourIndex struct {
	name   string
	v      int64 // -1: the legacy full index
	valid  bool
	legacy bool
}

// ourIndexes lists the legacy and partial HNSW indexes of this distance.
func (b *Backend) ourIndexes(ctx context.Context, conn *pgxpool.Conn) ([]ourIndex, error) {
	legacy, prefix, _ := b.indexNames()
	rows, err := conn.Query(ctx, `SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = to_regclass($1)`, b.table)
	if err != nil {
		return nil, wrapErr(ctx, "index", err)
	}
	var out []ourIndex
	var name string
	var valid bool
	_, err = pgx.ForEachRow(rows, []any{&name, &valid}, func() error {
		switch {
		case name == legacy:
			out = append(out, ourIndex{name: name, v: -1, valid: valid, legacy: true})
		case strings.HasPrefix(name, prefix):
			if v, err := strconv.ParseInt(name[len(prefix):], 10, 64); err == nil {
				out = append(out, ourIndex{name: name, v: v, valid: valid})
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrapErr(ctx, "index", err)
	}
	return out, nil
}

// adoptNewest reads the current state; a valid partial index newer than
// the recorded one (a build whose process died before recording it) is
// made current.
func (b *Backend) adoptNewest(ctx context.Context, conn *pgxpool.Conn) (indexState, error) {
	m, found, err := b.readIndexMeta(ctx, conn)
	if err != nil {
		return indexState{}, err
	}
	idx, err := b.ourIndexes(ctx, conn)
	if err != nil {
		return indexState{}, err
	}
	newest := int64(-1)
	for _, ix := range idx {
		if ix.valid && !ix.legacy && ix.v > newest {
			newest = ix.v
		}
	}
	switch {
	case newest >= 0 && (!found || newest > m.V):
		m = indexMeta{V: newest, Switched: b.cfg.Now().UTC()}
		if err := b.writeIndexMeta(ctx, conn, m); err != nil {
			return indexState{}, err
		}
	case !found:
		// Only a legacy index (or none: Open makes one).
		b.setState(true, m)
		return *b.idx.Load(), nil
	}
	b.setState(false, m)
	return *b.idx.Load(), nil
}

// dropReplaced drops failed builds, and the legacy and older partial
// indexes once the current one has been current for Index.Grace.
func (b *Backend) dropReplaced(ctx context.Context, conn *pgxpool.Conn, cur indexState) (int, error) {
	if cur.legacy {
		return 0, nil
	}
	m, _, err := b.readIndexMeta(ctx, conn)
	if err != nil {
		return 0, err
	}
	idx, err := b.ourIndexes(ctx, conn)
	if err != nil {
		return 0, err
	}
	graced := b.cfg.Now().Sub(m.Switched) >= b.cfg.Index.Grace
	n := 0
	for _, ix := range idx {
		if ix.v == cur.v && !ix.legacy {
			continue
		}
		if ix.valid && !graced {
			continue
		}
		if _, err := conn.Exec(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+b.qualified(ix.name)); err != nil {
			return n, wrapErr(ctx, "index: drop "+ix.name, err)
		}
		n++
	}
	return n, nil
}

// rebuild bulk-builds the partial index for the log's head and makes it
// current.
func (b *Backend) rebuild(ctx context.Context, conn *pgxpool.Conn, r IndexReport) (IndexReport, error) {
	log, _ := b.logTables()
	var v int64
	if err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT coalesce(max(seq), 0) FROM %s`, log)).Scan(&v); err != nil {
		return r, wrapErr(ctx, "index: rebuild", err)
	}
	settings := []string{fmt.Sprintf(`SET maintenance_work_mem = '%dMB'`, b.cfg.Index.BuildMemoryMB)}
	if b.cfg.Index.BuildWorkers > 0 {
		settings = append(settings, fmt.Sprintf(`SET max_parallel_maintenance_workers = %d`, b.cfg.Index.BuildWorkers))
	}
	for _, s := range settings {
		if _, err := conn.Exec(ctx, s); err != nil {
			return r, wrapErr(ctx, "index: rebuild", err)
		}
	}
	defer conn.Exec(context.WithoutCancel(ctx), `RESET maintenance_work_mem; RESET max_parallel_maintenance_workers`) //nolint:errcheck // the session ends with the connection anyway
	start := b.cfg.Now()
	if b.buildHook != nil {
		b.buildHook(v)
	}
	if _, err := conn.Exec(ctx, b.createPartialSQL(v, true)); err != nil {
		return r, wrapErr(ctx, "index: rebuild", err)
	}
	m := indexMeta{V: v, Switched: b.cfg.Now().UTC()}
	if err := b.writeIndexMeta(ctx, conn, m); err != nil {
		return r, err
	}
	b.setState(false, m)
	b.cfg.Logger.Info("vector: HNSW index rebuilt", "table", b.cfg.Table, "v", v, "tail", r.Tail, "took", b.cfg.Now().Sub(start))
	r.Rebuilt, r.V = true, v
	return r, nil
}
