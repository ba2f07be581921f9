package spitest

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/graph/graphspec"
	"github.com/ragd/ragd/spi"
)

// GraphStore is what the graph contract suite exercises: the read side and
// the write side of one graph backend.
type GraphStore interface {
	spi.GraphRetrievalBackend
	spi.Indexer
}

// GraphHarness opens graph stores for RunGraph.
type GraphHarness struct {
	// Open returns a ready store for one subtest and arranges (t.Cleanup)
	// for it to be closed. Stores may share data with other tests, as the
	// single Neo4j database does: the suite isolates itself with unique ids,
	// tenants and entity terms, and deletes what it wrote.
	Open func(t *testing.T) GraphStore
	// Reopen closes s and returns a store over the same data, as after a
	// process restart. Nil skips the restart test.
	Reopen func(t *testing.T, s GraphStore) GraphStore
	// MaxDegree is the hub threshold of the opened stores, 2..20.
	MaxDegree int
}

// RunGraph runs the graph contract suite: the ranking rule of package
// graphspec on hand-made graphs for Expand and MatchEntities, tenant
// isolation, seeds, limits, metadata filters on expansion (returned
// documents only, before the limit), edge replacement, delete, hydrate, hubs,
// requests with nothing to search (spi.ErrNothingToSearch, never from the
// backend), cancellation, concurrency and restart persistence.
func RunGraph(t *testing.T, h GraphHarness) {
	if h.MaxDegree < 2 || h.MaxDegree > 20 {
		t.Fatalf("GraphHarness.MaxDegree = %d, want 2..20", h.MaxDegree)
	}
	t.Run("ExpandRanking", func(t *testing.T) { graphExpandRanking(t, h) })
	t.Run("ExpandTenant", func(t *testing.T) { graphExpandTenant(t, h) })
	t.Run("ExpandSeedsLimitErrors", func(t *testing.T) { graphExpandSeeds(t, h) })
	t.Run("ExpandFilter", func(t *testing.T) { graphExpandFilter(t, h) })
	t.Run("UpsertReplacesEdges", func(t *testing.T) { graphUpsertReplaces(t, h) })
	t.Run("DeleteAndDormantLinks", func(t *testing.T) { graphDelete(t, h) })
	t.Run("Hydrate", func(t *testing.T) { graphHydrate(t, h) })
	t.Run("Hubs", func(t *testing.T) { graphHubs(t, h) })
	t.Run("HubsPerTenant", func(t *testing.T) { graphHubsPerTenant(t, h) })
	t.Run("MatchEntities", func(t *testing.T) { graphMatch(t, h) })
	t.Run("NothingToSearch", func(t *testing.T) { graphNothingToSearch(t, h) })
	t.Run("Cancelled", func(t *testing.T) { graphCancelled(t, h) })
	t.Run("Concurrent", func(t *testing.T) { graphConcurrent(t, h) })
	t.Run("Health", func(t *testing.T) {
		g := newGraphFixture(t, h)
		if got := g.s.Health(context.Background()); got.Status != spi.StatusUp {
			t.Fatalf("Health = %+v, want up", got)
		}
	})
	if h.Reopen != nil {
		t.Run("Restart", func(t *testing.T) { graphRestart(t, h) })
	}
}

// graphFixture namespaces one subtest: ids, tenants and entity terms all
// carry a random suffix so tests sharing a database never meet.
type graphFixture struct {
	t   *testing.T
	s   GraphStore
	ns  string
	mu  sync.Mutex
	ids map[string]bool
}

func newGraphFixture(t *testing.T, h GraphHarness) *graphFixture {
	t.Helper()
	var b [5]byte
	if _, err := crand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	g := &graphFixture{t: t, s: h.Open(t), ns: "z" + hex.EncodeToString(b[:]), ids: map[string]bool{}}
	t.Cleanup(func() { g.cleanup() })
	return g
}

func (g *graphFixture) cleanup() {
	g.mu.Lock()
	ids := make([]string, 0, len(g.ids))
	for id := range g.ids {
		ids = append(ids, id)
	}
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := g.s.Delete(ctx, ids); err != nil {
		g.t.Logf("cleanup: delete: %v", err)
		return
	}
	g.mu.Lock()
	for _, id := range ids {
		delete(g.ids, id)
	}
	g.mu.Unlock()
}

// id, tenant and word map short names into the fixture's namespace.
func (g *graphFixture) id(short string) string     { return g.ns + "-" + short }
func (g *graphFixture) tenant(short string) string { return g.ns + "-" + short }
func (g *graphFixture) word(w string) string       { return w + g.ns }

// ent maps a space-separated phrase of short words to a namespaced entity.
func (g *graphFixture) ent(phrase string) string {
	ws := strings.Fields(phrase)
	for i, w := range ws {
		ws[i] = g.word(w)
	}
	return strings.Join(ws, " ")
}

func (g *graphFixture) idsOf(shorts ...string) []string {
	out := make([]string, len(shorts))
	for i, s := range shorts {
		out[i] = g.id(s)
	}
	return out
}

// gdoc is a compact document description: short id, short tenant, short
// entity phrases, short link ids.
type gdoc struct {
	id, tenant string
	ents       []string
	links      []string
	meta       map[string]string
	typed      spi.Metadata // when set, the metadata instead of meta
}

func (g *graphFixture) doc(d gdoc) spi.Document {
	out := spi.Document{ID: g.id(d.id), Tenant: g.tenant(d.tenant), Title: "title " + d.id, Text: "text of " + d.id, Metadata: spi.Strings(d.meta)}
	if d.typed != nil {
		out.Metadata = d.typed
	}
	for _, e := range d.ents {
		out.Entities = append(out.Entities, g.ent(e))
	}
	for _, l := range d.links {
		out.Links = append(out.Links, g.id(l))
	}
	return out
}

