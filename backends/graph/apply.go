package graph

import (
	"context"
	"fmt"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/ragd/ragd/backends/graph/graphspec"
	"github.com/ragd/ragd/spi"
)

// The change-log applier (spi.ChangeApplier). One Neo4j server may serve
// several ragd replicas (and, in tests, several records), so versions and
// checkpoints are keyed by the log:
//
//	(:RagdVersion {key: "<log>/<id>", version})   survives a delete: the tombstone
//	(:RagdCheckpoint {log, seq})
//	(:Document {..., ragd_log, ragd_version})      what Versions lists
//
// Several appliers may apply the same changes concurrently (replicas): each
// transaction first write-locks the RagdVersion nodes of its documents and
// only then reads their versions, so of two racing transactions the later
// one sees the earlier one's versions and never writes an older state.

const guardCypher = `
UNWIND $states AS s
MERGE (v:RagdVersion {key: s.key})
ON CREATE SET v.version = -1
SET v.log = $log
WITH s, v WHERE v.version < s.version
SET v.version = s.version, v.id = s.id
RETURN s.id AS id`

const checkpointCypher = `
MERGE (c:RagdCheckpoint {log: $log})
ON CREATE SET c.seq = 0
SET c.lock = true
WITH c
SET c.seq = CASE WHEN c.seq < $through THEN $through ELSE c.seq END`

const appliedCypher = `MATCH (c:RagdCheckpoint {log: $log}) RETURN c.seq AS seq`

const versionsCypher = `
MATCH (d:Document) WHERE d.id > $after AND d.ragd_log = $log AND d.stub IS NULL
RETURN d.id AS id, d.ragd_version AS version ORDER BY d.id LIMIT $limit`

var _ spi.ChangeApplier = (*Backend)(nil)

// ApplyChanges implements spi.ChangeApplier in one transaction.
func (b *Backend) ApplyChanges(ctx context.Context, log string, changes []spi.Change, through uint64) error {
	states, byID, err := graphspec.PrepareChanges(changes)
	if err != nil {
		return fmt.Errorf("graph: apply: %w", err)
	}
	version := make(map[string]uint64, len(states))
	params := make([]any, len(states))
	for i, c := range states {
		version[c.ID] = c.Version
		params[i] = map[string]any{"key": log + "/" + c.ID, "id": c.ID, "version": int64(c.Version)}
	}
	props := func(d spi.Document) map[string]any {
		p := docProps(d)
		p["ragd_log"], p["ragd_version"] = log, int64(version[d.ID])
		return p
	}
	var old []any
	err = b.write(ctx, "apply", func(tx neo4j.ManagedTransaction) error {
		old = nil
		var ups []spi.Document
		var dels []string
		if len(params) > 0 {
			recs, err := run(ctx, tx, guardCypher, map[string]any{"states": params, "log": log})
			if err != nil {
				return err
			}
			for _, r := range recs {
				id, _ := r.Values[0].(string)
				if d, ok := byID[id]; ok {
					ups = append(ups, d)
				} else {
					dels = append(dels, id)
				}
			}
		}
		if len(ups) > 0 {
			o, err := upsertBatch(ctx, tx, ups, props)
			if err != nil {
				return err
			}
			old = append(old, o...)
		}
		if len(dels) > 0 {
			o, err := deleteBatch(ctx, tx, dels)
			if err != nil {
				return err
			}
			old = append(old, o...)
		}
		_, err := run(ctx, tx, checkpointCypher, map[string]any{"log": log, "through": int64(through)})
		return err
	})
	if err != nil {
		return err
	}
	b.prune(ctx, old)
	return nil
}

// AppliedSeq implements spi.ChangeApplier.
func (b *Backend) AppliedSeq(ctx context.Context, log string) (uint64, error) {
	var seq uint64
	err := b.read(ctx, "applied seq", func(r runner) error {
		recs, err := run(ctx, r, appliedCypher, map[string]any{"log": log})
		if err != nil || len(recs) == 0 {
			return err
		}
		if n, ok := recs[0].Values[0].(int64); ok && n > 0 {
			seq = uint64(n)
		}
		return nil
	})
	return seq, err
}

// Versions implements spi.ChangeApplier. It lists the documents this log's
// applier wrote; documents written otherwise (spi.Indexer, an older ragd)
// are not listed. Neo4j orders the ids by UTF-16 code units.
func (b *Backend) Versions(ctx context.Context, log, after string, limit int) ([]spi.IDVersion, error) {
	var out []spi.IDVersion
	err := b.read(ctx, "versions", func(r runner) error {
		recs, err := run(ctx, r, versionsCypher, map[string]any{"log": log, "after": after, "limit": int64(limit)})
		if err != nil {
			return err
		}
		for _, rec := range recs {
			id, _ := rec.Values[0].(string)
			v, _ := rec.Values[1].(int64)
			out = append(out, spi.IDVersion{ID: id, Version: uint64(max(v, 0))})
		}
		return nil
	})
	return out, err
}
