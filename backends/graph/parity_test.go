package graph_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ragd/ragd/backends/graph"
	"github.com/ragd/ragd/backends/graph/embedded"
	"github.com/ragd/ragd/backends/graph/graphspec"
	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

// TestParityCranfield loads Cranfield (title-bigram entities) into Neo4j and
// into the embedded store and requires identical Expand and MatchEntities
// results, scores included, with and without a metadata filter on Expand:
// the two implementations must not drift on real data either.
func TestParityCranfield(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 1,400 documents into both stores")
	}
	t.Parallel() // its own ids and entity names: overlap TestServerStopped
	conn := testenv.Neo4j(t)
	dir := spitest.CranfieldDir(t)
	run := uniq(t)
	p := run + "-"
	docs, queries := spitest.CranfieldGraph(t, dir, p+"cran")
	// Entities are shared across tenants and the full-text candidates cut
	// is global, so other Cranfield loads on the shared server could change
	// Neo4j's answers but not the private embedded store's: every entity
	// term and query word carries the run's suffix.
	ns := func(s string) string {
		ts := graphspec.Tokens(s)
		for i := range ts {
			ts[i] += run
		}
		return strings.Join(ts, " ")
	}
	for i := range queries {
		queries[i] = ns(queries[i])
	}
	ids := make([]string, len(docs))
	for i := range docs {
		docs[i].ID = p + docs[i].ID
		ids[i] = docs[i].ID
		docs[i].Metadata = spi.Strings(map[string]string{"third": fmt.Sprint(i % 3)})
		for j, e := range docs[i].Entities {
			docs[i].Entities[j] = ns(e)
		}
	}
	// Every 10th document links to the next one, so links take part too.
	for i := 0; i+1 < len(docs); i += 10 {
		docs[i].Links = []string{docs[i+1].ID}
	}
	ctx := context.Background()
	neo := openBackend(t, conn, func(c *graph.Config) { c.MaxDegree = 50 })
	emb, err := embedded.Open(ctx, embedded.Config{Dir: t.TempDir(), MaxDegree: 50, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	t.Cleanup(func() { neo.Delete(context.Background(), ids) })
	for _, s := range []spitest.GraphStore{neo, emb} {
		for i := 0; i < len(docs); i += 200 {
			if err := s.Upsert(ctx, docs[i:min(i+200, len(docs))]); err != nil {
				t.Fatal(err)
			}
		}
	}
	compared, filtered := 0, 0
	for i := 0; i < len(docs); i += 13 {
		for _, c := range []struct {
			hops   int
			filter spi.Filter
		}{{1, spi.Filter{}}, {2, spi.Filter{}}, {1, spi.StringFilter(map[string][]string{"third": {"0"}})}, {2, spi.StringFilter(map[string][]string{"third": {"0"}})}} {
			opts := spi.ExpandOptions{Hops: c.hops, Limit: 25, Tenant: p + "cran", Filter: c.filter}
			seeds := []string{docs[i].ID, docs[(i*7)%len(docs)].ID}
			a, err := neo.Expand(ctx, seeds, opts)
			if err != nil {
				t.Fatal(err)
			}
			b, err := emb.Expand(ctx, seeds, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("Expand(%v, %+v) differs:\n neo4j    %v\n embedded %v", seeds, opts, a, b)
			}
			compared += len(a)
			if !c.filter.IsEmpty() {
				filtered += len(a)
			}
		}
	}
	if filtered == 0 {
		t.Fatal("no filtered Expand results compared")
	}
	for _, q := range queries {
		req := spi.KeywordRequest{Text: q, K: 20, Tenant: p + "cran"}
		a, err := neo.MatchEntities(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := emb.MatchEntities(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("MatchEntities(%q) differs:\n neo4j    %v\n embedded %v", q, a, b)
		}
		compared += len(a)
	}
	if compared == 0 {
		t.Fatal("no results compared")
	}
	t.Logf("%d refs identical (%d from filtered Expand)", compared, filtered)
}
