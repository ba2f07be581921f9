package graph

import (
	"context"
	"fmt"
	"strings"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/ragd/ragd/backends/graph/graphspec"
	"github.com/ragd/ragd/spi"
)

// dropEdgesCypher deletes the outgoing MENTIONS and LINKS_TO edges of the
// given documents, lowers the entities' degree in the documents' tenant
// (see degKey), and returns the element ids of their former targets, so
// orphans can be pruned afterwards.
const dropEdgesCypher = `
UNWIND $ids AS id
MATCH (d:Document {id: id})-[r:MENTIONS|LINKS_TO]->(x)
WITH r, x, $degPrefix + coalesce(d.tenant, '') AS key, x:Entity AS ent
DELETE r
WITH x, key, ent, count(*) AS n
FOREACH (_ IN CASE WHEN ent THEN [1] ELSE [] END |
  SET x[key] = CASE WHEN coalesce(x[key], 0) > n THEN x[key] - n ELSE null END)
RETURN collect(DISTINCT elementId(x)) AS old`

// putEntitiesCypher merges the entities of a batch, one row per entity
// and tenant (an entity is merged once, not once per mention), raises
// their degree in the tenant by their mentions (see degKey) and returns
// each one's element id, which putDocsCypher links to.
const putEntitiesCypher = `
UNWIND $ents AS g
MERGE (e:Entity {name: g.name})
ON CREATE SET e.terms = g.terms
SET e[g.key] = coalesce(e[g.key], 0) + g.n
RETURN g.name AS name, elementId(e) AS eid`

// putDocsCypher writes the documents and their mentions: each document
// links to its entities by element id (a direct lookup; a second index
// seek by name per mention cost twice as much of Neo4j's CPU,
// BenchmarkApplyChanges). A document without entities is written by the
// MERGE before its empty UNWIND ends the row.
const putDocsCypher = `
UNWIND $docs AS doc
MERGE (d:Document {id: doc.id})
SET d = doc.props
WITH d, doc
UNWIND doc.ents AS eid
MATCH (e) WHERE elementId(e) = eid
CREATE (d)-[:MENTIONS]->(e)`

const putLinksCypher = `
UNWIND $links AS l
MATCH (d:Document {id: l.from})
MERGE (t:Document {id: l.to})
ON CREATE SET t.stub = true
CREATE (d)-[:LINKS_TO]->(t)`

// pruneCypher deletes entities nobody mentions and stubs nobody links to.
// Plain DELETE (not DETACH) makes a concurrent writer that just attached an
// edge win: the prune then fails and is skipped.
const pruneCypher = `
UNWIND $old AS xid
MATCH (x) WHERE elementId(x) = xid
  AND ((x:Entity AND NOT EXISTS { (x)<-[:MENTIONS]-() })
    OR (x:Document AND x.stub = true AND NOT EXISTS { (x)<-[:LINKS_TO]-() }))
DELETE x`

// stubDeletedCypher keeps a deleted document that others link to as a stub
// so their links revive if it is upserted again.
const stubDeletedCypher = `
UNWIND $ids AS id
MATCH (d:Document {id: id})
WHERE d.stub IS NULL AND EXISTS { (d)<-[:LINKS_TO]-() }
SET d = {id: id, stub: true}`

// forgetVersionsCypher drops the change-log versions of documents written
// outside the log (spi.Indexer), so they read as unversioned.
const forgetVersionsCypher = `
UNWIND $ids AS id
MATCH (v:RagdVersion {id: id})
DELETE v`

const deleteDocsCypher = `
UNWIND $ids AS id
MATCH (d:Document {id: id})
WHERE d.stub IS NULL
DELETE d`

// Upsert inserts or replaces documents in transactions of Config.BatchSize
// documents. A document's previous MENTIONS and LINKS_TO edges are replaced
// by the ones it carries now; entity names are normalised with
// graphspec.Normalize. Links to documents that do not exist yet are kept
// (as stubs) and take effect once the target is upserted. When a batch
// fails, the error is a *spi.BatchError naming that batch's documents and
// every later one; earlier batches are committed. Invalid documents wrap
// spi.ErrInvalidQuery and nothing is written.
func (b *Backend) Upsert(ctx context.Context, docs []spi.Document) error {
	prepared, err := graphspec.Prepare(docs)
	if err != nil {
		return fmt.Errorf("graph: upsert: %w", err)
	}
	if err := b.precheck(ctx, "upsert"); err != nil {
		return err
	}
	for start := 0; start < len(prepared); start += b.cfg.BatchSize {
		batch := prepared[start:min(start+b.cfg.BatchSize, len(prepared))]
		var old []any
		err := b.write(ctx, "upsert", func(tx neo4j.ManagedTransaction) error {
			if err := forgetVersions(ctx, tx, batch); err != nil {
				return err
			}
			var err error
			old, err = upsertBatch(ctx, tx, batch, docProps)
			return err
		})
		if err != nil {
			failed := map[string]error{}
			for _, d := range prepared[start:] {
				failed[d.ID] = err
			}
			return &spi.BatchError{Failed: failed}
		}
		b.prune(ctx, old)
	}
	return nil
}

