package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/spi"
)

// filterOf is a query whose filter has keys keys of values values each.
func filterOf(keys, values int, keyLen, valueLen int) string {
	var b strings.Builder
	b.WriteString(`{"text":"a","filter":{`)
	for k := range keys {
		if k > 0 {
			b.WriteByte(',')
		}
		name := fmt.Sprintf("k%d", k)
		name += strings.Repeat("k", max(0, keyLen-len(name)))
		fmt.Fprintf(&b, "%q:[", name)
		for v := range values {
			if v > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q", strings.Repeat("v", max(1, valueLen)))
		}
		b.WriteByte(']')
	}
	b.WriteString(`}}`)
	return b.String()
}

// Issue 18 item 12: a query past a bound is refused at the first token
// past it, with the field and the byte, and the searcher is never called.
func TestQueryBoundsWhileDecoding(t *testing.T) {
	deep := `{"text":"a","x":` + strings.Repeat("[", 9) + strings.Repeat("]", 9) + `}`
	cases := []struct {
		name, body, code, field string
	}{
		{"filter conditions", filterOf(spi.MaxFilterConditions+1, 1, 0, 1), "invalid_filter", "filter.k64"},
		{"filter values", filterOf(1, spi.MaxFilterValues+1, 0, 1), "invalid_filter", "filter.k0[1024]"},
		{"filter key bytes", filterOf(1, 1, spi.MaxFilterKeyBytes+1, 1), "invalid_filter", "filter"},
		{"filter value bytes", filterOf(1, 1, 0, spi.MaxFilterValueBytes+1), "invalid_filter", "filter.k0[0]"},
		{"filter depth", `{"text":"a","filter":` + strings.Repeat(`{"$not":`, spi.MaxFilterDepth+1) + `{"a":1}` + strings.Repeat("}", spi.MaxFilterDepth+1) + `}`,
			"invalid_filter", "filter" + strings.Repeat(".$not", spi.MaxFilterDepth+1)},
		{"filter operator", `{"text":"a","filter":{"$or":[{"a":1},{"b":{"$regex":"x"}}]}}`, "invalid_filter", "filter.$or[1].b.$regex"},
		{"sources", `{"text":"a","sources":{"vector":{},"keyword":{},"graph":{},"graph_expand":{},"x":{}}}`, "invalid_sources", "sources"},
		{"nesting", deep, api.CodeInvalidBody, ""},
	}
	e := newEnv(t, nil)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := wantError(t, e.do(http.MethodPost, "/v1/query", tc.body), http.StatusBadRequest, tc.code)
			if d.Field != tc.field || d.Offset == nil || *d.Offset <= 0 {
				t.Fatalf("field %q offset %v, want field %q and the byte", d.Field, d.Offset, tc.field)
			}
		})
	}
	// At the bounds: accepted and passed on.
	for _, body := range []string{
		filterOf(16, 64, 0, 1), // the largest filter of earlier releases
		filterOf(spi.MaxFilterConditions, spi.MaxFilterValues/spi.MaxFilterConditions, 0, 1),
		filterOf(1, 1, spi.MaxFilterKeyBytes, spi.MaxFilterValueBytes),
		`{"text":"a","filter":` + strings.Repeat(`{"$not":`, spi.MaxFilterDepth) + `{"a":{"$gte":1,"$lt":{"$time":"2024-01-01T00:00:00Z"}}}` + strings.Repeat("}", spi.MaxFilterDepth) + `}`,
		`{"text":"a","sources":{"vector":{"k":5},"keyword":{},"graph":{},"graph_expand":{}}}`,
	} {
		if rec := e.do(http.MethodPost, "/v1/query", body); rec.Code != http.StatusOK {
			t.Fatalf("a query at the bounds: %d %s", rec.Code, rec.Body.String())
		}
	}
	if n := len(e.searcher.calls()); n != 5 {
		t.Fatalf("the searcher was called %d times, want 5 (the queries at the bounds)", n)
	}
}

// A hostile filter is refused after reading a bounded part of it: refusing
// 16,000 keys allocates what refusing 17 does, not the 16,000-entry map
// (51,000 allocations before the fix). Allocation counts do not depend on
// the machine's load.
func TestHostileFilterRefusedCheaply(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.Logger = nil; c.Server.BodyLimitBytes = 1 << 20 })
	small, big := []byte(filterOf(spi.MaxFilterConditions+1, 1, 0, 1)), hostileFilter(16000)
	allocs := func(body []byte) float64 {
		return testing.AllocsPerRun(5, func() {
			if rec := serve(t, e.h, http.MethodPost, "/v1/query", body, "Authorization", "Bearer "+queryKey); rec.Code != http.StatusBadRequest {
				t.Fatalf("status %d", rec.Code)
			}
		})
	}
	a17, a16k := allocs(small), allocs(big)
	if a16k > a17+50 {
		t.Fatalf("refusing a 16,000-key filter: %.0f allocations, refusing a 17-key one %.0f: the filter was built before it was refused", a16k, a17)
	}
}

// Queries have a body limit of their own, much smaller than document
// batches': a query above it is refused before it is read, a batch of that
// size is not.
func TestQueryBodyLimit(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.Server.BodyLimitBytes = 1 << 20; c.Server.QueryBodyLimitBytes = 4 << 10 })
	pad := strings.Repeat("a", 8<<10)
	wantError(t, e.do(http.MethodPost, "/v1/query", `{"text":"`+pad+`"}`), http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge)
	rec := e.do(http.MethodPost, "/v1/documents", `{"documents":[{"id":"a","title":"`+pad+`"}]}`)
	if rec.Code == http.StatusRequestEntityTooLarge {
		t.Fatalf("a document batch of the same size: %d %s", rec.Code, rec.Body.String())
	}
}
