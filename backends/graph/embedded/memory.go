package embedded

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/ragd/ragd/backends/graph/graphspec"
	"github.com/ragd/ragd/internal/topk"
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
//
// Invariants (checkModel in the tests, after every round of
// TestBatchEqualsOneByOne): an entity's docs are existing documents that
// list it in their ents; its tenants are ascending by tenant number, each
// count above 0, and count its docs by their tenant; termEnt[t] holds
// entity e exactly once when e has a mentioner and t is one of
// graphspec.Tokens(e's name), and never otherwise.
type memGraph struct {
	mu        sync.RWMutex
	docIdx    map[string]int32
	docs      []memDoc
	entIdx    map[string]int32
	ents      []memEnt
	termEnt   map[string][]int32 // term -> entities with at least one mentioner
	tenantIdx map[string]uint32  // tenant -> its number (memDoc.tenant, tenantCount.t)
	scratch   sync.Pool          // *scratch sized to len(docs) at Get time
}

type memDoc struct {
	id     string
	exists bool
	tenant uint32 // its number in tenantIdx
	meta   spi.Metadata
	ents   []int32 // entities mentioned, sorted by slot
	out    []int32 // link targets (which may not exist yet)
	in     []int32 // link sources
}

// memEnt is an entity. Its terms (graphspec.Tokens of the name) are not
// kept: only a write that gives it its first mentioner or takes its last
// needs them, to add it to or drop it from termEnt.
type memEnt struct {
	name string
	docs []int32 // existing documents mentioning it, any tenant
	// tenants counts docs by their tenant, by tenant number, ascending:
	// the entity's degree within each tenant, which decides whether it is
	// a hub for that tenant. A sorted slice, not a map: most entities
	// have one mentioner or a few, and a map per entity was a third of
	// the read model's heap (a million documents' graph then outgrew the
	// shipped 1 GiB soft memory limit, and the collector ran nearly
	// non-stop while it was built).
	tenants []tenantCount
}

// tenantCount is an entity's mentioners in tenant number t.
type tenantCount struct {
	t uint32
	n int32
}

// count returns e's mentioners in tenant number t.
func (e *memEnt) count(t uint32) int32 {
	if i, ok := slices.BinarySearchFunc(e.tenants, t, cmpTenant); ok {
		return e.tenants[i].n
	}
	return 0
}

// addCount adds delta to e's mentioners in tenant number t, dropping the
// tenant at 0.
func (e *memEnt) addCount(t uint32, delta int32) {
	i, ok := slices.BinarySearchFunc(e.tenants, t, cmpTenant)
	switch {
	case !ok && delta > 0:
		e.tenants = slices.Insert(e.tenants, i, tenantCount{t, delta})
	case ok:
		if e.tenants[i].n += delta; e.tenants[i].n <= 0 {
			e.tenants = slices.Delete(e.tenants, i, i+1)
		}
	}
}

func cmpTenant(c tenantCount, t uint32) int { return cmp.Compare(c.t, t) }

// tenant returns the number of tenant name, numbering it if new. The
// caller holds mu for writing (or owns g exclusively).
func (g *memGraph) tenant(name string) uint32 {
	t, ok := g.tenantIdx[name]
	if !ok {
		t = uint32(len(g.tenantIdx))
		g.tenantIdx[name] = t
	}
	return t
}

// scratch is per-call working memory indexed by document slot: a few
// dense counters and the slots touched, so a call neither allocates maps
// nor clears more than it used.
type scratch struct {
	count   []int32 // connectors from the current seed (edges)
	paths   []int32 // distance-1 paths, then distance-2 paths
	seeds   []int32 // seeds adjacent to each distance-1 document
	mark    []uint8 // bit 1: seed, bit 2: distance 1, bit 4: excluded by the filter
	score   []float64
	hits    []int32 // per entity slot, the query's tokens among its terms (matchEntities)
	ents    []int32 // entity slots with hits set
	touched []int32 // slots with count set
	near    []int32 // slots with paths, seeds or mark set
}

func (s *scratch) grow(n int) {
	if len(s.count) >= n {
		return
	}
	n += n / 4
	s.count, s.paths, s.seeds = make([]int32, n), make([]int32, n), make([]int32, n)
	s.mark, s.score = make([]uint8, n), make([]float64, n)
}

// reset clears what the call used, and only that: a call touches a few
// slots of arrays sized for the whole graph.
func (s *scratch) reset() {
	for _, i := range s.touched {
		s.count[i] = 0
	}
	for _, i := range s.near {
		s.paths[i], s.seeds[i], s.mark[i], s.score[i] = 0, 0, 0, 0
	}
	for _, e := range s.ents {
		s.hits[e] = 0
	}
	s.touched, s.near, s.ents = s.touched[:0], s.near[:0], s.ents[:0]
}

