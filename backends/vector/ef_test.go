package vector_test

import (
	"testing"

	"github.com/ragd/ragd/backends/vector"
	"github.com/ragd/ragd/spi"
)

// TestFilteredQueriesSearchWider: a tenant or a metadata filter doubles
// the ef_search a query searches with; an unfiltered query keeps it.
func TestFilteredQueriesSearchWider(t *testing.T) {
	for _, tc := range []struct {
		req  spi.VectorRequest
		want int
	}{
		{spi.VectorRequest{}, 400},
		{spi.VectorRequest{Tenant: "t1"}, 800},
		{spi.VectorRequest{Filter: spi.StringFilter(map[string][]string{"lang": {"en"}})}, 800},
		{spi.VectorRequest{Tenant: "t1", Filter: spi.StringFilter(map[string][]string{"lang": {"en"}})}, 800},
	} {
		if got := vector.EfFor(400, tc.req); got != tc.want {
			t.Errorf("efFor(400, tenant %q, filter %v) = %d, want %d", tc.req.Tenant, tc.req.Filter, got, tc.want)
		}
	}
}
