package embedded

import (
	"context"
	"fmt"
	"math"

	bolt "go.etcd.io/bbolt"

	"github.com/ragd/ragd/backends/graph/graphspec"
	"github.com/ragd/ragd/spi"
)

// Hydrate returns the stored documents for ids in the order of ids (each
// once) with their normalised entities and link targets, both sorted, and
// the ids that do not exist in missing.
func (s *Store) Hydrate(ctx context.Context, ids []string) ([]spi.Document, []string, error) {
	ids = graphspec.Dedupe(ids)
	var docs []spi.Document
	var missing []string
	err := s.view(ctx, "hydrate", func(tx *bolt.Tx) error {
		docsB, docEnt, out := tx.Bucket(bDocs), tx.Bucket(bDocEnt), tx.Bucket(bLinkOut)
		for _, id := range ids {
			v := docsB.Get([]byte(id))
			if v == nil {
				missing = append(missing, id)
				continue
			}
			r, err := decodeRecord(v)
			if err != nil {
				return err
			}
			docs = append(docs, spi.Document{
				ID: id, Tenant: r.Tenant, Title: r.Title, Text: r.Text, Metadata: r.Metadata, UpdatedAt: r.UpdatedAt,
				Entities: seconds(docEnt, id), Links: seconds(out, id),
			})
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return docs, missing, nil
}

// Expand returns documents related to seeds, ranked by the rule documented
// in package graphspec: hop distance ascending, then distinct connecting
// paths descending, then id; Ref.Score = graphspec.ExpandScore. Documents
// failing opts.Filter are left out before the Limit cut but still connect
// the documents beyond them. Hops outside 1..2, Limit < 1 or an invalid
// filter wrap spi.ErrInvalidQuery.
func (s *Store) Expand(ctx context.Context, seeds []string, opts spi.ExpandOptions) ([]spi.Ref, error) {
	var refs []spi.Ref
	err := s.view(ctx, "expand", func(tx *bolt.Tx) error {
		r := reader{tx: tx, tenant: opts.Tenant, filter: opts.Filter, maxDegree: s.maxDegree}
		var err error
		refs, err = graphspec.Expand(ctx, seeds, opts, r.adjacency, r.secondHop)
		return err
	})
	return refs, err
}

// MatchEntities matches req.Text against entity names and ranks the
// documents that mention the matches (rule in package graphspec: the sum of
// matched entities' weights, a weight being the number of distinct query
// tokens among the entity's terms). Syntax queries wrap spi.ErrUnsupported.
func (s *Store) MatchEntities(ctx context.Context, req spi.KeywordRequest) ([]spi.Ref, error) {
	tokens, err := graphspec.ValidateMatch(req)
	if err != nil {
		return nil, fmt.Errorf("graph/embedded: match entities: %w", err)
	}
	if req.Syntax {
		return nil, fmt.Errorf("graph/embedded: match entities: %w: no query syntax in the embedded graph store", spi.ErrUnsupported)
	}
	if len(tokens) == 0 {
		return nil, nil
	}
	var refs []spi.Ref
	err = s.view(ctx, "match entities", func(tx *bolt.Tx) error {
		r := reader{tx: tx, tenant: req.Tenant, filter: req.Filter, maxDegree: s.maxDegree}
		termEnt := tx.Bucket(bTermEnt)
		seen := map[string]bool{}
		var ents []graphspec.WeightedEntity
		for _, t := range tokens {
			scanPrefix(termEnt, t, func(e string) bool {
				if !seen[e] {
					seen[e] = true
					ents = append(ents, graphspec.WeightedEntity{Name: e, Weight: float64(graphspec.Overlap(graphspec.Tokens(e), tokens))})
				}
				return true
			})
		}
		kept := ents[:0]
		for _, e := range ents {
			if len(r.mentioners(e.Name)) > 0 { // hubs come back empty
				kept = append(kept, e)
			}
		}
		scores := map[string]float64{}
		for i, e := range graphspec.TopEntities(kept, s.maxEntities) {
			if i%64 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			for _, d := range r.mentioners(e.Name) {
				ok, err := r.visible(d)
				if err != nil {
					return err
				}
				if ok {
					scores[d] += e.Weight
				}
			}
		}
		refs = graphspec.TopDocs(scores, req.K)
		return nil
	})
	return refs, err
}

// reader answers adjacency questions inside one read transaction, caching
// per-call lookups. filter marks the adjacency's Excluded edges.
type reader struct {
	tx        *bolt.Tx
	tenant    string
	filter    spi.Filter
	maxDegree int
	tenants   map[string]*string // id -> tenant, nil when the document does not exist
	docsOf    map[string][]string
	matched   map[string]bool // id -> passes filter
}

// tenantOf reports whether id is a stored document and its tenant.
func (r *reader) tenantOf(id string) (string, bool) {
	if r.tenants == nil {
		r.tenants = map[string]*string{}
	}
	t, ok := r.tenants[id]
	if !ok {
		if v := r.tx.Bucket(bTenant).Get([]byte(id)); v != nil {
			s := string(v)
			t = &s
		}
		r.tenants[id] = t
	}
	if t == nil {
		return "", false
	}
	return *t, true
}

func (r *reader) inTenant(id string) bool {
	t, ok := r.tenantOf(id)
	return ok && (r.tenant == "" || t == r.tenant)
}

// visible is inTenant plus the metadata filter.
func (r *reader) visible(id string) (bool, error) {
	if !r.inTenant(id) {
		return false, nil
	}
	return r.matches(id)
}

// matches reports whether the stored document id passes r.filter (true
// when there is none), decoding each record at most once per reader.
func (r *reader) matches(id string) (bool, error) {
	if len(r.filter) == 0 {
		return true, nil
	}
	if ok, seen := r.matched[id]; seen {
		return ok, nil
	}
	md, err := decodeMetadata(r.tx.Bucket(bDocs).Get([]byte(id)))
	if err != nil {
		return false, err
	}
	if r.matched == nil {
		r.matched = map[string]bool{}
	}
	ok := r.filter.Match(md)
	r.matched[id] = ok
	return ok, nil
}

// mentioners returns the documents mentioning entity e (any tenant), or nil
// when e is a hub mentioned by more than maxDegree documents.
func (r *reader) mentioners(e string) []string {
	if r.docsOf == nil {
		r.docsOf = map[string][]string{}
	}
	if ds, ok := r.docsOf[e]; ok {
		return ds
	}
	var ds []string
	scanPrefix(r.tx.Bucket(bEntDoc), e, func(d string) bool {
		ds = append(ds, d)
		return len(ds) <= r.maxDegree
	})
	if len(ds) > r.maxDegree {
		ds = nil
	}
	r.docsOf[e] = ds
	return ds
}

// adjacency implements graphspec.AdjacencyFunc over the stored buckets.
func (r *reader) adjacency(ctx context.Context, from []string) ([]graphspec.Edge, error) {
	return r.edges(ctx, from, true)
}

// secondHop implements graphspec.SecondHopFunc. It aggregates over the
// unfiltered adjacency and applies the filter afterwards in rank order,
// stopping once limit documents pass, so only the records of candidates
// that can still be returned are read (the frontier's neighbourhood is
// large; the filter check decodes a record).
func (r *reader) secondHop(ctx context.Context, weights map[string]int, exclude []string, limit int) ([]graphspec.Hop2, error) {
	if len(r.filter) == 0 {
		return graphspec.SecondHopFromAdjacency(r.adjacency)(ctx, weights, exclude, limit)
	}
	unfiltered := func(ctx context.Context, from []string) ([]graphspec.Edge, error) { return r.edges(ctx, from, false) }
	all, err := graphspec.SecondHopFromAdjacency(unfiltered)(ctx, weights, exclude, math.MaxInt)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for i, h := range all {
		if len(out) == limit {
			break
		}
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		ok, err := r.matches(h.ID)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, h)
		}
	}
	return out, nil
}

// edges is the adjacency; filtered sets Edge.Excluded from r.filter.
func (r *reader) edges(ctx context.Context, from []string, filtered bool) ([]graphspec.Edge, error) {
	docEnt, out, in := r.tx.Bucket(bDocEnt), r.tx.Bucket(bLinkOut), r.tx.Bucket(bLinkIn)
	var edges []graphspec.Edge
	for i, f := range from {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if !r.inTenant(f) {
			continue
		}
		counts := map[string]int{}
		var order []string
		add := func(to string, n int) {
			if to == f || !r.inTenant(to) {
				return
			}
			if _, ok := counts[to]; !ok {
				order = append(order, to)
			}
			counts[to] += n
		}
		for _, e := range seconds(docEnt, f) {
			for _, d := range r.mentioners(e) {
				add(d, 1)
			}
		}
		linked := map[string]bool{}
		for _, b := range []*bolt.Bucket{out, in} {
			scanPrefix(b, f, func(to string) bool { linked[to] = true; return true })
		}
		for to := range linked {
			add(to, 1)
		}
		for _, to := range order {
			ok := true
			if filtered {
				var err error
				if ok, err = r.matches(to); err != nil {
					return nil, err
				}
			}
			edges = append(edges, graphspec.Edge{From: f, To: to, Connectors: counts[to], Excluded: !ok})
		}
	}
	return edges, nil
}