func (g *graphFixture) upsert(ds ...gdoc) {
	g.t.Helper()
	docs := make([]spi.Document, len(ds))
	g.mu.Lock()
	for i, d := range ds {
		docs[i] = g.doc(d)
		g.ids[docs[i].ID] = true
	}
	g.mu.Unlock()
	if err := g.s.Upsert(context.Background(), docs); err != nil {
		g.t.Fatalf("Upsert: %v", err)
	}
}

func (g *graphFixture) del(shorts ...string) {
	g.t.Helper()
	if err := g.s.Delete(context.Background(), g.idsOf(shorts...)); err != nil {
		g.t.Fatalf("Delete: %v", err)
	}
}

// scored is an expected ref: short id and score.
type scored struct {
	id    string
	score float64
}

func (g *graphFixture) expand(seeds []string, hops, limit int, tenant string) []spi.Ref {
	g.t.Helper()
	return g.expandFiltered(seeds, hops, limit, tenant, spi.Filter{})
}

func (g *graphFixture) expandFiltered(seeds []string, hops, limit int, tenant string, f spi.Filter) []spi.Ref {
	g.t.Helper()
	opts := spi.ExpandOptions{Hops: hops, Limit: limit, Filter: f}
	if tenant != "" {
		opts.Tenant = g.tenant(tenant)
	}
	refs, err := g.s.Expand(context.Background(), g.idsOf(seeds...), opts)
	if err != nil {
		g.t.Fatalf("Expand(%v, hops %d, limit %d, tenant %q, filter %v): %v", seeds, hops, limit, tenant, f, err)
	}
	return refs
}

// wantRefs compares refs with the expected short ids and scores, in order.
func (g *graphFixture) wantRefs(what string, got []spi.Ref, want []scored, source string) {
	g.t.Helper()
	match := len(got) == len(want)
	for i := 0; match && i < len(got); i++ {
		match = got[i].ID == g.id(want[i].id) && got[i].Source == source &&
			abs(got[i].Score-want[i].score) < 1e-9
	}
	if !match {
		g.t.Fatalf("%s:\n got  %s\n want %s (source %s)", what, g.fmtRefs(got), fmtScored(want), source)
	}
}

