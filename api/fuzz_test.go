package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
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
		`{"text":"circuit breaker","fusion":{"mode":"score"},"sources":{"keyword":{"weight":1e308},"vector":{"weight":1e308}}}`,
		`{"text":"a","fusion":{"mode":"dbsf"},"sources":{"keyword":{"weight":1e308}}}`,
		`{"text":"a","limit":2.5}`,
		`[]`, `null`, `{`, `{"text":"\ud800"}`, "{\"text\":\"a\"}\x00",
		// Bad inputs found by black-box testing (issue 12): huge weights,
		// fractional integers, null bodies and members.
		`{"text":"circuit breaker","fusion":{"mode":"score"},"sources":{"keyword":{"weight":1e308},"vector":{"weight":1e308}}}`,
		`{"text":"a","fusion":{"mode":"dbsf"},"sources":{"graph":{"weight":-1e308}}}`,
		`{"text":"a","limit":2.5,"window":1e3}`, `{"text":"a","limit":1e400}`,
		`{"text":null}`, `{"documents":null}`, `{"documents":[null]}`,
		// Issue 18: names in another case, names twice, tenants with
		// invisible or bidi characters.
		`{"Text":"a"}`, `{"text":"a","text":"b"}`, `{"text":"a","filter":{"k":["v"],"k":["w"]}}`,
		`{"documents":[{"id":"a","text":"x","metadata":{"k":"1","k":"2"}}]}`, `{"documents":[{"ID":"a","text":"x"}]}`,
		`{"text":"a","tenant":"ac\u200bme"}`, `{"text":"a","tenant":"\u0000"}`, `{"documents":[{"id":"\u202egnp","text":"x"}]}`,
		`{"documents":[{"id":"a","text":"x","updated_at":"9999-12-31T23:59:59-23:59"}]}`,
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

// FuzzDocumentID reads and deletes documents by arbitrary ids: whatever the
// id, the answer is never a 5xx, always JSON, every 4xx has the error
// shape with the request id, and an id the API accepts reaches the record
// store and the writer exactly as it was before url.PathEscape (decoded
// once: issue 18, item 5). The same string sent as a new document id and
// as a query's tenant is accepted exactly when spi.ValidateName accepts
// it (item 18).
func FuzzDocumentID(f *testing.F) {
	for _, seed := range []string{"a", "", "%zz", "%", "a/b", "..", "\x00", "\xed\xa0\x80", "\xff\xfe", "é", "a b?c#d",
		"invoice%41", "50%off", "x%2Fy", "%252F", "a\u200bb", "\u202egnp.exe", "e\u0301"} {
		f.Add(seed)
	}
	e := newEnv(f, func(c *api.Config) { c.Logger = nil })
	asked := recordingStore(e)
	var deleted []string // fuzz functions run one at a time per worker
	e.writer.DeleteFn = func(_ context.Context, ids []string) []ingest.Result {
		deleted = slices.Clone(ids)
		return []ingest.Result{{ID: ids[0], Status: ingest.StatusOK}}
	}
	f.Fuzz(func(t *testing.T, id string) {
		path := "/v1/documents/" + url.PathEscape(id)
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			deleted = nil
			rec := serve(t, e.h, method, path, nil, "Authorization", "Bearer "+acmeAdminKey)
			if rec.Code >= 500 || rec.Code < 200 {
				t.Fatalf("%s %s: status %d: %s", method, path, rec.Code, rec.Body.String())
			}
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("%s %s: body is not JSON: %s", method, path, rec.Body.String())
			}
			if rec.Code >= 400 {
				errorOf(t, rec)
			}
			got := asked()
			if method == http.MethodDelete {
				got = deleted
			}
			if rec.Code < 400 && !slices.Equal(got, []string{id}) {
				t.Fatalf("%s %s: the store was asked for %q, want %q", method, path, got, id)
			}
		}
		// The same string as a new id and as a query's tenant: accepted
		// exactly when spi.ValidateName accepts it, never a 5xx.
		// JSON carries invalid UTF-8 as U+FFFD: check what is sent.
		raw, _ := json.Marshal(id)
		if json.Unmarshal(raw, &id) != nil {
			t.Fatalf("%q does not survive JSON", raw)
		}
		valid := spi.ValidateName(id, spi.MaxNameBytes) == nil
		rec := serve(t, e.h, http.MethodPost, "/v1/documents", map[string]any{"documents": []spi.Document{{ID: id, Text: "x"}}}, "Authorization", "Bearer "+adminKey)
		if rec.Code >= 500 || !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("upsert %q: %d %s", id, rec.Code, rec.Body)
		}
		var batch api.BatchResponse
		if rec.Code < 400 && json.Unmarshal(rec.Body.Bytes(), &batch) == nil && len(batch.Results) == 1 {
			if r := batch.Results[0]; (r.Status == ingest.StatusOK) != valid || (valid && r.ID != id) {
				t.Fatalf("upsert %q (valid name: %v): result %+v", id, valid, r)
			}
		} else if valid {
			t.Fatalf("upsert of the valid id %q: %d %s", id, rec.Code, rec.Body)
		}
		rec = serve(t, e.h, http.MethodPost, "/v1/query", map[string]any{"text": "a", "tenant": id}, "Authorization", "Bearer "+adminKey)
		if rec.Code >= 500 || !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("query tenant %q: %d %s", id, rec.Code, rec.Body)
		}
		if (rec.Code == http.StatusOK) != (valid || id == "") {
			t.Fatalf("query tenant %q (valid name: %v): %d %s", id, valid, rec.Code, rec.Body)
		}
	})
}

