package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"github.com/neo4j/neo4j-go-driver/v5/neo4j/dbtype"

	"github.com/ragd/ragd/backends/graph/graphspec"
	"github.com/ragd/ragd/spi"
)

// filterCypher marks where a query's metadata predicate goes: run
// replaces it with the filter's Cypher (filter.go), "true" without one.
const filterCypher = filterMarker

// degreeCypher is entity e's degree within the request's tenant: its
// relationship degree (O(1)) for a request of no tenant, the count the
// writes keep in e[$degKey] (see degKey) for one tenant.
const degreeCypher = `CASE WHEN $tenant = '' THEN COUNT { (e)<-[:MENTIONS]-() } ELSE coalesce(e[$degKey], 0) END`

// neighboursCypher yields, per seed f in $from (of $tenant), each
// neighbour d and n: the non-hub entities they share, or 1 for a link in
// either direction (one row each; summed per (f, d) they are the
// connectors). MENTIONS only ever lead from a Document to an Entity, so
// the hops over them check no label (a fifth of the expansion's CPU in
// Neo4j, measured on Cranfield).
const neighboursCypher = `
UNWIND $from AS fid
MATCH (f:Document {id: fid})
WHERE f.stub IS NULL AND ($tenant = '' OR f.tenant = $tenant)
CALL (f) {
  MATCH (f)-[:MENTIONS]->(e)
  WHERE ` + degreeCypher + ` <= $maxDegree
  MATCH (e)<-[:MENTIONS]-(d)
  WHERE d <> f AND ($tenant = '' OR d.tenant = $tenant)
  RETURN d, count(e) AS n
  UNION ALL
  MATCH (f)-[:LINKS_TO]-(d:Document)
  WHERE d <> f AND d.stub IS NULL AND ($tenant = '' OR d.tenant = $tenant)
  RETURN DISTINCT d, 1 AS n
}
`

// adjacencyCypher returns one row per (from, neighbour) pair: shared
// non-hub entities plus one for a link in either direction, and whether the
// neighbour fails the filter. The hub check reads the entity's relationship
// degree, so a common entity costs O(1) before it is skipped.
const adjacencyCypher = neighboursCypher + `RETURN fid AS from, d.id AS to, sum(n) AS connectors, NOT ` + filterCypher + ` AS excluded`

// expand1Cypher is a one-hop Expand aggregated server-side: per neighbour
// of the seeds (never a seed itself) that passes the filter, the paths
// (connectors summed over the seeds), top $limit by paths then id. It is
// the ranking of graphspec.Expand for Hops 1, in one round trip that
// returns $limit rows instead of every (seed, neighbour) edge. Each entity
// the seeds mention is followed once, however many seeds mention it (it
// connects each of its documents to each of those seeds): seeds found
// together tend to share entities, and an entity's documents are the rows
// an expansion pays for.
const expand1Cypher = `
UNWIND $from AS fid
MATCH (f:Document {id: fid})
WHERE f.stub IS NULL AND ($tenant = '' OR f.tenant = $tenant)
WITH collect(f) AS seeds
CALL (seeds) {
  UNWIND seeds AS f
  MATCH (f)-[:MENTIONS]->(e)
  WHERE ` + degreeCypher + ` <= $maxDegree
  WITH e, count(f) AS fs
  MATCH (e)<-[:MENTIONS]-(d)
  WHERE $tenant = '' OR d.tenant = $tenant
  RETURN d, fs AS n
  UNION ALL
  UNWIND seeds AS f
  MATCH (f)-[:LINKS_TO]-(d:Document)
  WHERE d <> f AND d.stub IS NULL AND ($tenant = '' OR d.tenant = $tenant)
  WITH DISTINCT f, d
  RETURN d, 1 AS n
}
WITH d, sum(n) AS paths
WHERE NOT d.id IN $from AND ` + filterCypher + `
RETURN d.id AS id, paths
ORDER BY paths DESC, id ASC
LIMIT $limit`

