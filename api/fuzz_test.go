package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/spi"
)

// FuzzQueryHandler sends arbitrary bodies to POST /v1/query and POST
// /v1/documents with healthy fakes behind them: whatever the body, the
// answer is never a 5xx, always JSON, and every 4xx has the error shape.
// The seed corpus is in testdata/fuzz/FuzzQueryHandler; run it longer with
//
//	go test -run '^$' -fuzz FuzzQueryHandler -fuzztime 60s ./api
func FuzzQueryHandler(f *testing.F) {
	for _, seed := range []string{
		`{"text":"boundary layer"}`,
		`{"text":"a","limit":5,"offset":2,"window":50,"filter":{"lang":["en","fr"]},"explain":true}`,
		`{"vector":[0.1,0.2,0.3,0.4],"sources":{"vector":{"k":10,"weight":2}},"fusion":{"mode":"dbsf"}}`,
		`{"text":"a","expand":{"enabled":true,"hops":2,"seeds":3},"min_sources":1,"budget_ms":100}`,
		`{"vector":[1e999]}`,
		`{"filter":{"k":"v"}}`,
		`{"documents":[{"id":"a","title":"t","text":"x","metadata":{"k":"v"},"vector":[1,2,3,4],"entities":["e"],"links":["b"]}]}`,
		`{"documents":[{"id":"a"},{"id":"a"}]}`,
		`{"documents":[{"id":"","tenant":"t"}]}`,
		`[]`, `null`, `{`, `{"text":"\ud800"}`, "{\"text\":\"a\"}\x00",
	} {
		f.Add([]byte(seed))
	}
	e := newEnv(f, func(c *api.Config) { c.Logger = nil }) // discard: the fuzzer makes millions of requests
	e.writer.UpsertFn = func(_ context.Context, docs []spi.Document) []ingest.Result {
		out := make([]ingest.Result, len(docs))
		for i, d := range docs {
			out[i] = ingest.Result{ID: d.ID, Status: ingest.StatusOK}
		}
		return out
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range []string{"/v1/query", "/v1/documents"} {
			rec := serve(t, e.h, http.MethodPost, path, body, "Authorization", "Bearer "+acmeAdminKey)
			if rec.Code >= 500 || rec.Code < 200 {
				t.Fatalf("POST %s %q: status %d: %s", path, body, rec.Code, rec.Body.String())
			}
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("POST %s %q: body is not JSON: %s", path, body, rec.Body.String())
			}
			if rec.Code >= 400 {
				errorOf(t, rec)
			}
		}
	})
}
