package opensearch_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ragd/ragd/backends/keyword/opensearch"
	"github.com/ragd/ragd/spi"
)

// countSearches counts the _search calls that pass through it.
type countSearches struct {
	n atomic.Int64
}

func (c *countSearches) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/_search") {
		c.n.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// Retrieve asks by score alone and orders the top K by (score, id) itself;
// when documents tie with the K-th across the cut it asks again with the
// id as tie-breaker. Either way the answer is the exhaustive order: here
// 30 identical documents written in descending id order (so the cluster's
// own tie order, the index order, is the reverse of the ids'), and a few
// distinct ones above them.
func TestRetrieveTiesAtTheCut(t *testing.T) {
	url := shared(t)
	ctx := context.Background()
	tr := &countSearches{}
	b := open(t, url, opensearch.Config{Transport: tr})
	var changes []spi.Change
	add := func(id, text string) {
		d := spi.Document{ID: id, Tenant: "t0", Title: "", Text: text}
		v := uint64(len(changes) + 1)
		changes = append(changes, spi.Change{Seq: v, Op: spi.OpUpsert, ID: id, Doc: &d, Version: v})
	}
	for i := 29; i >= 0; i-- {
		add(fmt.Sprintf("same-%02d", i), "flutter of a wing")
	}
	add("top-c", "flutter flutter flutter of a wing")
	add("top-b", "flutter flutter of a wing")
	add("top-a", "flutter flutter of a wing")
	if err := b.ApplyChanges(ctx, "log", changes, uint64(len(changes))); err != nil {
		t.Fatal(err)
	}
	want := []string{"top-c", "top-a", "top-b"}
	for i := range 30 {
		want = append(want, fmt.Sprintf("same-%02d", i))
	}
	for _, k := range []int{1, 2, 3, 4, 10, 33, 50} {
		for _, tenant := range []string{"", "t0"} {
			before := tr.n.Load()
			refs, err := b.Retrieve(ctx, spi.KeywordRequest{Text: "flutter", K: k, Tenant: tenant})
			if err != nil {
				t.Fatalf("k=%d tenant %q: %v", k, tenant, err)
			}
			var got []string
			for i, r := range refs {
				got = append(got, r.ID)
				if i > 0 && (r.Score > refs[i-1].Score || r.Score == refs[i-1].Score && r.ID < refs[i-1].ID) {
					t.Errorf("k=%d tenant %q: %s (%v) after %s (%v): not by descending score, then id", k, tenant, r.ID, r.Score, refs[i-1].ID, refs[i-1].Score)
				}
			}
			if w := want[:min(k, len(want))]; !slices.Equal(got, w) {
				t.Errorf("k=%d tenant %q: got %v, want %v", k, tenant, got, w)
			}
			// A cut inside a tie (top-a and top-b, or the 30) needs the
			// second search; one between distinct scores, or past every
			// match, does not.
			searches, wantSearches := tr.n.Load()-before, int64(1)
			if k == 2 || k > 3 && k < 33 {
				wantSearches = 2
			}
			if searches != wantSearches {
				t.Errorf("k=%d tenant %q: %d searches, want %d", k, tenant, searches, wantSearches)
			}
		}
	}
}