// secondHopCypher aggregates the second hop server-side: per candidate that
// passes the filter, the sum of the weights of its distinct distance-1
// neighbours, top $limit (the filter applies before the cut).
const secondHopCypher = `
UNWIND $frontier AS fr
MATCH (f:Document {id: fr.id})
WHERE f.stub IS NULL AND ($tenant = '' OR f.tenant = $tenant)
CALL (f) {
  MATCH (f)-[:MENTIONS]->(e)
  WHERE ` + degreeCypher + ` <= $maxDegree
  MATCH (e)<-[:MENTIONS]-(d)
  WHERE $tenant = '' OR d.tenant = $tenant
  RETURN d
  UNION
  MATCH (f)-[:LINKS_TO]-(d:Document)
  WHERE d.stub IS NULL AND ($tenant = '' OR d.tenant = $tenant)
  RETURN d
}
WITH fr, d
WHERE NOT d.id IN $exclude AND ` + filterCypher + `
WITH d.id AS id, sum(fr.w) AS paths
RETURN id, paths
ORDER BY paths DESC, id ASC
LIMIT $limit`

// Expand returns documents related to seeds, ranked by the rule documented
// in package graphspec: hop distance ascending, then distinct connecting
// paths descending, then id; Ref.Score = graphspec.ExpandScore. Documents
// failing opts.Filter are left out before the Limit cut but still connect
// the documents beyond them. Hops outside 1..2, Limit < 1 or an invalid
// filter wrap spi.ErrInvalidQuery; no seeds returns spi.ErrNothingToSearch
// without asking Neo4j. One hop is one query aggregated and cut
// server-side (expand1Cypher); two hops cost one query per hop (the second
// is skipped when the first fills Limit); the work per query is bounded by
// the frontier's entities times MaxDegree, and the second hop is filtered,
// aggregated, ordered and cut server-side.
func (b *Backend) Expand(ctx context.Context, seeds []string, opts spi.ExpandOptions) ([]spi.Ref, error) {
	if err := graphspec.ValidateExpand(opts); err != nil {
		return nil, fmt.Errorf("graph: expand: %w", err)
	}
	if len(seeds) == 0 {
		return nil, fmt.Errorf("graph: expand: %w: no seeds", spi.ErrNothingToSearch)
	}
	filter := opts.Filter
	var refs []spi.Ref
	if opts.Hops == 1 {
		seeds = graphspec.Dedupe(seeds)
		err := b.read(ctx, "expand", func(r runner) error {
			recs, err := run(ctx, r, expand1Cypher, map[string]any{
				"from": seeds, "tenant": opts.Tenant, "maxDegree": b.cfg.MaxDegree, "degKey": degKey(opts.Tenant),
				filterKey: filter, "limit": opts.Limit,
			})
			if err != nil {
				return err
			}
			refs = make([]spi.Ref, 0, len(recs))
			for _, rec := range recs {
				id, _ := rec.Values[0].(string)
				n, _ := rec.Values[1].(int64)
				refs = append(refs, spi.Ref{ID: id, Score: graphspec.ExpandScore(1, int(n)), Source: spi.SourceGraphExpand})
			}
			return nil
		})
		return refs, err
	}
	err := b.read(ctx, "expand", func(r runner) error {
		adj := func(ctx context.Context, from []string) ([]graphspec.Edge, error) {
			recs, err := run(ctx, r, adjacencyCypher, map[string]any{
				"from": from, "tenant": opts.Tenant, "maxDegree": b.cfg.MaxDegree, "degKey": degKey(opts.Tenant),
				filterKey: filter,
			})
			if err != nil {
				return nil, err
			}
			edges := make([]graphspec.Edge, 0, len(recs))
			for _, rec := range recs {
				from, _ := rec.Values[0].(string)
				to, _ := rec.Values[1].(string)
				n, _ := rec.Values[2].(int64)
				excluded, _ := rec.Values[3].(bool)
				edges = append(edges, graphspec.Edge{From: from, To: to, Connectors: int(n), Excluded: excluded})
			}
			return edges, nil
		}
		hop2 := func(ctx context.Context, weights map[string]int, exclude []string, limit int) ([]graphspec.Hop2, error) {
			frontier := make([]any, 0, len(weights))
			for id, w := range weights {
				frontier = append(frontier, map[string]any{"id": id, "w": w})
			}
			recs, err := run(ctx, r, secondHopCypher, map[string]any{
				"frontier": frontier, "exclude": exclude, "limit": limit,
				"tenant": opts.Tenant, "maxDegree": b.cfg.MaxDegree, "degKey": degKey(opts.Tenant),
				filterKey: filter,
			})
			if err != nil {
				return nil, err
			}
			out := make([]graphspec.Hop2, 0, len(recs))
			for _, rec := range recs {
				id, _ := rec.Values[0].(string)
				n, _ := rec.Values[1].(int64)
				out = append(out, graphspec.Hop2{ID: id, Paths: int(n)})
			}
			return out, nil
		}
		var err error
		refs, err = graphspec.Expand(ctx, seeds, opts, adj, hop2)
		return err
	})
	return refs, err
}