// FuzzMCP sends arbitrary bodies to POST /mcp (issue 29 item 3): whatever
// the body, the answer is never a 5xx; it is JSON, or empty for a
// notification's 202; every 4xx is a JSON-RPC error carrying the API's
// error object (mcpRefusalOf); and a JSON-RPC answer carries the
// request's id exactly as it was sent (/mcp hands the SDK a token and puts
// the client's bytes back). Run it longer with
//
//	go test -run '^$' -fuzz FuzzMCP -fuzztime 60s ./api
func FuzzMCP(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":1e40,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":-0.5e-3,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"text":"wing","limit":3,"filter":{"lang":["en"]}}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"text":"a","limit":1e300}}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"search","arguments":{"filter":{"a":["1"],"b":["1"],"c":["1"],"d":["1"],"e":["1"],"f":["1"],"g":["1"],"h":["1"],"i":["1"],"j":["1"],"k":["1"],"l":["1"],"m":["1"],"n":["1"],"o":["1"],"p":["1"],"q":["1"]}}},"id":"\u00e9"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_document","arguments":{"id":"doc-1"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{},"method":"ping"}`, `{"jsonrpc":"2.0","id":"\ud800","method":"ping"}`, `{`, ``, `null`,
	} {
		f.Add([]byte(seed))
	}
	e := newEnv(f, func(c *api.Config) { c.Logger = nil })
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := mcpPost(t, e, string(body))
		if rec.Code >= 500 || rec.Code < 200 {
			t.Fatalf("POST /mcp %q: status %d: %s", body, rec.Code, rec.Body.String())
		}
		if rec.Code == http.StatusAccepted && rec.Body.Len() == 0 {
			return
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("POST /mcp %q: %d, body is not JSON: %s", body, rec.Code, rec.Body.String())
		}
		if rec.Code >= 400 {
			mcpRefusalOf(t, rec)
			return
		}
		var req, resp struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(body, &req) != nil || json.Unmarshal(rec.Body.Bytes(), &resp) != nil {
			t.Fatalf("POST /mcp %q: answered %d %s", body, rec.Code, rec.Body.String())
		}
		if req.ID != nil && string(resp.ID) != string(req.ID) {
			t.Fatalf("POST /mcp %q: answered id %s, want %s", body, resp.ID, req.ID)
		}
	})
}
