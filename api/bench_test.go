package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/internal/history"
	"github.com/ragd/ragd/spi"
)

// BenchmarkQueryOverhead measures the API's own cost per query (auth,
// decoding, validation, metrics, logging at info into a discard logger,
// encoding) with a searcher that answers instantly.
func BenchmarkQueryOverhead(b *testing.B) {
	e := newEnv(b, func(c *api.Config) { c.Logger = nil })
	body := []byte(`{"text":"boundary layer heat transfer","limit":10,"filter":{"lang":["en"]}}`)
	b.ReportAllocs()
	for b.Loop() {
		rec := serve(b, e.h, http.MethodPost, "/v1/query", body, "Authorization", "Bearer "+queryKey)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
}

// BenchmarkQueryHistory is BenchmarkQueryOverhead without and with the
// console's history recording the request (issue 20): compare the two in
// one run.
func BenchmarkQueryHistory(b *testing.B) {
	body := []byte(`{"text":"boundary layer heat transfer","limit":10,"filter":{"lang":["en"]}}`)
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			e := newEnv(b, func(c *api.Config) {
				c.Logger = nil
				if on {
					c.History = history.New(history.Config{})
				}
			})
			b.ReportAllocs()
			for b.Loop() {
				rec := serve(b, e.h, http.MethodPost, "/v1/query", body, "Authorization", "Bearer "+queryKey)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
			}
		})
	}
}

// BenchmarkUpsertOverhead measures a 100-document batch through the API
// (decoding, per-document checks, the ownership lookup in an in-memory
// store) with a writer that accepts instantly.
func BenchmarkUpsertOverhead(b *testing.B) {
	e := newEnv(b, func(c *api.Config) { c.Logger = nil; c.Ingest.MaxDocsPerRequest = 100 })
	e.writer.UpsertFn = func(_ context.Context, docs []spi.Document) []ingest.Result {
		out := make([]ingest.Result, len(docs))
		for i, d := range docs {
			out[i] = ingest.Result{ID: d.ID, Status: ingest.StatusOK}
		}
		return out
	}
	docs := make([]string, 100)
	for i := range docs {
		docs[i] = fmt.Sprintf(`{"id":"doc-%d","title":"title %d","text":%q}`, i, i, strings.Repeat("word ", 100))
	}
	body := []byte(`{"documents":[` + strings.Join(docs, ",") + `]}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		rec := serve(b, e.h, http.MethodPost, "/v1/documents", body, "Authorization", "Bearer "+adminKey)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
}

// hostileFilter is a query whose filter has n keys of one value each
// (`"123456":["v"]`): issue 18 item 12's probe used 525,694 of them, 8.3 MB,
// under the document batches' body limit.
func hostileFilter(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"text":"x","filter":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%d":["v"]`, i)
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}

// BenchmarkHostileFilter measures what a query with an oversized filter
// costs before its 4xx, with the shipped body limits: the 7.9 MB probe of
// issue 18, and one just under the query body limit (256 KiB).
func BenchmarkHostileFilter(b *testing.B) {
	for _, tc := range []struct {
		name string
		keys int
	}{{"525694keys", 525694}, {"17000keys", 17000}} {
		b.Run(tc.name, func(b *testing.B) {
			e := newEnv(b, func(c *api.Config) { c.Logger = nil; c.Server.BodyLimitBytes = 8 << 20 })
			body := hostileFilter(tc.keys)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				rec := serve(b, e.h, http.MethodPost, "/v1/query", body, "Authorization", "Bearer "+queryKey)
				if rec.Code/100 != 4 {
					b.Fatalf("status %d", rec.Code)
				}
			}
		})
	}
}

// BenchmarkRefuseHugeFilter measures what a query with a filter of as many
// keys as the default query body limit (256 KiB) holds costs before it is
// refused, over /v1/query and over /mcp (issue 29 item 3: /mcp spent ~95
// MiB and 282 ms on a 1 MiB tools/call of 70,626 keys). Compare B/op and
// ns/op of the two.
func BenchmarkRefuseHugeFilter(b *testing.B) {
	const limit = 256 << 10
	e := newEnv(b, func(c *api.Config) { c.Logger = nil; c.Server.QueryBodyLimitBytes = limit })
	var keys []string
	for n := 0; n < limit-200; n += len(keys[len(keys)-1]) + 1 {
		keys = append(keys, fmt.Sprintf(`"k%d":["v"]`, len(keys)))
	}
	obj := `{` + strings.Join(keys, ",") + `}`
	args := `{"text":"a","filter":` + obj + `}`
	mcpHeaders := []string{"Accept", "application/json, text/event-stream"}
	for _, tc := range []struct {
		name, path, body string
		headers          []string
		want             int
		says             string
	}{
		{"query", "/v1/query", args, nil, http.StatusBadRequest, "invalid_filter"},
		{"mcp", api.PathMCP, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":` + args + `}}`,
			mcpHeaders, http.StatusOK, "invalid_filter"},
		// The same keys elsewhere: under an unknown member (refused at
		// its name), in fusion, in an MCP message's _meta (params bound).
		{"query-unknown", "/v1/query", `{"text":"a","zzz":` + obj + `}`, nil, http.StatusBadRequest, "unknown_field"},
		{"query-fusion", "/v1/query", `{"text":"a","fusion":` + obj + `}`, nil, http.StatusBadRequest, "unknown_field"},
		{"mcp-meta", api.PathMCP, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":` + obj + `}}`,
			mcpHeaders, http.StatusBadRequest, "invalid_body"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if len(tc.body) > limit {
				b.Fatalf("body of %d bytes", len(tc.body))
			}
			body := []byte(tc.body)
			h := append([]string{"Authorization", "Bearer " + queryKey}, tc.headers...)
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				rec := serve(b, e.h, http.MethodPost, tc.path, body, h...)
				if rec.Code != tc.want || !strings.Contains(rec.Body.String(), tc.says) {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
