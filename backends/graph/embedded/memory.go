package embedded

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/ragd/ragd/backends/graph/graphspec"
	"github.com/ragd/ragd/spi"
)

// memGraph is the store's read model: the adjacency of the bbolt buckets
// held in memory with documents and entities interned as int32 slots, so
// that MatchEntities and Expand touch no B-tree and allocate little. It is
// loaded once at Open and updated after every committed write, under the
// store's write lock, in commit order. bbolt stays the durable copy;
// Hydrate still reads it.
//
// Slots are never freed: a deleted document keeps its slot (exists false)
// so that dormant links to it revive when it is upserted again, and an
// entity without mentioners keeps its slot but leaves the term index.
type memGraph struct {
	mu      sync.RWMutex
	docIdx  map[string]int32
	docs    []memDoc
	entIdx  map[string]int32
	ents    []memEnt
	termEnt map[string][]int32 // term -> entities with at least one mentioner
	scratch sync.Pool          // *scratch sized to len(docs) at Get time
}

type memDoc struct {
	id     string
	exists bool
	tenant string
	meta   map[string]string
	ents   []int32 // entities mentioned, sorted by slot
	out    []int32 // link targets (which may not exist yet)
	in     []int32 // link sources
}

type memEnt struct {
	name  string
	terms []string
	docs  []int32 // existing documents mentioning it, any tenant
}

// scratch is per-call working memory indexed by document slot.
type scratch struct {
	count   []int32
	touched []int32
}

func newMemGraph() *memGraph {
	return &memGraph{docIdx: map[string]int32{}, entIdx: map[string]int32{}, termEnt: map[string][]int32{}}
}