// upsertBatch writes batch in tx with the node properties props(d) and
// returns the element ids of nodes that lost an edge (for prune).
func forgetVersions(ctx context.Context, tx neo4j.ManagedTransaction, docs []spi.Document) error {
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	_, err := run(ctx, tx, forgetVersionsCypher, map[string]any{"ids": ids})
	return err
}

func upsertBatch(ctx context.Context, tx neo4j.ManagedTransaction, batch []spi.Document, props func(spi.Document) map[string]any) ([]any, error) {
	ids := make([]string, len(batch))
	var links []any
	type entTenant struct{ name, key string }
	var ents []entTenant
	mentions := map[entTenant]int{}
	for i, d := range batch {
		ids[i] = d.ID
		for _, e := range d.Entities {
			k := entTenant{e, degKey(d.Tenant)}
			if _, ok := mentions[k]; !ok {
				ents = append(ents, k)
			}
			mentions[k]++
		}
		for _, l := range d.Links {
			links = append(links, map[string]any{"from": d.ID, "to": l})
		}
	}
	old, err := dropEdges(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	eids := make(map[string]string, len(ents))
	if len(ents) > 0 {
		rows := make([]any, len(ents))
		for i, k := range ents {
			rows[i] = map[string]any{"name": k.name, "key": k.key, "terms": strings.Join(graphspec.Tokens(k.name), " "), "n": mentions[k]}
		}
		recs, err := run(ctx, tx, putEntitiesCypher, map[string]any{"ents": rows})
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			name, _ := r.Values[0].(string)
			eid, _ := r.Values[1].(string)
			eids[name] = eid
		}
	}
	docs := make([]any, len(batch))
	for i, d := range batch {
		es := make([]string, len(d.Entities))
		for j, e := range d.Entities {
			es[j] = eids[e]
		}
		docs[i] = map[string]any{"id": d.ID, "props": props(d), "ents": es}
	}
	if _, err := run(ctx, tx, putDocsCypher, map[string]any{"docs": docs}); err != nil {
		return nil, err
	}
	if len(links) > 0 {
		if _, err := run(ctx, tx, putLinksCypher, map[string]any{"links": links}); err != nil {
			return nil, err
		}
	}
	return old, nil
}

func dropEdges(ctx context.Context, tx neo4j.ManagedTransaction, ids []string) ([]any, error) {
	recs, err := run(ctx, tx, dropEdgesCypher, map[string]any{"ids": ids, "degPrefix": degPrefix})
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	old, _ := recs[0].Values[0].([]any)
	return old, nil
}

// degPrefix and degKey name the Entity property counting the documents of
// one tenant that mention it: its degree within that tenant, which decides
// whether it is a hub for the tenant's requests (requests of no tenant use
// the relationship degree, across tenants).
const degPrefix = "ragd_deg:"

func degKey(tenant string) string { return degPrefix + tenant }

func docProps(d spi.Document) map[string]any {
	p := map[string]any{"id": d.ID, "tenant": d.Tenant, "title": d.Title, "text": d.Text}
	if !d.UpdatedAt.IsZero() {
		p["updated_at"] = d.UpdatedAt
	}
	for k, v := range d.Metadata {
		for name, x := range metaProps(k, v) {
			p[name] = x
		}
	}
	return p
}

// prune removes orphaned entities and stubs, best effort: a failure only
// leaves harmless orphans behind, which reads ignore.
func (b *Backend) prune(ctx context.Context, old []any) {
	if len(old) == 0 || ctx.Err() != nil {
		return
	}
	err := b.write(ctx, "prune", func(tx neo4j.ManagedTransaction) error {
		_, err := run(ctx, tx, pruneCypher, map[string]any{"old": old})
		return err
	})
	if err != nil {
		b.log.Debug("graph prune skipped", "err", err)
	}
}

// Delete removes documents, their mentions and outgoing links in one
// transaction, then prunes entities no document mentions any more. A
// deleted document that others still link to stays as a stub, so their
// links revive if it is upserted again. Unknown ids are ignored.
func (b *Backend) Delete(ctx context.Context, ids []string) error {
	ids = graphspec.Dedupe(ids)
	if len(ids) == 0 {
		return nil
	}
	var old []any
	err := b.write(ctx, "delete", func(tx neo4j.ManagedTransaction) error {
		if _, err := run(ctx, tx, forgetVersionsCypher, map[string]any{"ids": ids}); err != nil {
			return err
		}
		var err error
		old, err = deleteBatch(ctx, tx, ids)
		return err
	})
	if err != nil {
		return err
	}
	b.prune(ctx, old)
	return nil
}

// deleteBatch deletes ids in tx (keeping linked-to documents as stubs) and
// returns the element ids of nodes that lost an edge (for prune).
func deleteBatch(ctx context.Context, tx neo4j.ManagedTransaction, ids []string) ([]any, error) {
	old, err := dropEdges(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	if _, err := run(ctx, tx, stubDeletedCypher, map[string]any{"ids": ids}); err != nil {
		return nil, err
	}
	_, err = run(ctx, tx, deleteDocsCypher, map[string]any{"ids": ids})
	return old, err
}