// matchCypher weighs full-text candidates by their overlap with the query
// tokens and sums the kept entities' weights per document.
const matchCypher = `
CALL db.index.fulltext.queryNodes($index, $lucene, {limit: $candidates}) YIELD node AS e, score
WITH e, CASE WHEN $syntax THEN score ELSE toFloat(size([t IN split(e.terms, ' ') WHERE t IN $tokens])) END AS w,
     ` + degreeCypher + ` AS deg
WHERE w > 0 AND deg > 0 AND deg <= $maxDegree
WITH e, w ORDER BY w DESC, e.name ASC LIMIT $maxEntities
MATCH (e)<-[:MENTIONS]-(d)
WHERE ($tenant = '' OR d.tenant = $tenant)
  AND ` + filterCypher + `
WITH d.id AS id, sum(w) AS score
ORDER BY score DESC, id ASC LIMIT $k
RETURN id, score`

// MatchEntities matches req.Text against entity terms through the
// full-text index and ranks the documents that mention the matches (rule in
// package graphspec: the sum of matched entities' weights, a weight being
// the number of distinct query tokens among the entity's terms). The text
// is turned into a disjunction of quoted terms, so Lucene syntax in it is
// never interpreted. With req.Syntax the text is passed to Lucene as is
// (terms are lower case), entity weights are Lucene scores, and a parse
// error wraps spi.ErrInvalidQuery. A text with no word to match (empty,
// punctuation only) returns spi.ErrNothingToSearch without asking Neo4j:
// the guard must not take that answer for a sign that Neo4j is alive.
func (b *Backend) MatchEntities(ctx context.Context, req spi.KeywordRequest) ([]spi.Ref, error) {
	tokens, err := graphspec.ValidateMatch(req)
	if err != nil {
		return nil, fmt.Errorf("graph: match entities: %w", err)
	}
	lucene := req.Text
	if !req.Syntax {
		if len(tokens) == 0 {
			return nil, fmt.Errorf("graph: match entities: %w: no word to match", spi.ErrNothingToSearch)
		}
		lucene = LuceneTerms(tokens)
	} else if strings.TrimSpace(lucene) == "" {
		return nil, fmt.Errorf("graph: match entities: %w: empty query", spi.ErrNothingToSearch)
	}
	filter := req.Filter
	if tokens == nil {
		tokens = []string{}
	}
	var refs []spi.Ref
	err = b.read(ctx, "match entities", func(r runner) error {
		recs, err := run(ctx, r, matchCypher, map[string]any{
			"index": FulltextEntityTerms, "lucene": lucene, "syntax": req.Syntax, "tokens": tokens,
			"candidates": b.cfg.MaxEntityCandidates, "maxDegree": b.cfg.MaxDegree, "degKey": degKey(req.Tenant), "maxEntities": b.cfg.MaxMatchEntities,
			"tenant": req.Tenant, filterKey: filter, "k": req.K,
		})
		if err != nil {
			return err
		}
		refs = make([]spi.Ref, 0, len(recs))
		for _, rec := range recs {
			id, _ := rec.Values[0].(string)
			score, _ := rec.Values[1].(float64)
			refs = append(refs, spi.Ref{ID: id, Score: score, Source: spi.SourceGraph})
		}
		return nil
	})
	return refs, err
}

// LuceneTerms builds a Lucene query matching any of terms literally: each
// term is quoted with backslash and quote escaped, joined by OR.
func LuceneTerms(terms []string) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('"')
		for _, r := range t {
			if r == '"' || r == '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		b.WriteByte('"')
	}
	return b.String()
}

const hydrateCypher = `
UNWIND $ids AS id
MATCH (d:Document {id: id}) WHERE d.stub IS NULL
RETURN d.id AS id, properties(d) AS props,
  COLLECT { MATCH (d)-[:MENTIONS]->(e:Entity) RETURN e.name } AS entities,
  COLLECT { MATCH (d)-[:LINKS_TO]->(t:Document) RETURN t.id } AS links`

