package keyword_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

// The model test of typed filters: documents with typed metadata, random
// filters; both search paths (the impact index, and bleve's query with
// Syntax) return exactly the documents spi.Filter.Match accepts, with a
// tenant and after replacements and deletes.
func TestTypedFiltersMatchTheReference(t *testing.T) {
	b := mustOpen(t, keyword.Config{})
	r := rand.New(rand.NewPCG(3, 4))
	docs := map[string]spi.Document{}
	var batch []spi.Document
	for i := range 200 {
		d := spi.Document{ID: fmt.Sprintf("d%03d", i), Tenant: []string{"", "t1"}[i%2], Text: "widget manual",
			Metadata: spitest.TypedMetadata(r, i, spi.Metadata{"lang": spi.String([]string{"en", "de", "fr"}[i%3])})}
		if i%20 == 3 {
			d.Metadata["rare"] = spi.String("yes")
		}
		docs[d.ID] = d
		batch = append(batch, d)
	}
	mustUpsert(t, b, batch...)
	// Replace some, delete some: the index must follow.
	var again []spi.Document
	for i := range 40 {
		d := docs[fmt.Sprintf("d%03d", i*5)]
		d.Metadata = spitest.TypedMetadata(r, r.IntN(200), spi.Metadata{"lang": spi.String("de")})
		docs[d.ID] = d
		again = append(again, d)
	}
	mustUpsert(t, b, again...)
	var gone []string
	for i := range 20 {
		id := fmt.Sprintf("d%03d", i*7+1)
		gone = append(gone, id)
		delete(docs, id)
	}
	if err := b.Delete(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	for q := range 150 {
		f := spitest.RandomFilter(r)
		tenant := []string{"", "t1"}[q%2]
		var want []string
		for id, d := range docs {
			if (tenant == "" || d.Tenant == tenant) && f.Match(d.Metadata) {
				want = append(want, id)
			}
		}
		slices.Sort(want)
		for _, syntax := range []bool{false, true} {
			refs, err := b.Retrieve(context.Background(), spi.KeywordRequest{Text: "widget", K: 500, Tenant: tenant, Filter: f, Syntax: syntax})
			if err != nil {
				t.Fatal(err)
			}
			got := spitest.IDs(refs)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				raw, _ := json.Marshal(f)
				t.Fatalf("filter %s, tenant %q, syntax %v: %d ids %v, want %d %v", raw, tenant, syntax, len(got), got, len(want), want)
			}
		}
	}
}
