package keyword_test

import (
	"fmt"
	"testing"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

// A tenant's scores are computed from its own documents only: another
// tenant adding documents that contain the query's word (which changes the
// word's document frequency and the average lengths over all tenants)
// moves nothing, so scores cannot tell one tenant what another holds.
func TestTenantScoresIgnoreOtherTenants(t *testing.T) {
	b := mustOpen(t, keyword.Config{})
	mine := []spi.Document{
		{ID: "a1", Tenant: "a", Title: "turbine blades", Text: "cooling of turbine blades at high temperature"},
		{ID: "a2", Tenant: "a", Title: "wings", Text: "lift and drag of swept wings"},
		{ID: "a3", Tenant: "a", Title: "nozzles", Text: "erosion in rocket nozzles"},
	}
	mustUpsert(t, b, mine...)
	query := spi.KeywordRequest{Text: "turbine cooling", K: 10, Tenant: "a"}
	before := mustRetrieve(t, b, query)
	for _, n := range []int{1, 50} {
		var theirs []spi.Document
		for i := range n {
			theirs = append(theirs, spi.Document{ID: fmt.Sprintf("b%d-%d", n, i), Tenant: "b", Title: "turbine",
				Text: "a much longer text about turbine turbine cooling and many other words to move the average length"})
		}
		mustUpsert(t, b, theirs...)
		after := mustRetrieve(t, b, query)
		if fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("after tenant b added %d documents, tenant a's answer moved: %v, was %v", n, after, before)
		}
	}
}

// A single-tenant deployment scores exactly as before: with every document
// in one tenant, a query for that tenant gets the same refs, bit for bit,
// as a query for every tenant.
func TestSingleTenantScoresUnchanged(t *testing.T) {
	docs := append(spitest.KeywordFiller(200),
		spi.Document{ID: "rep", Title: "alpha alpha", Text: "alpha beta alpha gamma alpha"},
		spi.Document{ID: "long", Title: "a rather long title about beta and delta and more", Text: "beta"})
	for i := range docs {
		docs[i].Tenant = "acme"
	}
	b := mustOpen(t, keyword.Config{})
	mustUpsert(t, b, docs...)
	for _, q := range []string{"alpha", "alpha beta", "beta beta delta", "long title"} {
		all := mustRetrieve(t, b, spi.KeywordRequest{Text: q, K: 100})
		one := mustRetrieve(t, b, spi.KeywordRequest{Text: q, K: 100, Tenant: "acme"})
		if len(all) == 0 || fmt.Sprint(all) != fmt.Sprint(one) {
			t.Fatalf("%q: tenant acme answered %v, every tenant %v", q, one, all)
		}
	}
}