func (g *graphFixture) fmtRefs(refs []spi.Ref) string {
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = fmt.Sprintf("%s:%.4f/%s", strings.TrimPrefix(r.ID, g.ns+"-"), r.Score, r.Source)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func fmtScored(s []scored) string {
	parts := make([]string, len(s))
	for i, r := range s {
		parts[i] = fmt.Sprintf("%s:%.4f", r.id, r.score)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// one and two are expected Expand scores at distance 1 and 2.
func one(id string, paths int) scored { return scored{id, graphspec.ExpandScore(1, paths)} }
func two(id string, paths int) scored { return scored{id, graphspec.ExpandScore(2, paths)} }

// expandGraph is the hand-made graph most Expand tests use, with the
// metadata of expandGraphMeta:
//
//	a: x y        -> b      (tenant T)  lang en
//	b: y u                  (T)         lang de, doc.type paper
//	c: x y v q u  -> a      (T)         lang de
//	h:            -> a      (T)         lang en, doc.type paper
//	i: q                    (T)         lang en
//	j: u                    (T)         lang de, doc.type paper, topic flow
//	k: x w                  (tenant U)  lang en
//	m: w                    (T; reachable from a only through k)  lang de
//	z: zz                   (T; isolated)
func (g *graphFixture) expandGraph() {
	ds := []gdoc{
		{id: "a", tenant: "T", ents: []string{"x", "y"}, links: []string{"b"}},
		{id: "b", tenant: "T", ents: []string{"y", "u"}},
		{id: "c", tenant: "T", ents: []string{"x", "y", "v", "q", "u"}, links: []string{"a"}},
		{id: "h", tenant: "T", links: []string{"a"}},
		{id: "i", tenant: "T", ents: []string{"q"}},
		{id: "j", tenant: "T", ents: []string{"u"}},
		{id: "k", tenant: "U", ents: []string{"x", "w"}},
		{id: "m", tenant: "T", ents: []string{"w"}},
		{id: "z", tenant: "T", ents: []string{"zz"}},
	}
	for i := range ds {
		ds[i].typed = expandGraphTyped(ds[i].id)
	}
	g.upsert(ds...)
}

// expandGraphMeta is the metadata of expandGraph's documents by short id.
var expandGraphMeta = map[string]map[string]string{
	"a": {"lang": "en"},
	"b": {"lang": "de", "doc.type": "paper"},
	"c": {"lang": "de"},
	"h": {"lang": "en", "doc.type": "paper"},
	"i": {"lang": "en"},
	"j": {"lang": "de", "doc.type": "paper", "topic": "flow"},
	"k": {"lang": "en"},
	"m": {"lang": "de"},
}

// expandGraphTyped is a document's expandGraphMeta with the typed values
// of TypedMetadata (the same for the same id).
func expandGraphTyped(id string) spi.Metadata {
	n := int(id[0]) * 7
	return TypedMetadata(rand.New(rand.NewPCG(uint64(n), 9)), n, spi.Strings(expandGraphMeta[id]))
}

func graphExpandRanking(t *testing.T, h GraphHarness) {
	g := newGraphFixture(t, h)
	g.expandGraph()
	src := spi.SourceGraphExpand
	// c: x, y and c->a = 3 paths; b: y and a->b = 2; h: h->a = 1.
	g.wantRefs("hops 1", g.expand([]string{"a"}, 1, 10, "T"), []scored{one("c", 3), one("b", 2), one("h", 1)}, src)
	// j: (a,b) and (a,c); i: (a,c). m only through k of tenant U.
	g.wantRefs("hops 2", g.expand([]string{"a"}, 2, 10, "T"),
		[]scored{one("c", 3), one("b", 2), one("h", 1), two("j", 2), two("i", 1)}, src)
	// Without a tenant k is one hop (x) and m two hops through k.
	g.wantRefs("hops 2, no tenant", g.expand([]string{"a"}, 2, 10, ""),
		[]scored{one("c", 3), one("b", 2), one("h", 1), one("k", 1), two("j", 2), two("i", 1), two("m", 1)}, src)
	// Two seeds: c gets a's 3 paths plus b's y and u; seeds never returned.
	g.wantRefs("two seeds", g.expand([]string{"a", "b"}, 1, 10, "T"), []scored{one("c", 5), one("h", 1), one("j", 1)}, src)
	// i is reached through c, which both seeds reach: pairs (a,c) and (b,c).
	g.wantRefs("two seeds, hops 2", g.expand([]string{"a", "b"}, 2, 10, "T"),
		[]scored{one("c", 5), one("h", 1), one("j", 1), two("i", 2)}, src)
	g.wantRefs("isolated", g.expand([]string{"z"}, 2, 10, "T"), nil, src)
}

func graphExpandTenant(t *testing.T, h GraphHarness) {
	g := newGraphFixture(t, h)
	g.expandGraph()
	src := spi.SourceGraphExpand
	for _, hops := range []int{1, 2} {
		for _, r := range g.expand([]string{"a", "c", "i"}, hops, 100, "T") {
			if r.ID == g.id("k") || r.ID == g.id("m") {
				t.Fatalf("hops %d with tenant T reached %s", hops, r.ID)
			}
		}
	}
	// A seed of another tenant is ignored like an unknown one.
	g.wantRefs("foreign seed", g.expand([]string{"k"}, 2, 10, "T"), nil, src)
	g.wantRefs("seed in its tenant", g.expand([]string{"k"}, 1, 10, "U"), nil, src)
	g.wantRefs("no tenant", g.expand([]string{"k"}, 1, 10, ""), []scored{one("a", 1), one("c", 1), one("m", 1)}, src)
}

func graphExpandSeeds(t *testing.T, h GraphHarness) {
	g := newGraphFixture(t, h)
	g.expandGraph()
	src := spi.SourceGraphExpand
	g.wantRefs("unknown seed", g.expand([]string{"nope"}, 2, 10, "T"), nil, src)
	g.wantRefs("unknown and duplicate seeds", g.expand([]string{"nope", "a", "a"}, 1, 10, "T"),
		[]scored{one("c", 3), one("b", 2), one("h", 1)}, src)
	g.wantRefs("limit 2", g.expand([]string{"a"}, 2, 2, "T"), []scored{one("c", 3), one("b", 2)}, src)
	g.wantRefs("limit 4", g.expand([]string{"a"}, 2, 4, "T"), []scored{one("c", 3), one("b", 2), one("h", 1), two("j", 2)}, src)
	for _, hops := range []int{1, 2} {
		if refs, err := g.s.Expand(context.Background(), nil, spi.ExpandOptions{Hops: hops, Limit: 5}); !errors.Is(err, spi.ErrNothingToSearch) || len(refs) != 0 {
			t.Fatalf("no seeds, hops %d = %v, %v; want ErrNothingToSearch", hops, refs, err)
		}
	}
	for _, o := range []spi.ExpandOptions{{Hops: 0, Limit: 5}, {Hops: 3, Limit: 5}, {Hops: -1, Limit: 5}, {Hops: 1, Limit: 0}} {
		if _, err := g.s.Expand(context.Background(), g.idsOf("a"), o); !errors.Is(err, spi.ErrInvalidQuery) {
			t.Errorf("Expand(%+v) = %v, want ErrInvalidQuery", o, err)
		}
	}
}

// graphExpandFilter pins ExpandOptions.Filter: it selects the returned
// documents only (seeds and intermediate documents need not match), it is
// applied before the limit cut, it leaves distances, paths and scores as
// they are, and it never lets a path cross the tenant.
func graphExpandFilter(t *testing.T, h GraphHarness) {
	g := newGraphFixture(t, h)
	g.expandGraph()
	src := spi.SourceGraphExpand
	en, de := spi.StringFilter(map[string][]string{"lang": {"en"}}), spi.StringFilter(map[string][]string{"lang": {"de"}})
	// Unfiltered, hops 2: c 3, b 2, h 1, then j 2, i 1 (see graphExpandRanking).
	g.wantRefs("en, hops 1", g.expandFiltered([]string{"a"}, 1, 10, "T", en), []scored{one("h", 1)}, src)
	// i is reached through c, which fails the filter: its paths still count.
	g.wantRefs("en, hops 2", g.expandFiltered([]string{"a"}, 2, 10, "T", en), []scored{one("h", 1), two("i", 1)}, src)
	// The seed a fails "de" and still expands.
	g.wantRefs("de, hops 2", g.expandFiltered([]string{"a"}, 2, 10, "T", de), []scored{one("c", 3), one("b", 2), two("j", 2)}, src)
	// Applied before the limit: unfiltered, limit 2 would be c and b.
	g.wantRefs("en, limit 2", g.expandFiltered([]string{"a"}, 2, 2, "T", en), []scored{one("h", 1), two("i", 1)}, src)
	g.wantRefs("en, limit 1", g.expandFiltered([]string{"a"}, 2, 1, "T", en), []scored{one("h", 1)}, src)
	g.wantRefs("de, limit 2", g.expandFiltered([]string{"a"}, 2, 2, "T", de), []scored{one("c", 3), one("b", 2)}, src)
	// No distance-1 document matches; j is reached through b and c anyway.
	g.wantRefs("only at distance 2", g.expandFiltered([]string{"a"}, 2, 1, "T", spi.StringFilter(map[string][]string{"topic": {"flow"}})), []scored{two("j", 2)}, src)
	g.wantRefs("only at distance 2, hops 1", g.expandFiltered([]string{"a"}, 1, 10, "T", spi.StringFilter(map[string][]string{"topic": {"flow"}})), nil, src)
	g.wantRefs("any of", g.expandFiltered([]string{"a"}, 2, 10, "T", spi.StringFilter(map[string][]string{"lang": {"en", "de"}})),
		[]scored{one("c", 3), one("b", 2), one("h", 1), two("j", 2), two("i", 1)}, src)
	g.wantRefs("and", g.expandFiltered([]string{"a"}, 2, 10, "T", spi.StringFilter(map[string][]string{"lang": {"de"}, "doc.type": {"paper"}})),
		[]scored{one("b", 2), two("j", 2)}, src)
	g.wantRefs("missing key", g.expandFiltered([]string{"a"}, 2, 10, "T", spi.StringFilter(map[string][]string{"nokey": {"x"}})), nil, src)
	g.wantRefs("no value matches", g.expandFiltered([]string{"a"}, 2, 10, "T", spi.StringFilter(map[string][]string{"lang": {"fr"}})), nil, src)
	// The tenant still bounds every document on a path: m matches "de" but
	// is reached only through k of tenant U.
	g.wantRefs("de, no tenant", g.expandFiltered([]string{"a"}, 2, 10, "", de),
		[]scored{one("c", 3), one("b", 2), two("j", 2), two("m", 1)}, src)
	for _, r := range g.expandFiltered([]string{"a"}, 2, 100, "T", de) {
		if r.ID == g.id("m") {
			t.Fatalf("filtered Expand with tenant T reached m through tenant U's k")
		}
	}
	// In general: the filtered result is the unfiltered ranking without the
	// documents failing the filter, cut at the limit.
	fs := []spi.Filter{en, de}
	r := rand.New(rand.NewPCG(5, 6))
	for range 40 {
		fs = append(fs, RandomFilter(r)) // typed filters on typed metadata
	}
	for _, f := range append(fs, spi.StringFilter(map[string][]string{"doc.type": {"paper"}}), spi.StringFilter(map[string][]string{"lang": {"en"}, "doc.type": {"paper"}}), spi.StringFilter(map[string][]string{"topic": {"flow", "x"}})) {
		for _, tenant := range []string{"T", ""} {
			for _, hops := range []int{1, 2} {
				all := g.expand([]string{"a", "i"}, hops, 100, tenant)
				var kept []scored
				for _, r := range all {
					short := strings.TrimPrefix(r.ID, g.ns+"-")
					if f.Match(expandGraphTyped(short)) {
						kept = append(kept, scored{short, r.Score})
					}
				}
				for _, limit := range []int{1, 2, 100} {
					want := kept[:min(limit, len(kept))]
					g.wantRefs(fmt.Sprintf("filter %v, tenant %q, hops %d, limit %d", f, tenant, hops, limit),
						g.expandFiltered([]string{"a", "i"}, hops, limit, tenant, f), want, src)
				}
			}
		}
	}
	many := map[string][]string{}
	for i := 0; i <= spi.MaxFilterConditions; i++ {
		many[fmt.Sprint("k", i)] = []string{"v"}
	}
	for _, f := range []spi.Filter{spi.StringFilter(map[string][]string{"": {"en"}}), spi.StringFilter(map[string][]string{"lang": nil}), spi.StringFilter(many)} {
		_, err := g.s.Expand(context.Background(), g.idsOf("a"), spi.ExpandOptions{Hops: 1, Limit: 5, Filter: f})
		if !errors.Is(err, spi.ErrInvalidQuery) {
			t.Errorf("Expand(filter %v) = %v, want ErrInvalidQuery", f.Keys(), err)
		}
	}
}

func graphUpsertReplaces(t *testing.T, h GraphHarness) {
	g := newGraphFixture(t, h)
	g.expandGraph()
	src := spi.SourceGraphExpand
	// a now mentions only q and links nowhere: b loses y and a->b; c keeps
	// q and its own c->a; h keeps h->a; i shares q.
	g.upsert(gdoc{id: "a", tenant: "T", ents: []string{"q"}})
	g.wantRefs("after re-upsert", g.expand([]string{"a"}, 1, 10, "T"), []scored{one("c", 2), one("h", 1), one("i", 1)}, src)
	docs, _, err := g.s.Hydrate(context.Background(), g.idsOf("a"))
	if err != nil || len(docs) != 1 {
		t.Fatalf("Hydrate = %v, %v", docs, err)
	}
	if want := []string{g.ent("q")}; !reflect.DeepEqual(docs[0].Entities, want) || len(docs[0].Links) != 0 {
		t.Fatalf("after re-upsert entities %q links %q, want %q and none", docs[0].Entities, docs[0].Links, want)
	}
	// Tenant change moves the document out of T.
	g.upsert(gdoc{id: "i", tenant: "U", ents: []string{"q"}})
	g.wantRefs("after tenant change", g.expand([]string{"a"}, 1, 10, "T"), []scored{one("c", 2), one("h", 1)}, src)
	// Entity names are normalised: "  X   Y " and "x y" are the same entity.
	g.upsert(gdoc{id: "n1", tenant: "T", ents: []string{"Caps Name"}}, gdoc{id: "n2", tenant: "T"})
	d := g.doc(gdoc{id: "n2", tenant: "T"})
	d.Entities = []string{"  " + strings.ToUpper(g.ent("caps")) + " \t " + g.ent("NAME") + "  "}
	if err := g.s.Upsert(context.Background(), []spi.Document{d}); err != nil {
		t.Fatal(err)
	}
	g.wantRefs("normalised entity", g.expand([]string{"n1"}, 1, 10, "T"), []scored{one("n2", 1)}, src)
	if err := g.s.Upsert(context.Background(), []spi.Document{{ID: ""}}); !errors.Is(err, spi.ErrInvalidQuery) {
		t.Fatalf("Upsert(empty id) = %v, want ErrInvalidQuery", err)
	}
	if err := g.s.Upsert(context.Background(), nil); err != nil {
		t.Fatalf("Upsert(nil) = %v", err)
	}
}

func graphDelete(t *testing.T, h GraphHarness) {
	g := newGraphFixture(t, h)
	g.expandGraph()
	ctx := context.Background()
	src := spi.SourceGraphExpand
	g.del("c", "nope")
	g.wantRefs("after delete c", g.expand([]string{"a"}, 2, 10, "T"), []scored{one("b", 2), one("h", 1), two("j", 1)}, src)
	if docs, missing, err := g.s.Hydrate(ctx, g.idsOf("c")); err != nil || len(docs) != 0 || !reflect.DeepEqual(missing, g.idsOf("c")) {
		t.Fatalf("Hydrate(deleted) = %v, %v, %v", docs, missing, err)
	}
	refs, err := g.s.MatchEntities(ctx, spi.KeywordRequest{Text: g.word("v"), K: 5})
	if err != nil || len(refs) != 0 {
		t.Fatalf("MatchEntities(entity only c mentioned) = %v, %v; want none", refs, err)
	}
	// Deleting b leaves a's link to it dormant; b comes back with it.
	g.del("b")
	g.wantRefs("after delete b", g.expand([]string{"a"}, 1, 10, "T"), []scored{one("h", 1)}, src)
	g.upsert(gdoc{id: "b", tenant: "T"})
	g.wantRefs("b back via a's link", g.expand([]string{"a"}, 1, 10, "T"), []scored{one("b", 1), one("h", 1)}, src)
	// A link to a document that never existed is kept until it does.
	g.upsert(gdoc{id: "p", tenant: "T", links: []string{"ghost"}})
	g.wantRefs("ghost target", g.expand([]string{"p"}, 2, 10, ""), nil, src)
	if docs, _, err := g.s.Hydrate(ctx, g.idsOf("ghost")); err != nil || len(docs) != 0 {
		t.Fatalf("Hydrate(ghost) = %v, %v", docs, err)
	}
	g.upsert(gdoc{id: "ghost", tenant: "T"})
	g.wantRefs("ghost arrived", g.expand([]string{"p"}, 1, 10, "T"), []scored{one("ghost", 1)}, src)
	g.wantRefs("reverse link", g.expand([]string{"ghost"}, 1, 10, "T"), []scored{one("p", 1)}, src)
}

func graphHydrate(t *testing.T, h GraphHarness) {
	g := newGraphFixture(t, h)
	when := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	a := g.doc(gdoc{id: "a", tenant: "T", ents: []string{"Beta two", "alpha"}, links: []string{"c", "b"}, meta: map[string]string{"lang": "en", "year": "1960"}})
	a.UpdatedAt = when
	b := g.doc(gdoc{id: "b", tenant: "U"})
	g.mu.Lock()
	g.ids[a.ID], g.ids[b.ID] = true, true
	g.mu.Unlock()
	if err := g.s.Upsert(context.Background(), []spi.Document{a, b}); err != nil {
		t.Fatal(err)
	}
	docs, missing, err := g.s.Hydrate(context.Background(), g.idsOf("b", "nope", "a", "b", "nope2"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].ID != b.ID || docs[1].ID != a.ID {
		t.Fatalf("Hydrate order = %v, want [b a]", docs)
	}
	if !reflect.DeepEqual(missing, g.idsOf("nope", "nope2")) {
		t.Fatalf("missing = %v", missing)
	}
	got := docs[1]
	wantEnts := []string{g.ent("alpha"), g.ent("beta two")}
	sort.Strings(wantEnts)
	wantLinks := g.idsOf("b", "c")
	if got.Tenant != a.Tenant || got.Title != a.Title || got.Text != a.Text || !reflect.DeepEqual(got.Metadata, a.Metadata) ||
		!reflect.DeepEqual(got.Entities, wantEnts) || !reflect.DeepEqual(got.Links, wantLinks) || !got.UpdatedAt.Equal(when) {
		t.Fatalf("Hydrate(a) = %+v\nwant tenant %q title %q text %q metadata %v entities %q links %q updated %v",
			got, a.Tenant, a.Title, a.Text, a.Metadata, wantEnts, wantLinks, when)
	}
	if docs[0].Tenant != b.Tenant || len(docs[0].Entities) != 0 || len(docs[0].Links) != 0 || len(docs[0].Metadata) != 0 {
		t.Fatalf("Hydrate(b) = %+v", docs[0])
	}
	if docs, missing, err := g.s.Hydrate(context.Background(), nil); err != nil || len(docs)+len(missing) != 0 {
		t.Fatalf("Hydrate(nil) = %v, %v, %v", docs, missing, err)
	}
}

func graphHubs(t *testing.T, h GraphHarness) {
	g := newGraphFixture(t, h)
	n := h.MaxDegree
	var ds []gdoc
	for i := 0; i <= n; i++ { // n+1 documents mention the hub
		ds = append(ds, gdoc{id: fmt.Sprint("p", i), tenant: "T", ents: []string{"hub"}})
	}
	var want []scored
	for i := 0; i < n; i++ { // exactly n documents mention ring
		ds = append(ds, gdoc{id: fmt.Sprint("r", i), tenant: "T", ents: []string{"ring"}})
		if i > 0 {
			want = append(want, one(fmt.Sprint("r", i), 1))
		}
	}
	g.upsert(ds...)
	sort.Slice(want, func(i, j int) bool { return g.id(want[i].id) < g.id(want[j].id) })
	g.wantRefs("hub connects nothing", g.expand([]string{"p0"}, 2, 100, "T"), nil, spi.SourceGraphExpand)
	g.wantRefs("degree == max connects", g.expand([]string{"r0"}, 1, 100, "T"), want, spi.SourceGraphExpand)
	refs, err := g.s.MatchEntities(context.Background(), spi.KeywordRequest{Text: g.word("hub"), K: 100, Tenant: g.tenant("T")})
	if err != nil || len(refs) != 0 {
		t.Fatalf("MatchEntities(hub) = %v, %v; want none", refs, err)
	}
	refs, err = g.s.MatchEntities(context.Background(), spi.KeywordRequest{Text: g.word("ring"), K: 100, Tenant: g.tenant("T")})
	if err != nil || len(refs) != n {
		t.Fatalf("MatchEntities(ring) = %v, %v; want %d refs", refs, err, n)
	}
	// Removing one mention turns the hub into an ordinary entity.
	g.upsert(gdoc{id: "p0", tenant: "T"})
	if refs := g.expand([]string{"p1"}, 1, 100, "T"); len(refs) != n-1 {
		t.Fatalf("after hub shrank to %d mentions, Expand = %s; want %d refs", n, g.fmtRefs(refs), n-1)
	}
}

// An entity's degree is counted within the request's tenant (across all
// tenants for a request of none): another tenant's documents never make it
// a hub for this one.
func graphHubsPerTenant(t *testing.T, h GraphHarness) {
	g := newGraphFixture(t, h)
	n := h.MaxDegree
	var ds []gdoc
	for i := 0; i <= n; i++ { // n+1 of T's documents mention shared
		ds = append(ds, gdoc{id: fmt.Sprint("t", i), tenant: "T", ents: []string{"shared"}})
	}
	ds = append(ds, gdoc{id: "u0", tenant: "U", ents: []string{"shared"}}, gdoc{id: "u1", tenant: "U", ents: []string{"shared"}})
	g.upsert(ds...)
	g.wantRefs("a hub for T", g.expand([]string{"t0"}, 1, 100, "T"), nil, spi.SourceGraphExpand)
	g.wantRefs("not a hub for U", g.expand([]string{"u0"}, 1, 100, "U"), []scored{one("u1", 1)}, spi.SourceGraphExpand)
	g.wantRefs("a hub across tenants", g.expand([]string{"u0"}, 1, 100, ""), nil, spi.SourceGraphExpand)
	refs, err := g.s.MatchEntities(context.Background(), spi.KeywordRequest{Text: g.word("shared"), K: 100, Tenant: g.tenant("U")})
	if err != nil || len(refs) != 2 {
		t.Fatalf("MatchEntities(shared) for U = %v, %v; want u0 and u1", refs, err)
	}
	if refs, err := g.s.MatchEntities(context.Background(), spi.KeywordRequest{Text: g.word("shared"), K: 100, Tenant: g.tenant("T")}); err != nil || len(refs) != 0 {
		t.Fatalf("MatchEntities(shared) for T = %v, %v; want none (a hub)", refs, err)
	}
	// u1 moves to T: one mention leaves U's count and joins T's.
	g.upsert(gdoc{id: "u1", tenant: "T", ents: []string{"shared"}})
	g.wantRefs("U's last mention", g.expand([]string{"u0"}, 1, 100, "U"), nil, spi.SourceGraphExpand)
	// Two of T's mentions go: T's degree is n, no longer a hub for T.
	g.upsert(gdoc{id: "t0", tenant: "T"}, gdoc{id: "t1", tenant: "T"})
	if refs := g.expand([]string{"t2"}, 1, 100, "T"); len(refs) != n-1 {
		t.Fatalf("after T's degree fell to %d, Expand = %s; want %d refs", n, g.fmtRefs(refs), n-1)
	}
}

// matchGraph: entities e1 "boundary layer", e2 "layer flow", e3 "flat
// plate", e4 "boundary"; the query "boundary layer flow" weighs them 2, 2,
// 0 and 1.
func (g *graphFixture) matchGraph() {
	g.upsert(
		gdoc{id: "p", tenant: "T", ents: []string{"boundary layer", "layer flow"}, meta: map[string]string{"lang": "en"}},
		gdoc{id: "q", tenant: "T", ents: []string{"boundary layer"}, meta: map[string]string{"lang": "de"}},
		gdoc{id: "r", tenant: "T", ents: []string{"layer flow", "boundary"}, meta: map[string]string{"lang": "en", "kind": "paper"}},
		gdoc{id: "s", tenant: "T", ents: []string{"flat plate"}},
		gdoc{id: "t2", tenant: "U", ents: []string{"boundary layer"}},
	)
}

func graphMatch(t *testing.T, h GraphHarness) {
	g := newGraphFixture(t, h)
	g.matchGraph()
	ctx := context.Background()
	q := g.ent("boundary layer flow")
	match := func(what string, req spi.KeywordRequest, want []scored) {
		t.Helper()
		refs, err := g.s.MatchEntities(ctx, req)
		if err != nil {
			t.Fatalf("%s: MatchEntities: %v", what, err)
		}
		g.wantRefs(what, refs, want, spi.SourceGraph)
	}
	T, U := g.tenant("T"), g.tenant("U")
	// p: 2+2, r: 2+1, q: 2.
	match("ranking", spi.KeywordRequest{Text: q, K: 10, Tenant: T}, []scored{{"p", 4}, {"r", 3}, {"q", 2}})
	match("k", spi.KeywordRequest{Text: q, K: 2, Tenant: T}, []scored{{"p", 4}, {"r", 3}})
	match("other tenant", spi.KeywordRequest{Text: q, K: 10, Tenant: U}, []scored{{"t2", 2}})
	match("any tenant", spi.KeywordRequest{Text: q, K: 10}, []scored{{"p", 4}, {"r", 3}, {"q", 2}, {"t2", 2}})
	match("upper case", spi.KeywordRequest{Text: strings.ToUpper(q), K: 10, Tenant: T}, []scored{{"p", 4}, {"r", 3}, {"q", 2}})
	match("one term", spi.KeywordRequest{Text: g.word("plate"), K: 10, Tenant: T}, []scored{{"s", 1}})
	lucene := fmt.Sprintf(`%s && (%s] "%s ~*^:\ title:(`, g.word("boundary"), g.word("layer"), g.word("flow"))
	match("query syntax is plain text", spi.KeywordRequest{Text: lucene, K: 10, Tenant: T}, []scored{{"p", 4}, {"r", 3}, {"q", 2}})
	match("filter", spi.KeywordRequest{Text: q, K: 10, Tenant: T, Filter: spi.StringFilter(map[string][]string{"lang": {"de"}})}, []scored{{"q", 2}})
	match("filter any of", spi.KeywordRequest{Text: q, K: 10, Tenant: T, Filter: spi.StringFilter(map[string][]string{"lang": {"en", "de"}})}, []scored{{"p", 4}, {"r", 3}, {"q", 2}})
	match("filter and", spi.KeywordRequest{Text: q, K: 10, Tenant: T, Filter: spi.StringFilter(map[string][]string{"lang": {"en"}, "kind": {"paper"}})}, []scored{{"r", 3}})
	match("filter missing key", spi.KeywordRequest{Text: q, K: 10, Tenant: T, Filter: spi.StringFilter(map[string][]string{"nokey": {"x"}})}, nil)
	// Typed filters: typed metadata on the same documents, random filters;
	// the answer is the unfiltered ranking without the documents failing
	// the filter (spi.Filter.Match).
	typed := map[string]spi.Metadata{}
	var ds []gdoc
	for i, d := range []gdoc{
		{id: "p", tenant: "T", ents: []string{"boundary layer", "layer flow"}, meta: map[string]string{"lang": "en"}},
		{id: "q", tenant: "T", ents: []string{"boundary layer"}, meta: map[string]string{"lang": "de"}},
		{id: "r", tenant: "T", ents: []string{"layer flow", "boundary"}, meta: map[string]string{"lang": "en", "kind": "paper"}},
	} {
		d.typed = TypedMetadata(rand.New(rand.NewPCG(uint64(i), 3)), i*17+3, spi.Strings(d.meta))
		typed[d.id] = d.typed
		ds = append(ds, d)
	}
	g.upsert(ds...)
	r := rand.New(rand.NewPCG(7, 8))
	for range 40 {
		f := RandomFilter(r)
		var want []scored
		for _, w := range []scored{{"p", 4}, {"r", 3}, {"q", 2}} {
			if f.Match(typed[w.id]) {
				want = append(want, w)
			}
		}
		raw, _ := json.Marshal(f)
		match(fmt.Sprintf("typed filter %s", raw), spi.KeywordRequest{Text: q, K: 10, Tenant: T, Filter: f}, want)
	}
	match("unknown word", spi.KeywordRequest{Text: g.word("unknown"), K: 10, Tenant: T}, nil)
	if _, err := g.s.MatchEntities(ctx, spi.KeywordRequest{Text: q, K: 0}); !errors.Is(err, spi.ErrInvalidQuery) {
		t.Fatalf("K=0: %v, want ErrInvalidQuery", err)
	}
	if _, err := g.s.MatchEntities(ctx, spi.KeywordRequest{Text: q, K: 1, Filter: spi.StringFilter(map[string][]string{"lang": nil})}); !errors.Is(err, spi.ErrInvalidQuery) {
		t.Fatalf("bad filter: %v, want ErrInvalidQuery", err)
	}
}

// graphNothingToSearch pins spi.ErrNothingToSearch: a text with no word to
// match and an expansion without seeds are answered with it, and only
// because the backend was not asked: once the store can no longer reach
// its backend (closed, through spi.Closer), those requests still get the
// sentinel while any request that needs the backend fails. A store that
// answered them with an empty success would let such queries reset a
// breaker and excuse a hung backend's timeouts (package guard).
func graphNothingToSearch(t *testing.T, h GraphHarness) {
	g := newGraphFixture(t, h)
	g.matchGraph()
	ctx := context.Background()
	T := g.tenant("T")
	word := spi.KeywordRequest{Text: g.ent("boundary layer"), K: 10, Tenant: T}
	nothing := []spi.KeywordRequest{
		{Text: "", K: 10, Tenant: T},
		{Text: ` "(:)* `, K: 10, Tenant: T},
		{Text: "!!!", K: 10, Filter: spi.StringFilter(map[string][]string{"lang": {"en"}})},
	}
	check := func(when string) {
		t.Helper()
		for _, req := range nothing {
			if refs, err := g.s.MatchEntities(ctx, req); !errors.Is(err, spi.ErrNothingToSearch) || len(refs) != 0 {
				t.Errorf("%s: MatchEntities(%q) = %v, %v; want ErrNothingToSearch", when, req.Text, refs, err)
			}
		}
		if refs, err := g.s.Expand(ctx, []string{}, spi.ExpandOptions{Hops: 1, Limit: 5, Tenant: T}); !errors.Is(err, spi.ErrNothingToSearch) || len(refs) != 0 {
			t.Errorf("%s: Expand(no seeds) = %v, %v; want ErrNothingToSearch", when, refs, err)
		}
	}
	if refs, err := g.s.MatchEntities(ctx, word); err != nil || len(refs) == 0 {
		t.Fatalf("MatchEntities(a matching word) = %v, %v; want refs", refs, err)
	}
	check("open")
	// An invalid request is invalid even with nothing to search.
	if _, err := g.s.MatchEntities(ctx, spi.KeywordRequest{Text: "!!!", K: 0}); !errors.Is(err, spi.ErrInvalidQuery) {
		t.Errorf("MatchEntities(!!!, K=0) = %v, want ErrInvalidQuery", err)
	}
	if _, err := g.s.Expand(ctx, nil, spi.ExpandOptions{Hops: 3, Limit: 5}); !errors.Is(err, spi.ErrInvalidQuery) {
		t.Errorf("Expand(no seeds, hops 3) = %v, want ErrInvalidQuery", err)
	}
	c, ok := g.s.(spi.Closer)
	if !ok {
		return
	}
	g.cleanup() // while the backend can still be reached
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if refs, err := g.s.MatchEntities(ctx, word); err == nil || errors.Is(err, spi.ErrNothingToSearch) {
		t.Fatalf("closed: MatchEntities(a word) = %v, %v; want an error: the backend is gone", refs, err)
	}
	if refs, err := g.s.Expand(ctx, g.idsOf("p"), spi.ExpandOptions{Hops: 1, Limit: 5}); err == nil || errors.Is(err, spi.ErrNothingToSearch) {
		t.Fatalf("closed: Expand(p) = %v, %v; want an error: the backend is gone", refs, err)
	}
	check("closed")
}

func graphCancelled(t *testing.T, h GraphHarness) {
	g := newGraphFixture(t, h)
	g.expandGraph()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with cancelled ctx = %v, want context.Canceled", op, err)
		}
	}
	_, err := g.s.Expand(ctx, g.idsOf("a"), spi.ExpandOptions{Hops: 2, Limit: 5})
	check("Expand", err)
	_, err = g.s.MatchEntities(ctx, spi.KeywordRequest{Text: g.word("x"), K: 5})
	check("MatchEntities", err)
	_, _, err = g.s.Hydrate(ctx, g.idsOf("a"))
	check("Hydrate", err)
	check("Upsert", g.s.Upsert(ctx, []spi.Document{g.doc(gdoc{id: "new", tenant: "T"})}))
	check("Delete", g.s.Delete(ctx, g.idsOf("a")))
	docs, _, err := g.s.Hydrate(context.Background(), g.idsOf("a", "new"))
	if err != nil || len(docs) != 1 || docs[0].ID != g.id("a") {
		t.Fatalf("after cancelled writes Hydrate = %v, %v; want only a", docs, err)
	}
}

func graphConcurrent(t *testing.T, h GraphHarness) {
	g := newGraphFixture(t, h)
	g.upsert(gdoc{id: "seed", tenant: "T"})
	// Writers race on the same entities (e0..e2, one mention per writer,
	// so degree stays at most MaxDegree) and all link to seed.
	writers, each := min(4, h.MaxDegree), 3
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*2)
	for w := range writers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range each {
				d := g.doc(gdoc{id: fmt.Sprintf("w%d-%d", w, i), tenant: "T", ents: []string{fmt.Sprint("e", i)}, links: []string{"seed"}})
				g.mu.Lock()
				g.ids[d.ID] = true
				g.mu.Unlock()
				if err := g.s.Upsert(context.Background(), []spi.Document{d}); err != nil {
					errs <- err
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range each {
				if _, err := g.s.Expand(context.Background(), g.idsOf("seed"), spi.ExpandOptions{Hops: 2, Limit: 50, Tenant: g.tenant("T")}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent call: %v", err)
	}
	if refs := g.expand([]string{"seed"}, 1, 50, "T"); len(refs) != writers*each {
		t.Fatalf("after concurrent upserts Expand = %d refs, want %d", len(refs), writers*each)
	}
}

func graphRestart(t *testing.T, h GraphHarness) {
	g := newGraphFixture(t, h)
	g.expandGraph()
	g.matchGraph()
	before := g.expand([]string{"a"}, 2, 10, "T")
	g.s = h.Reopen(t, g.s)
	t.Cleanup(g.cleanup) // runs before the reopened store is closed
	g.wantRefs("expand after restart", g.expand([]string{"a"}, 2, 10, "T"),
		[]scored{one("c", 3), one("b", 2), one("h", 1), two("j", 2), two("i", 1)}, spi.SourceGraphExpand)
	if after := g.expand([]string{"a"}, 2, 10, "T"); !reflect.DeepEqual(before, after) {
		t.Fatalf("Expand changed across restart: %v -> %v", before, after)
	}
	refs, err := g.s.MatchEntities(context.Background(), spi.KeywordRequest{Text: g.ent("boundary layer flow"), K: 10, Tenant: g.tenant("T")})
	if err != nil {
		t.Fatal(err)
	}
	g.wantRefs("match after restart", refs, []scored{{"p", 4}, {"r", 3}, {"q", 2}}, spi.SourceGraph)
	docs, _, err := g.s.Hydrate(context.Background(), g.idsOf("c"))
	if err != nil || len(docs) != 1 || len(docs[0].Entities) != 5 || !reflect.DeepEqual(docs[0].Links, g.idsOf("a")) {
		t.Fatalf("Hydrate after restart = %+v, %v", docs, err)
	}
}