// Hydrate returns the stored documents for ids in the order of ids (each
// once) with their normalised entities and link targets, both sorted, and
// the ids that do not exist in missing.
func (b *Backend) Hydrate(ctx context.Context, ids []string) ([]spi.Document, []string, error) {
	ids = graphspec.Dedupe(ids)
	if len(ids) == 0 {
		if err := b.precheck(ctx, "hydrate"); err != nil {
			return nil, nil, err
		}
		return nil, nil, nil
	}
	found := make(map[string]spi.Document, len(ids))
	err := b.read(ctx, "hydrate", func(r runner) error {
		recs, err := run(ctx, r, hydrateCypher, map[string]any{"ids": ids})
		if err != nil {
			return err
		}
		for _, rec := range recs {
			d := docFromProps(rec.Values[1].(map[string]any))
			d.Entities = sortedStrings(rec.Values[2])
			d.Links = sortedStrings(rec.Values[3])
			found[d.ID] = d
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	var docs []spi.Document
	var missing []string
	for _, id := range ids {
		if d, ok := found[id]; ok {
			docs = append(docs, d)
		} else {
			missing = append(missing, id)
		}
	}
	return docs, missing, nil
}

func docFromProps(p map[string]any) spi.Document {
	var d spi.Document
	for k, v := range p {
		s, _ := v.(string)
		switch {
		case k == "id":
			d.ID = s
		case k == "tenant":
			d.Tenant = s
		case k == "title":
			d.Title = s
		case k == "text":
			d.Text = s
		case k == "updated_at":
			if t, ok := v.(time.Time); ok {
				d.UpdatedAt = t
			}
		case strings.HasPrefix(k, metaPrefix):
			if d.Metadata == nil {
				d.Metadata = spi.Metadata{}
			}
			d.Metadata[strings.TrimPrefix(k, metaPrefix)] = spi.String(s)
		case strings.HasPrefix(k, metaJSONPrefix):
			var v spi.Value
			if json.Unmarshal([]byte(s), &v) == nil {
				if d.Metadata == nil {
					d.Metadata = spi.Metadata{}
				}
				d.Metadata[strings.TrimPrefix(k, metaJSONPrefix)] = v
			}
		}
	}
	return d
}

func sortedStrings(v any) []string {
	l, _ := v.([]any)
	if len(l) == 0 {
		return nil
	}
	out := make([]string, 0, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// Query runs a parameterised Cypher query in a READ access-mode session and
// returns its rows as column → value maps of plain Go values: nodes and
// relationships become their property maps, paths a map with "nodes" and
// "relationships", temporal values time.Time (durations their ISO string),
// points maps with srid, x, y (and z). A write is rejected by the server and
// wraps spi.ErrInvalidQuery, as do syntax errors. Pass user input as
// params, never by building the query string.
func (b *Backend) Query(ctx context.Context, query string, params map[string]any) ([]map[string]any, error) {
	var rows []map[string]any
	err := b.read(ctx, "query", func(r runner) error {
		recs, err := run(ctx, r, query, params)
		if err != nil {
			return err
		}
		rows = make([]map[string]any, len(recs))
		for i, rec := range recs {
			row := make(map[string]any, len(rec.Keys))
			for j, k := range rec.Keys {
				row[k] = plain(rec.Values[j])
			}
			rows[i] = row
		}
		return nil
	})
	return rows, err
}

// plain converts driver values to plain Go values.
func plain(v any) any {
	switch x := v.(type) {
	case neo4j.Node:
		return plainMap(x.Props)
	case neo4j.Relationship:
		return plainMap(x.Props)
	case neo4j.Path:
		nodes := make([]any, len(x.Nodes))
		for i, n := range x.Nodes {
			nodes[i] = plainMap(n.Props)
		}
		rels := make([]any, len(x.Relationships))
		for i, r := range x.Relationships {
			rels[i] = plainMap(r.Props)
		}
		return map[string]any{"nodes": nodes, "relationships": rels}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case map[string]any:
		return plainMap(x)
	case dbtype.Date:
		return x.Time()
	case dbtype.LocalDateTime:
		return x.Time()
	case dbtype.LocalTime:
		return x.Time()
	case dbtype.Time:
		return x.Time()
	case dbtype.Duration:
		return x.String()
	case dbtype.Point2D:
		return map[string]any{"srid": int64(x.SpatialRefId), "x": x.X, "y": x.Y}
	case dbtype.Point3D:
		return map[string]any{"srid": int64(x.SpatialRefId), "x": x.X, "y": x.Y, "z": x.Z}
	default:
		return v
	}
}

func plainMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = plain(v)
	}
	return out
}