func newMemGraph() *memGraph {
	return &memGraph{docIdx: map[string]int32{}, entIdx: map[string]int32{}, termEnt: map[string][]int32{}, tenantIdx: map[string]uint32{}}
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
			d.tenant = g.tenant(string(tx.Bucket(bTenant).Get(k)))
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
		g.ents = append(g.ents, memEnt{name: name})
		g.entIdx[name] = e
	}
	ent := &g.ents[e]
	if len(ent.docs) == 0 {
		for _, t := range graphspec.Tokens(name) {
			g.termEnt[t] = append(g.termEnt[t], e)
		}
	}
	ent.docs = append(ent.docs, d)
	ent.addCount(g.docs[d].tenant, 1)
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
		md.exists, md.tenant, md.meta = true, g.tenant(d.Tenant), d.Metadata
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
		g.docs[i].exists, g.docs[i].meta = false, nil
	}
}

// removeEdges drops d's mentions and outgoing links, pruning entities left
// without mentioners from the term index. Incoming links stay.
func (g *memGraph) removeEdges(d int32) {
	md := &g.docs[d]
	for _, e := range md.ents {
		ent := &g.ents[e]
		ent.docs = deleteOne(ent.docs, d)
		ent.addCount(md.tenant, -1)
		if len(ent.docs) == 0 {
			for _, t := range graphspec.Tokens(ent.name) {
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
	s.grow(len(g.docs))
	if len(s.hits) < len(g.ents) {
		s.hits = make([]int32, len(g.ents)+len(g.ents)/4)
	}
	return s
}

func (g *memGraph) putScratch(s *scratch) {
	s.reset()
	g.scratch.Put(s)
}

// view is one read of the model for one request: tenant and filter
// bound, the model read-locked by the caller.
type view struct {
	g         *memGraph
	all       bool   // no tenant: every tenant's documents
	tenant    uint32 // else the tenant's number (noTenant when it has none)
	filter    spi.Filter
	maxDegree int
}

// noTenant is the view's tenant number for a tenant no document has.
const noTenant = math.MaxUint32

// newView returns the view of g for tenant ("": every tenant) and filter.
// The caller holds g.mu for reading.
func newView(g *memGraph, tenant string, filter spi.Filter, maxDegree int) view {
	v := view{g: g, all: tenant == "", tenant: noTenant, filter: filter, maxDegree: maxDegree}
	if t, ok := g.tenantIdx[tenant]; ok {
		v.tenant = t
	}
	return v
}

func (v *view) inTenant(d int32) bool {
	md := &v.g.docs[d]
	return md.exists && (v.all || md.tenant == v.tenant)
}

func (v *view) matches(d int32) bool {
	return v.filter.Match(v.g.docs[d].meta)
}

// degree is the number of the view's tenant's documents mentioning e (of
// all tenants when the view has none).
func (v *view) degree(e int32) int {
	ent := &v.g.ents[e]
	if v.all {
		return len(ent.docs)
	}
	return int(ent.count(v.tenant))
}

// mentioners returns the documents mentioning e, of any tenant (callers
// keep the view's), or nil when e is a hub for the view's tenant or no
// document of it mentions e.
func (v *view) mentioners(e int32) []int32 {
	if n := v.degree(e); n == 0 || n > v.maxDegree {
		return nil
	}
	return v.g.ents[e].docs
}

// matchEntities implements the entity-match rule of package graphspec.
func (v *view) matchEntities(ctx context.Context, tokens []string, maxEntities, k int) ([]spi.Ref, error) {
	g := v.g
	s := g.getScratch()
	defer g.putScratch(s)
	// An entity's weight is the number of the query's tokens among its
	// terms (the rule in package graphspec): the number of the tokens'
	// lists it is in, as the tokens are distinct and an entity is in the
	// list of each of its terms once.
	for _, t := range tokens {
		for _, e := range g.termEnt[t] {
			if s.hits[e] == 0 {
				s.ents = append(s.ents, e)
			}
			s.hits[e]++
		}
	}
	var ents []graphspec.WeightedEntity
	for _, e := range s.ents {
		if v.mentioners(e) != nil { // not a hub, and mentioned in the tenant
			ents = append(ents, graphspec.WeightedEntity{Name: g.ents[e].name, Weight: float64(s.hits[e])})
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, we := range graphspec.TopEntities(ents, maxEntities) {
		for _, d := range v.mentioners(g.entIdx[we.Name]) {
			if !v.inTenant(d) || !v.matches(d) {
				continue
			}
			if s.mark[d] == 0 {
				s.mark[d] = 1
				s.near = append(s.near, d)
			}
			s.score[d] += we.Weight
		}
	}
	return topRefs(g, s.near, k, func(d int32) float64 { return s.score[d] }, spi.SourceGraph), nil
}

// neighbours calls fn once for every neighbour of f in the view's tenant
// (other than f) with the number of its connectors: shared non-hub
// entities, plus one for a link in either direction.
func (v *view) neighbours(s *scratch, f int32, fn func(to, connectors int32)) {
	g := v.g
	start := len(s.touched)
	add := func(to int32) {
		if to == f || !v.inTenant(to) {
			return
		}
		if s.count[to] == 0 {
			s.touched = append(s.touched, to)
		}
		s.count[to]++
	}
	md := &g.docs[f]
	for _, e := range md.ents {
		for _, d := range v.mentioners(e) {
			add(d)
		}
	}
	for _, to := range md.out {
		add(to)
	}
	for _, from := range md.in {
		if !slices.Contains(md.out, from) {
			add(from)
		}
	}
	for _, to := range s.touched[start:] {
		fn(to, s.count[to])
		s.count[to] = 0
	}
	s.touched = s.touched[:start]
}

const (
	markSeed     = 1
	markNear     = 2
	markExcluded = 4
)

// expand implements graphspec's Expand rule over the read model directly
// (dense counters instead of edge lists and maps); the contract suite and
// the Neo4j parity test hold it to the same answers.
func (v *view) expand(ctx context.Context, seeds []string, opts spi.ExpandOptions) ([]spi.Ref, error) {
	if err := graphspec.ValidateExpand(opts); err != nil {
		return nil, err
	}
	if len(seeds) == 0 {
		return nil, nil
	}
	g := v.g
	s := g.getScratch()
	defer g.putScratch(s)
	var from []int32
	for _, id := range seeds {
		if d, ok := g.docIdx[id]; ok && s.mark[d]&markSeed == 0 {
			s.mark[d] |= markSeed
			s.near = append(s.near, d)
			if v.inTenant(d) {
				from = append(from, d)
			}
		}
	}
	// Distance 1: paths = connectors summed over seeds; how many seeds reach
	// each document weighs the second hop. A document failing the filter
	// is not returned but still leads on.
	var dist1 []int32
	for n, f := range from {
		if n%64 == 63 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		v.neighbours(s, f, func(to, c int32) {
			if s.mark[to]&markSeed != 0 {
				return
			}
			if s.mark[to] == 0 {
				s.near = append(s.near, to)
			}
			if s.mark[to]&markNear == 0 {
				s.mark[to] |= markNear
				dist1 = append(dist1, to)
				if !v.matches(to) {
					s.mark[to] |= markExcluded
				}
			}
			s.paths[to] += c
			s.seeds[to]++
		})
	}
	var returnable []int32
	for _, d := range dist1 {
		if s.mark[d]&markExcluded == 0 {
			returnable = append(returnable, d)
		}
	}
	score1 := func(d int32) float64 { return graphspec.ExpandScore(1, int(s.paths[d])) }
	refs := topRefs(g, returnable, opts.Limit, score1, spi.SourceGraphExpand)
	if len(refs) >= opts.Limit || opts.Hops < 2 || len(dist1) == 0 {
		return refs, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Distance 2: per candidate outside the seeds and distance 1 that
	// passes the filter, the summed weights of its distance-1 neighbours.
	var dist2 []int32
	for _, fr := range dist1 {
		w := s.seeds[fr]
		v.neighbours(s, fr, func(to, _ int32) {
			if s.mark[to]&(markSeed|markNear) != 0 {
				return
			}
			if s.mark[to] == 0 {
				s.near = append(s.near, to)
				s.mark[to] = 8 // distance 2
				dist2 = append(dist2, to)
				if !v.matches(to) {
					s.mark[to] |= markExcluded
				}
			}
			s.score[to] += float64(w)
		})
	}
	kept := dist2[:0]
	for _, d := range dist2 {
		if s.mark[d]&markExcluded == 0 {
			kept = append(kept, d)
		}
	}
	score2 := func(d int32) float64 { return graphspec.ExpandScore(2, int(s.score[d])) }
	return append(refs, topRefs(g, kept, opts.Limit-len(refs), score2, spi.SourceGraphExpand)...), nil
}

// topRefs returns the k best of docs by score descending, then id
// ascending, as refs of source (never nil).
func topRefs(g *memGraph, docs []int32, k int, score func(int32) float64, source string) []spi.Ref {
	h := topk.New(k)
	for _, d := range docs {
		h.Offer(spi.Ref{ID: g.docs[d].id, Score: score(d), Source: source})
	}
	return h.Sorted()
}
