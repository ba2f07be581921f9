package graphspec_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ragd/ragd/backends/graph/graphspec"
	"github.com/ragd/ragd/spi"
)

func TestNormalize(t *testing.T) {
	cases := map[string]string{
		"  Boundary   LAYER ":    "boundary layer",
		"boundary\tlayer\n":      "boundary layer",
		"a\x00b":                 "a b",
		"":                       "",
		"   ":                    "",
		"Mach\u00a0Number":       "mach number",
		"X-Ray  Tube":            "x-ray tube",
		"\x01lead\x02 trail\x7f": "lead trail",
	}
	for in, want := range cases {
		if got := graphspec.Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTokens(t *testing.T) {
	long := strings.Repeat("a", graphspec.MaxTokenRunes+1)
	cases := map[string][]string{
		"Boundary-layer FLOW, boundary": {"boundary", "layer", "flow"},
		`title:( "x" AND y~2^3`:         {"title", "x", "and", "y", "2", "3"},
		"naïve café 3.5":                {"naïve", "café", "3", "5"},
		"ok " + long:                    {"ok"},
		"  ":                            nil,
	}
	for in, want := range cases {
		if got := graphspec.Tokens(in); !reflect.DeepEqual(got, want) {
			t.Errorf("Tokens(%q) = %q, want %q", in, got, want)
		}
	}
	var b strings.Builder
	for i := range graphspec.MaxQueryTokens + 10 {
		b.WriteString(strings.Repeat("x", i+1) + " ")
	}
	if n := len(graphspec.QueryTokens(b.String())); n != graphspec.MaxQueryTokens {
		t.Fatalf("QueryTokens kept %d tokens, want %d", n, graphspec.MaxQueryTokens)
	}
}

func TestPrepare(t *testing.T) {
	got, err := graphspec.Prepare([]spi.Document{
		{ID: "a", Title: "old"},
		{ID: "b", Entities: []string{"Y ", "x", "  ", "y"}, Links: []string{"c", "b", "", "a", "c"}, Vector: []float32{1}},
		{ID: "a", Title: "new"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []spi.Document{
		{ID: "b", Entities: []string{"x", "y"}, Links: []string{"a", "c"}},
		{ID: "a", Title: "new"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Prepare = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"", "a\x00b"} {
		if _, err := graphspec.Prepare([]spi.Document{{ID: bad}}); !errors.Is(err, spi.ErrInvalidQuery) {
			t.Errorf("Prepare(id %q) = %v, want ErrInvalidQuery", bad, err)
		}
	}
}

func TestExpandScoreOrdersDistanceFirst(t *testing.T) {
	if !(graphspec.ExpandScore(1, 1) > graphspec.ExpandScore(2, 1_000_000)) {
		t.Fatal("a one-hop document must outrank any two-hop document")
	}
	if !(graphspec.ExpandScore(1, 3) > graphspec.ExpandScore(1, 2)) {
		t.Fatal("more paths must score higher at equal distance")
	}
}

// fakeGraph is an undirected adjacency: key -> neighbour -> connectors.
type fakeGraph map[string]map[string]int

func (g fakeGraph) adj(calls *[][]string) graphspec.AdjacencyFunc {
	return func(_ context.Context, from []string) ([]graphspec.Edge, error) {
		*calls = append(*calls, from)
		var out []graphspec.Edge
		for _, f := range from {
			for to, c := range g[f] {
				out = append(out, graphspec.Edge{From: f, To: to, Connectors: c})
			}
		}
		return out, nil
	}
}

func sym(edges ...struct {
	a, b string
	c    int
}) fakeGraph {
	g := fakeGraph{}
	for _, e := range edges {
		for _, p := range [][2]string{{e.a, e.b}, {e.b, e.a}} {
			if g[p[0]] == nil {
				g[p[0]] = map[string]int{}
			}
			g[p[0]][p[1]] = e.c
		}
	}
	return g
}

type e3 = struct {
	a, b string
	c    int
}

func ids(refs []spi.Ref) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

func TestExpand(t *testing.T) {
	// s1 - a (2 connectors), s1 - b (1), s2 - b (1), a - c, b - c, b - d, c - e
	g := sym(e3{"s1", "a", 2}, e3{"s1", "b", 1}, e3{"s2", "b", 1}, e3{"a", "c", 1}, e3{"b", "c", 3}, e3{"b", "d", 1}, e3{"c", "e", 1}, e3{"s1", "s2", 4})
	ctx := context.Background()
	var calls [][]string
	refs, err := graphspec.Expand(ctx, []string{"s1", "s2", "s1", "unknown"}, spi.ExpandOptions{Hops: 1, Limit: 10}, g.adj(&calls), nil)
	if err != nil {
		t.Fatal(err)
	}
	// a: 2 paths, b: 2 paths (s1,b) (s2,b) -> tie by id.
	if got, want := ids(refs), []string{"a", "b"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("hop 1 = %v, want %v", got, want)
	}
	if refs[0].Score != graphspec.ExpandScore(1, 2) || refs[0].Source != spi.SourceGraphExpand {
		t.Fatalf("ref = %+v", refs[0])
	}
	if len(calls) != 1 {
		t.Fatalf("hop 1 made %d adjacency calls", len(calls))
	}
	calls = nil
	refs, err = graphspec.Expand(ctx, []string{"s1", "s2"}, spi.ExpandOptions{Hops: 2, Limit: 10}, g.adj(&calls), nil)
	if err != nil {
		t.Fatal(err)
	}
	// c: pairs (s1,a) + (s1,b),(s2,b) = 3; d: (s1,b),(s2,b) = 2; e is 3 hops away.
	if got, want := ids(refs), []string{"a", "b", "c", "d"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("hop 2 = %v, want %v", got, want)
	}
	if refs[2].Score != graphspec.ExpandScore(2, 3) || refs[3].Score != graphspec.ExpandScore(2, 2) {
		t.Fatalf("hop 2 scores = %+v", refs)
	}
	refs, err = graphspec.Expand(ctx, []string{"s1", "s2"}, spi.ExpandOptions{Hops: 2, Limit: 3}, g.adj(&calls), nil)
	if err != nil || len(refs) != 3 {
		t.Fatalf("limit 3 = %v, %v", refs, err)
	}
	for _, o := range []spi.ExpandOptions{{Hops: 0, Limit: 1}, {Hops: 3, Limit: 1}, {Hops: 1, Limit: 0}} {
		if _, err := graphspec.Expand(ctx, []string{"s1"}, o, g.adj(&calls), nil); !errors.Is(err, spi.ErrInvalidQuery) {
			t.Errorf("Expand(%+v) = %v, want ErrInvalidQuery", o, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := graphspec.Expand(cctx, []string{"s1"}, spi.ExpandOptions{Hops: 1, Limit: 1}, g.adj(&calls), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Expand = %v", err)
	}
}

// adjExcluding is g's adjacency with Edge.Excluded set for the ids in out,
// as a backend sets it for documents failing the filter.
func (g fakeGraph) adjExcluding(out map[string]bool) graphspec.AdjacencyFunc {
	var calls [][]string
	adj := g.adj(&calls)
	return func(ctx context.Context, from []string) ([]graphspec.Edge, error) {
		edges, err := adj(ctx, from)
		for i := range edges {
			edges[i].Excluded = out[edges[i].To]
		}
		return edges, err
	}
}

func TestExpandFilter(t *testing.T) {
	g := sym(e3{"s1", "a", 2}, e3{"s1", "b", 1}, e3{"s2", "b", 1}, e3{"a", "c", 1}, e3{"b", "c", 3}, e3{"b", "d", 1}, e3{"c", "e", 1})
	ctx := context.Background()
	seeds := []string{"s1", "s2"}
	full, err := graphspec.Expand(ctx, seeds, spi.ExpandOptions{Hops: 2, Limit: 100}, g.adjExcluding(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(full); !reflect.DeepEqual(got, []string{"a", "b", "c", "d"}) {
		t.Fatalf("unfiltered = %v", got)
	}
	// b fails the filter: it is not returned, but c and d are still reached
	// through it with the same paths (c: (s1,a) (s1,b) (s2,b) = 3, d: 2).
	refs, err := graphspec.Expand(ctx, seeds, spi.ExpandOptions{Hops: 2, Limit: 10}, g.adjExcluding(map[string]bool{"b": true}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(refs); !reflect.DeepEqual(got, []string{"a", "c", "d"}) ||
		refs[1].Score != graphspec.ExpandScore(2, 3) || refs[2].Score != graphspec.ExpandScore(2, 2) {
		t.Fatalf("b excluded = %+v, want a, c (2 hops, 3 paths), d (2 hops, 2 paths)", refs)
	}
	// For every exclusion set and limit, with the default and a server-side
	// style second hop: the filtered result is the unfiltered ranking minus
	// the excluded documents, cut at the limit afterwards.
	all := []string{"a", "b", "c", "d", "e"}
	for mask := range 1 << len(all) {
		out := map[string]bool{}
		for i, id := range all {
			if mask&(1<<i) != 0 {
				out[id] = true
			}
		}
		var kept []spi.Ref
		for _, r := range full {
			if !out[r.ID] {
				kept = append(kept, r)
			}
		}
		for _, hops := range []int{1, 2} {
			for limit := 1; limit <= 5; limit++ {
				adj := g.adjExcluding(out)
				for name, hop2 := range map[string]graphspec.SecondHopFunc{"derived": nil, "explicit": graphspec.SecondHopFromAdjacency(adj)} {
					got, err := graphspec.Expand(ctx, seeds, spi.ExpandOptions{Hops: hops, Limit: limit}, adj, hop2)
					if err != nil {
						t.Fatal(err)
					}
					var want []spi.Ref
					for _, r := range kept {
						if len(want) < limit && (hops == 2 || r.Score >= graphspec.ExpandScore(1, 0)) {
							want = append(want, r)
						}
					}
					if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
						t.Fatalf("excluded %v, hops %d, limit %d, %s hop 2: got %+v, want %+v", out, hops, limit, name, got, want)
					}
				}
			}
		}
	}
	var calls [][]string
	for _, f := range []spi.Filter{spi.StringFilter(map[string][]string{"": {"x"}}), spi.StringFilter(map[string][]string{"lang": nil})} {
		if _, err := graphspec.Expand(ctx, seeds, spi.ExpandOptions{Hops: 1, Limit: 1, Filter: f}, g.adj(&calls), nil); !errors.Is(err, spi.ErrInvalidQuery) {
			t.Errorf("Expand(filter %v) = %v, want ErrInvalidQuery", f, err)
		}
	}
	if len(calls) != 0 {
		t.Errorf("an invalid filter reached the backend: %v", calls)
	}
}

func TestTopEntitiesAndDocs(t *testing.T) {
	got := graphspec.TopEntities([]graphspec.WeightedEntity{{"c", 1}, {"b", 2}, {"a", 1}, {"z", 0}}, 2)
	want := []graphspec.WeightedEntity{{"b", 2}, {"a", 1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("TopEntities = %v, want %v", got, want)
	}
	refs := graphspec.TopDocs(map[string]float64{"x": 1, "w": 3, "v": 1}, 2)
	if g := ids(refs); !reflect.DeepEqual(g, []string{"w", "v"}) || refs[0].Source != spi.SourceGraph {
		t.Fatalf("TopDocs = %+v", refs)
	}
	if _, err := graphspec.ValidateMatch(spi.KeywordRequest{Text: "x", K: 0}); !errors.Is(err, spi.ErrInvalidQuery) {
		t.Fatalf("K=0: %v", err)
	}
	if _, err := graphspec.ValidateMatch(spi.KeywordRequest{Text: "x", K: 1, Filter: spi.StringFilter(map[string][]string{"": {"a"}})}); !errors.Is(err, spi.ErrInvalidQuery) {
		t.Fatalf("bad filter: %v", err)
	}
}