// loadMemGraph reads every bucket the read model mirrors.
func loadMemGraph(db *bolt.DB) (*memGraph, error) {
	g := newMemGraph()
	err := db.View(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bDocs).ForEach(func(k, v []byte) error {
			md, err := decodeMetadata(v)
			if err != nil {
				return err
			}
			d := g.doc(string(k))
			d.exists = true
			d.tenant = string(tx.Bucket(bTenant).Get(k))
			d.meta = md
			return nil
		}); err != nil {
			return err
		}
		if err := tx.Bucket(bDocEnt).ForEach(func(k, _ []byte) error {
			id, e, ok := splitKey(k)
			if !ok {
				return fmt.Errorf("%w: doc_ent key", ErrCorrupt)
			}
			g.mention(g.slot(id), e)
			return nil
		}); err != nil {
			return err
		}
		return tx.Bucket(bLinkOut).ForEach(func(k, _ []byte) error {
			from, to, ok := splitKey(k)
			if !ok {
				return fmt.Errorf("%w: link_out key", ErrCorrupt)
			}
			g.link(g.slot(from), g.slot(to))
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	for i := range g.docs {
		slices.Sort(g.docs[i].ents)
	}
	return g, nil
}

func splitKey(k []byte) (a, b string, ok bool) {
	for i, c := range k {
		if c == 0 {
			return string(k[:i]), string(k[i+1:]), true
		}
	}
	return "", "", false
}

// slot returns id's document slot, creating it (not existing) if needed.
// The caller holds mu for writing (or owns g exclusively).
func (g *memGraph) slot(id string) int32 {
	if i, ok := g.docIdx[id]; ok {
		return i
	}
	i := int32(len(g.docs))
	g.docs = append(g.docs, memDoc{id: id})
	g.docIdx[id] = i
	return i
}

func (g *memGraph) doc(id string) *memDoc { return &g.docs[g.slot(id)] }

// mention records that document d mentions entity name.
func (g *memGraph) mention(d int32, name string) {
	e, ok := g.entIdx[name]
	if !ok {
		e = int32(len(g.ents))
		g.ents = append(g.ents, memEnt{name: name, terms: graphspec.Tokens(name)})
		g.entIdx[name] = e
	}
	ent := &g.ents[e]
	if len(ent.docs) == 0 {
		for _, t := range ent.terms {
			g.termEnt[t] = append(g.termEnt[t], e)
		}
	}
	ent.docs = append(ent.docs, d)
	g.docs[d].ents = append(g.docs[d].ents, e)
}

func (g *memGraph) link(from, to int32) {
	g.docs[from].out = append(g.docs[from].out, to)
	g.docs[to].in = append(g.docs[to].in, from)
}

// apply mirrors a committed upsert (prepared documents) or delete.
func (g *memGraph) upsert(docs []spi.Document) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, d := range docs {
		i := g.slot(d.ID)
		g.removeEdges(i)
		md := &g.docs[i]
		md.exists, md.tenant, md.meta = true, d.Tenant, d.Metadata
		for _, e := range d.Entities {
			g.mention(i, e)
		}
		slices.Sort(g.docs[i].ents)
		for _, to := range d.Links {
			g.link(i, g.slot(to))
		}
	}
}

func (g *memGraph) delete(ids []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, id := range ids {
		i, ok := g.docIdx[id]
		if !ok || !g.docs[i].exists {
			continue
		}
		g.removeEdges(i)
		g.docs[i].exists, g.docs[i].tenant, g.docs[i].meta = false, "", nil
	}
}

// removeEdges drops d's mentions and outgoing links, pruning entities left
// without mentioners from the term index. Incoming links stay.
func (g *memGraph) removeEdges(d int32) {
	md := &g.docs[d]
	for _, e := range md.ents {
		ent := &g.ents[e]
		ent.docs = deleteOne(ent.docs, d)
		if len(ent.docs) == 0 {
			for _, t := range ent.terms {
				g.termEnt[t] = deleteOne(g.termEnt[t], e)
				if len(g.termEnt[t]) == 0 {
					delete(g.termEnt, t)
				}
			}
		}
	}
	md.ents = md.ents[:0]
	for _, to := range md.out {
		g.docs[to].in = deleteOne(g.docs[to].in, d)
	}
	md.out = md.out[:0]
}

func deleteOne(s []int32, v int32) []int32 {
	if i := slices.Index(s, v); i >= 0 {
		return slices.Delete(s, i, i+1)
	}
	return s
}

func (g *memGraph) getScratch() *scratch {
	s, _ := g.scratch.Get().(*scratch)
	if s == nil {
		s = &scratch{}
	}
	if len(s.count) < len(g.docs) {
		s.count = make([]int32, len(g.docs)+len(g.docs)/4)
	}
	return s
}

// putScratch clears the touched counts and returns s to the pool.
func (g *memGraph) putScratch(s *scratch) {
	for _, i := range s.touched {
		s.count[i] = 0
	}
	s.touched = s.touched[:0]
	g.scratch.Put(s)
}

// view is one read of the model for one request: tenant and filter
// bound, the model read-locked by the caller.
type view struct {
	g         *memGraph
	tenant    string
	filter    spi.Filter
	maxDegree int
}

func (v *view) inTenant(d int32) bool {
	md := &v.g.docs[d]
	return md.exists && (v.tenant == "" || md.tenant == v.tenant)
}

func (v *view) matches(d int32) bool {
	return len(v.filter) == 0 || v.filter.Match(v.g.docs[d].meta)
}

// mentioners returns the documents mentioning e, or nil for a hub.
func (v *view) mentioners(e int32) []int32 {
	ds := v.g.ents[e].docs
	if len(ds) > v.maxDegree {
		return nil
	}
	return ds
}

// matchEntities implements the entity-match rule of package graphspec.
func (v *view) matchEntities(ctx context.Context, tokens []string, maxEntities, k int) ([]spi.Ref, error) {
	g := v.g
	var ents []graphspec.WeightedEntity
	seen := map[int32]bool{}
	for _, t := range tokens {
		for _, e := range g.termEnt[t] {
			if seen[e] {
				continue
			}
			seen[e] = true
			if len(v.mentioners(e)) == 0 { // hubs come back empty
				continue
			}
			ent := &g.ents[e]
			ents = append(ents, graphspec.WeightedEntity{Name: ent.name, Weight: float64(graphspec.Overlap(ent.terms, tokens))})
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	scores := map[string]float64{}
	for _, we := range graphspec.TopEntities(ents, maxEntities) {
		for _, d := range v.mentioners(g.entIdx[we.Name]) {
			if v.inTenant(d) && v.matches(d) {
				scores[g.docs[d].id] += we.Weight
			}
		}
	}
	return graphspec.TopDocs(scores, k), nil
}

// edges implements graphspec.AdjacencyFunc; filtered sets Edge.Excluded.
func (v *view) edges(ctx context.Context, from []string, filtered bool) ([]graphspec.Edge, error) {
	g := v.g
	s := g.getScratch()
	defer g.putScratch(s)
	var edges []graphspec.Edge
	for n, id := range from {
		if n%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		f, ok := g.docIdx[id]
		if !ok || !v.inTenant(f) {
			continue
		}
		start := len(s.touched)
		add := func(to int32, c int32) {
			if to == f || !v.inTenant(to) {
				return
			}
			if s.count[to] == 0 {
				s.touched = append(s.touched, to)
			}
			s.count[to] += c
		}
		for _, e := range g.docs[f].ents {
			for _, d := range v.mentioners(e) {
				add(d, 1)
			}
		}
		// A link counts once whichever directions exist.
		md := &g.docs[f]
		for _, to := range md.out {
			add(to, 1)
		}
		for _, from := range md.in {
			if !slices.Contains(md.out, from) {
				add(from, 1)
			}
		}
		for _, to := range s.touched[start:] {
			edges = append(edges, graphspec.Edge{From: id, To: g.docs[to].id, Connectors: int(s.count[to]),
				Excluded: filtered && !v.matches(to)})
			s.count[to] = 0
		}
		s.touched = s.touched[:start]
	}
	return edges, nil
}

func (v *view) adjacency(ctx context.Context, from []string) ([]graphspec.Edge, error) {
	return v.edges(ctx, from, true)
}

// secondHop implements graphspec.SecondHopFunc: it aggregates over the
// unfiltered adjacency and applies the filter afterwards in rank order.
func (v *view) secondHop(ctx context.Context, weights map[string]int, exclude []string, limit int) ([]graphspec.Hop2, error) {
	if len(v.filter) == 0 {
		return graphspec.SecondHopFromAdjacency(v.adjacency)(ctx, weights, exclude, limit)
	}
	unfiltered := func(ctx context.Context, from []string) ([]graphspec.Edge, error) { return v.edges(ctx, from, false) }
	all, err := graphspec.SecondHopFromAdjacency(unfiltered)(ctx, weights, exclude, math.MaxInt)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, h := range all {
		if len(out) == limit {
			break
		}
		if v.matches(v.g.docIdx[h.ID]) {
			out = append(out, h)
		}
	}
	return out, nil
}
