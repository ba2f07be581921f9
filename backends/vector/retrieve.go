package vector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/ragd/ragd/spi"
)

// tieSlack is how many rows beyond k Retrieve fetches so that documents tied
// with the k-th at the cut are all seen and the lowest ids win, and so that
// relaxed_order's slightly out-of-order stream is re-sorted over a margin.
func tieSlack(k int) int { return min(max(k/4, 8), 64) }

// filteredEf is how many times EfSearch a query with a tenant or a
// metadata filter searches with. The filter keeps only part of each beam
// of candidates, so at one ef a filtered query finds less of its own top k
// than an unfiltered one: at 1,000,000 embedding-shaped vectors, one
// tenant of three at ef_search 100 found 0.852 of its true top 10, where
// the unfiltered search found 0.891 at 100 and 0.757 at 40
// (docs/vector.md).
const filteredEf = 2

// efFor is the hnsw.ef_search of req (before the floor of its limit and
// pgvector's ceiling).
func efFor(ef int, req spi.VectorRequest) int {
	if req.Tenant != "" || !req.Filter.IsEmpty() {
		return ef * filteredEf
	}
	return ef
}

// Retrieve returns the req.K documents nearest to req.Vector, restricted to
// req.Tenant (when set) and req.Filter, ordered by descending similarity and
// then ascending id. See the package comment for the score of each
// distance. Filters run inside the index scan (pgvector iterative scan), so
// a selective filter still yields up to K rows.
func (b *Backend) Retrieve(ctx context.Context, req spi.VectorRequest) ([]spi.Ref, error) {
	if err := b.checkRequest(req); err != nil {
		return nil, fmt.Errorf("vector: retrieve: %w", err)
	}
	limit := req.K + tieSlack(req.K)
	st, stale := b.state()
	query, args := b.retrieveSQL(req, limit, st)
	ef := min(max(efFor(b.cfg.HNSW.EfSearch, req), limit), maxEfSearch)

	// One round trip: the batch runs in one implicit transaction, so the
	// set_config(..., true) settings apply to the query that follows and
	// vanish with it. A state older than a second is read again in the
	// same trip, for the next query. Sequential scans are off: every part
	// of the query has an index made for it (the HNSW index, the tail's
	// btree), and with statistics that lag a load the planner would
	// otherwise scan the whole table for a tail it thinks large.
	batch := &pgx.Batch{}
	if b.cfg.HNSW.MaxScanTuples > 0 {
		batch.Queue(`SELECT set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', $2, true),
	set_config('enable_seqscan', 'off', true), set_config('hnsw.max_scan_tuples', $3, true)`,
			strconv.Itoa(ef), b.cfg.IterativeScan, strconv.Itoa(b.cfg.HNSW.MaxScanTuples))
	} else {
		batch.Queue(`SELECT set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', $2, true),
	set_config('enable_seqscan', 'off', true)`,
			strconv.Itoa(ef), b.cfg.IterativeScan)
	}
	if stale {
		batch.Queue(b.q.indexState, b.indexMetaKey())
	}
	batch.Queue(query, args...)
	br := b.pool.SendBatch(ctx, batch)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, wrapErr(ctx, "retrieve", err)
	}
	if stale {
		if err := b.refreshState(br.QueryRow()); err != nil {
			return nil, wrapErr(ctx, "retrieve", err)
		}
	}
	rows, err := br.Query()
	if err != nil {
		return nil, wrapErr(ctx, "retrieve", err)
	}
	refs := make([]spi.Ref, 0, limit)
	for rows.Next() {
		var id string
		var dist float64
		if err := rows.Scan(&id, &dist); err != nil {
			rows.Close()
			return nil, wrapErr(ctx, "retrieve", err)
		}
		refs = append(refs, spi.Ref{ID: id, Score: b.cfg.Distance.score(dist), Source: spi.SourceVector})
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr(ctx, "retrieve", err)
	}
	if err := br.Close(); err != nil {
		return nil, wrapErr(ctx, "retrieve", err)
	}
	sortRefs(refs)
	if len(refs) > req.K {
		refs = refs[:req.K]
	}
	return refs, nil
}

// sortRefs orders refs by descending score, then ascending id: the order
// every vector backend returns.
func sortRefs(refs []spi.Ref) {
	slices.SortFunc(refs, func(a, b spi.Ref) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// checkRequest rejects what the database must never see.
func (b *Backend) checkRequest(req spi.VectorRequest) error {
	if req.K < 1 || req.K > MaxK {
		return fmt.Errorf("%w: k must be in [1, %d], got %d", spi.ErrInvalidQuery, MaxK, req.K)
	}
	if err := b.checkVector(req.Vector); err != nil {
		return err
	}
	return req.Filter.Validate()
}

// checkVector validates a query or document vector for this store.
func (b *Backend) checkVector(v []float32) error {
	if err := spi.ValidateVector(v, b.cfg.Dimension); err != nil {
		return err
	}
	if b.cfg.Distance == Cosine && isZero(v) {
		return fmt.Errorf("%w: a zero vector has no direction under cosine distance", spi.ErrInvalidQuery)
	}
	return nil
}

func isZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// retrieveSQL builds the top-k query. Only placeholders carry request
// values (keys included); the SQL text depends on nothing but the shape of
// the filter (filterSQL) and the index state.
// With a partial index the query is the union of the rows it covers
// (searched through it) and the tail (searched exactly), which together
// are every row (index.go).
func (b *Backend) retrieveSQL(req spi.VectorRequest, limit int, st indexState) (string, []any) {
	args := []any{pgvector.NewVector(req.Vector), limit}
	var where []string
	if req.Tenant != "" {
		args = append(args, req.Tenant)
		where = append(where, fmt.Sprintf("tenant = $%d", len(args)))
	}
	if e := req.Filter.Root(); e != nil {
		var cond string
		cond, args = filterSQL(e, args)
		where = append(where, cond)
	}
	part := func(cond string) string {
		w := where
		if cond != "" {
			w = append([]string{cond}, where...)
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "SELECT id, embedding %s $1 AS distance FROM %s", b.op, b.table)
		if len(w) > 0 {
			sb.WriteString(" WHERE ")
			sb.WriteString(strings.Join(w, " AND "))
		}
		fmt.Fprintf(&sb, " ORDER BY embedding %s $1 LIMIT $2", b.op)
		return sb.String()
	}
	if st.legacy {
		return part(""), args
	}
	return fmt.Sprintf("(%s) UNION ALL (%s)",
		part(fmt.Sprintf("(indexed OR version <= %d)", st.v)),
		part(fmt.Sprintf("NOT indexed AND version > %d", st.v))), args
}

// refreshState reads the index state a Retrieve batch asked for: the
// recorded partial index, or legacy when none is recorded.
func (b *Backend) refreshState(row pgx.Row) error {
	var raw string
	err := row.Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		b.setState(true, indexMeta{})
		return nil
	}
	if err != nil {
		return err
	}
	var m indexMeta
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return fmt.Errorf("index state %q: %w", raw, err)
	}
	b.setState(false, m)
	return nil
}
