package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/spi"
)

func statuses(rs []ingest.Result) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.ID + ":" + r.Status
		if r.Code != "" {
			parts[i] += ":" + r.Code
		}
	}
	return strings.Join(parts, " ")
}

func TestUpsertAllOK(t *testing.T) {
	e := newEnv(t, nil)
	body := `{"documents":[
		{"id":"a","title":"A","text":"alpha","metadata":{"lang":"en"},"vector":[1,0,0,0],"entities":["x"],"links":["b"]},
		{"id":"b","tenant":"t1","text":"beta","updated_at":"2026-01-02T03:04:05Z"}]}`
	resp := decodeAs[api.BatchResponse](t, e.do(http.MethodPost, "/v1/documents", body), http.StatusOK)
	if resp.Total != 2 || resp.OK != 2 || resp.Failed != 0 || statuses(resp.Results) != "a:ok b:ok" {
		t.Fatalf("response %+v", resp)
	}
	calls := e.writer.upsertCalls()
	if len(calls) != 1 || len(calls[0]) != 2 {
		t.Fatalf("writer calls %+v", calls)
	}
	a := calls[0][0]
	if !a.Metadata["lang"].Equal(spi.String("en")) || len(a.Vector) != 4 || a.Entities[0] != "x" || a.Links[0] != "b" || calls[0][1].Tenant != "t1" || calls[0][1].UpdatedAt.Year() != 2026 {
		t.Fatalf("documents reached the writer as %+v", calls[0])
	}
}

func TestUpsertPartialBatchIs207(t *testing.T) {
	e := newEnv(t, nil)
	e.writer.UpsertFn = func(_ context.Context, docs []spi.Document) []ingest.Result {
		out := make([]ingest.Result, len(docs))
		for i, d := range docs {
			switch d.ID {
			case "bad":
				out[i] = ingest.Result{ID: d.ID, Status: ingest.StatusFailed, Code: ingest.CodeInvalidVector, Error: "dimension 2, want 4"}
			case "later":
				out[i] = ingest.Result{ID: d.ID, Status: ingest.StatusOK, Version: 7, Stores: map[string]string{"vector": "ok", "keyword": "pending"}}
			default:
				out[i] = ingest.Result{ID: d.ID, Status: ingest.StatusOK}
			}
		}
		return out
	}
	resp := decodeAs[api.BatchResponse](t, e.do(http.MethodPost, "/v1/documents",
		`{"documents":[{"id":"ok1","text":"x"},{"id":"bad","vector":[1,2]},{"id":"later","text":"y"}]}`), http.StatusMultiStatus)
	if resp.OK != 2 || resp.Failed != 1 || resp.Pending != 1 || statuses(resp.Results) != "ok1:ok bad:failed:invalid_vector later:ok" {
		t.Fatalf("response %+v", resp)
	}
	if r := resp.Results[2]; r.Stores["keyword"] != "pending" || r.Version != 7 {
		t.Fatalf("stores and version not passed through: %+v", r)
	}

	// Only pending results: every document is stored, 200.
	resp = decodeAs[api.BatchResponse](t, e.do(http.MethodPost, "/v1/documents", `{"documents":[{"id":"later","text":"y"}]}`), http.StatusOK)
	if resp.Pending != 1 || resp.Failed != 0 {
		t.Fatalf("response %+v", resp)
	}
}

// TestUpsertWaitParameter: ?wait reaches the write path bounded; a bad
// value is a 400 before anything is written.
func TestUpsertWaitParameter(t *testing.T) {
	e := newEnv(t, nil)
	decodeAs[api.BatchResponse](t, e.do(http.MethodPost, "/v1/documents?wait=2s", `{"documents":[{"id":"a","text":"x"}]}`), http.StatusOK)
	if got := e.writer.lastOpts().Wait; got != 2*time.Second {
		t.Fatalf("wait reached the writer as %v, want 2s", got)
	}
	decodeAs[api.BatchResponse](t, e.do(http.MethodPost, "/v1/documents?wait=true", `{"documents":[{"id":"a","text":"x"}]}`), http.StatusOK)
	if got := e.writer.lastOpts().Wait; got != 10*time.Second {
		t.Fatalf("wait=true reached the writer as %v, want 10s", got)
	}
	n := len(e.writer.upsertCalls())
	for _, bad := range []string{"soon", "-1s", "2h"} {
		d := wantError(t, e.do(http.MethodPost, "/v1/documents?wait="+bad, `{"documents":[{"id":"a","text":"x"}]}`), http.StatusBadRequest, api.CodeInvalidParameter)
		if d.Field != "wait" {
			t.Fatalf("wait=%s: field %q", bad, d.Field)
		}
	}
	wantError(t, e.do(http.MethodPost, "/v1/documents/delete?wait=x", `{"ids":["a"]}`), http.StatusBadRequest, api.CodeInvalidParameter)
	if len(e.writer.upsertCalls()) != n {
		t.Fatal("writer called despite a bad wait")
	}
}

func TestUpsertInvalidUTF8Body(t *testing.T) {
	e := newEnv(t, nil)
	prefix := `{"documents":[{"id":"a`
	body := append(append([]byte(prefix), 0xff), `","text":"x"}]}`...)
	d := wantError(t, e.do(http.MethodPost, "/v1/documents", body), http.StatusBadRequest, api.CodeMalformedJSON)
	if d.Offset == nil || *d.Offset != int64(len(prefix)) {
		t.Fatalf("offset = %v, want %d (the invalid byte)", d.Offset, len(prefix))
	}
	if _, ok := e.store.get("a\ufffd"); ok || len(e.writer.upsertCalls()) != 0 {
		t.Fatal("a document with an invalid id was written")
	}
}

func TestUpsertBadBodies(t *testing.T) {
	many := make([]string, testMaxDocs+1)
	for i := range many {
		many[i] = fmt.Sprintf(`{"id":"d%d","text":"x"}`, i)
	}
	cases := []struct {
		name, body, code, field string
	}{
		{"no documents key", `{}`, api.CodeEmptyBatch, "documents"},
		{"empty documents", `{"documents":[]}`, api.CodeEmptyBatch, "documents"},
		{"documents not array", `{"documents":{"id":"a"}}`, "invalid_documents", "documents"},
		{"too many documents", `{"documents":[` + strings.Join(many, ",") + `]}`, api.CodeTooManyDocuments, "documents"},
		{"duplicate ids", `{"documents":[{"id":"a","text":"x"},{"id":"b","text":"y"},{"id":"a","text":"z"}]}`, api.CodeDuplicateID, "documents[2].id"},
		{"unknown top-level field", `{"documents":[{"id":"a"}],"upsert":true}`, api.CodeUnknownField, "upsert"},
		{"malformed", `{"documents":[{"id":"a"}`, api.CodeMalformedJSON, ""},
		{"null body", `null`, api.CodeInvalidBody, ""},
		// What is wrong with one document is that document's result
		// (TestUpsertPerDocumentDecodeFailures).
	}
	e := newEnv(t, nil)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := wantError(t, e.do(http.MethodPost, "/v1/documents", tc.body), http.StatusBadRequest, tc.code)
			if d.Field != tc.field {
				t.Fatalf("field %q, want %q", d.Field, tc.field)
			}
		})
	}
	if n := len(e.writer.upsertCalls()); n != 0 {
		t.Fatalf("writer called %d times for bad bodies", n)
	}
}

// TestUpsertPerDocumentChecks: the write path (here the real pipeline over
// an in-memory record) validates each document and applies the key's
// tenant; the handler passes the tenant through and reports per document.
func TestUpsertPerDocumentChecks(t *testing.T) {
	e := newEnv(t, nil)
	e.store.docs["owned"] = spi.Document{ID: "owned", Tenant: "globex", Text: "theirs"}
	e.store.docs["mine"] = spi.Document{ID: "mine", Tenant: "acme", Text: "old"}
	body := fmt.Sprintf(`{"documents":[
		{"id":"","text":"no id"},
		{"id":"big","text":%q},
		{"id":"other","tenant":"globex","text":"x"},
		{"id":"owned","text":"steal"},
		{"id":"mine","text":"new"},
		{"id":"fresh","text":"y"},
		{"id":"nul","text":"a\u0000b"},
		{"id":"bad\u0001id","text":"z"}]}`, strings.Repeat("x", testMaxText+1))
	resp := decodeAs[api.BatchResponse](t, e.do(http.MethodPost, "/v1/documents", body, "Authorization", "Bearer "+acmeAdminKey), http.StatusMultiStatus)
	want := ":failed:invalid_id big:failed:too_large other:failed:tenant_forbidden owned:failed:id_conflict mine:ok fresh:ok nul:failed:invalid_text bad\x01id:failed:invalid_id"
	if got := statuses(resp.Results); got != want {
		t.Fatalf("results\n got %q\nwant %q", got, want)
	}
	if resp.Failed != 6 || resp.OK != 2 || resp.Total != 8 {
		t.Fatalf("counts %+v", resp)
	}
	if got := e.writer.lastOpts().Tenant; got != "acme" {
		t.Fatalf("the key's tenant reached the writer as %q", got)
	}
	for _, id := range []string{"mine", "fresh"} {
		if d, _ := e.store.get(id); d.Tenant != "acme" {
			t.Fatalf("document %s written with tenant %q, want the key's tenant", id, d.Tenant)
		}
	}
	if d, _ := e.store.get("owned"); d.Text != "theirs" || d.Tenant != "globex" {
		t.Fatalf("another tenant's document was overwritten: %+v", d)
	}
	if strings.Contains(resp.Results[3].Error, "globex") || strings.Contains(resp.Results[3].Error, "tenant") {
		t.Fatalf("id_conflict reveals the owner: %q", resp.Results[3].Error)
	}
}

// Issue 30: typed metadata values are accepted and reach the writer
// typed; a value that is not one (null, an object, a nested list, an
// integer beyond 64 bits, a bad time, a $ key, a list too long) fails its
// own document with invalid_metadata, and the batch's other documents are
// written.
func TestUpsertTypedMetadata(t *testing.T) {
	e := newEnv(t, nil)
	long := "[" + strings.Repeat("1,", ingest.DefaultMaxMetadataListItems) + "1]"
	body := `{"documents":[
		{"id":"typed","text":"t","metadata":{"page":3,"score":0.5,"big":1e21,"draft":false,"tags":["a",2],"at":{"$time":"2024-05-01T12:00:00.25+02:00"}}},
		{"id":"null","text":"t","metadata":{"page":null}},
		{"id":"object","text":"t","metadata":{"o":{"a":1}}},
		{"id":"nested","text":"t","metadata":{"l":[[1]]}},
		{"id":"huge","text":"t","metadata":{"n":9223372036854775808}},
		{"id":"badtime","text":"t","metadata":{"at":{"$time":"yesterday"}}},
		{"id":"dollar","text":"t","metadata":{"$x":1}},
		{"id":"longlist","text":"t","metadata":{"l":` + long + `}}]}`
	resp := decodeAs[api.BatchResponse](t, e.do(http.MethodPost, "/v1/documents", body), http.StatusMultiStatus)
	want := "typed:ok null:failed:invalid_metadata object:failed:invalid_metadata nested:failed:invalid_metadata huge:failed:invalid_metadata " +
		"badtime:failed:invalid_metadata dollar:failed:invalid_metadata longlist:failed:invalid_metadata"
	if got := statuses(resp.Results); got != want {
		t.Fatalf("results\n got %q\nwant %q", got, want)
	}
	for _, r := range resp.Results {
		if strings.Contains(r.Error, "yesterday") || strings.Contains(r.Error, "9223372036854775808") {
			t.Fatalf("the error quotes the value: %q", r.Error)
		}
	}
	d, ok := e.store.get("typed")
	if !ok {
		t.Fatal("the typed document was not written")
	}
	raw, _ := json.Marshal(d.Metadata)
	const wantMD = `{"at":{"$time":"2024-05-01T10:00:00.250000Z"},"big":1000000000000000000000.0,"draft":false,"page":3,"score":0.5,"tags":["a",2]}`
	if string(raw) != wantMD {
		t.Fatalf("metadata written as %s, want %s", raw, wantMD)
	}
}

func TestUpsertIDConflictAppliesToUnboundKeys(t *testing.T) {
	e := newEnv(t, nil)
	e.store.docs["x"] = spi.Document{ID: "x", Tenant: "acme"}
	resp := decodeAs[api.BatchResponse](t, e.do(http.MethodPost, "/v1/documents", `{"documents":[{"id":"x","text":"moved"}]}`), http.StatusMultiStatus)
	if statuses(resp.Results) != "x:failed:id_conflict" {
		t.Fatalf("results %s", statuses(resp.Results))
	}
	if d, _ := e.store.get("x"); d.Tenant != "acme" {
		t.Fatalf("document moved tenants: %+v", d)
	}
	// The same tenant may overwrite.
	resp = decodeAs[api.BatchResponse](t, e.do(http.MethodPost, "/v1/documents", `{"documents":[{"id":"x","tenant":"acme","text":"new"}]}`), http.StatusOK)
	if statuses(resp.Results) != "x:ok" {
		t.Fatalf("results %s", statuses(resp.Results))
	}
}

func TestUpsertRecordStoreDown(t *testing.T) {
	e := newEnv(t, nil)
	e.store.HydrateFn = func(context.Context, []string) ([]spi.Document, []string, error) {
		return nil, nil, fmt.Errorf("vector: hydrate: %w", spi.ErrUnavailable)
	}
	resp := decodeAs[api.BatchResponse](t, e.do(http.MethodPost, "/v1/documents", `{"documents":[{"id":"a","text":"x"},{"id":"b","text":"y"}]}`), http.StatusMultiStatus)
	if resp.Failed != 2 || resp.OK != 0 || statuses(resp.Results) != "a:failed:store_unavailable b:failed:store_unavailable" {
		t.Fatalf("want every document failed: %+v", resp)
	}
	if _, ok := e.store.get("a"); ok {
		t.Fatal("written although ownership could not be checked")
	}
	// Batch delete likewise answers per id and deletes nothing.
	del := decodeAs[api.BatchResponse](t, e.do(http.MethodPost, "/v1/documents/delete", `{"ids":["a"]}`), http.StatusMultiStatus)
	if del.Failed != 1 || del.Results[0].Code != ingest.CodeStoreUnavailable {
		t.Fatalf("batch delete while the record store is down: %+v", del)
	}
}

func TestUpsertWriterBreaksItsContract(t *testing.T) {
	e := newEnv(t, nil)
	e.writer.UpsertFn = func(context.Context, []spi.Document) []ingest.Result { return nil }
	wantError(t, e.do(http.MethodPost, "/v1/documents", `{"documents":[{"id":"a","text":"x"}]}`), http.StatusInternalServerError, api.CodeInternal)
}

func TestUpsertDeadlineBeforeAnyWriteIs504(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.Server.RequestTimeoutS = 1 })
	e.writer.UpsertFn = func(ctx context.Context, docs []spi.Document) []ingest.Result {
		<-ctx.Done()
		out := make([]ingest.Result, len(docs))
		for i, d := range docs {
			out[i] = ingest.Result{ID: d.ID, Status: ingest.StatusFailed, Code: ingest.CodeCanceled, Error: "canceled"}
		}
		return out
	}
	wantError(t, e.do(http.MethodPost, "/v1/documents", `{"documents":[{"id":"a","text":"x"}]}`), http.StatusGatewayTimeout, api.CodeTimeout)
}

func TestGetDocument(t *testing.T) {
	e := newEnv(t, nil)
	e.store.docs["a"] = spi.Document{ID: "a", Title: "A", Text: "alpha", Vector: []float32{1, 2, 3, 4}, Metadata: spi.Strings(map[string]string{"k": "v"})}
	e.store.docs["a/b"] = spi.Document{ID: "a/b", Text: "slash"}
	e.store.docs["acme-doc"] = spi.Document{ID: "acme-doc", Tenant: "acme"}
	e.store.docs["delete"] = spi.Document{ID: "delete", Text: "named delete"}

	d := decodeAs[spi.Document](t, e.do(http.MethodGet, "/v1/documents/a", nil, "Authorization", "Bearer "+queryKey), http.StatusOK)
	if d.ID != "a" || d.Text != "alpha" || !d.Metadata["k"].Equal(spi.String("v")) || d.Vector != nil {
		t.Fatalf("document %+v (the vector must not be returned)", d)
	}
	if d := decodeAs[spi.Document](t, e.do(http.MethodGet, "/v1/documents/a%2Fb", nil), http.StatusOK); d.Text != "slash" {
		t.Fatalf("percent-encoded id: %+v", d)
	}
	// The static batch-delete route does not shadow GET of an id "delete".
	if d := decodeAs[spi.Document](t, e.do(http.MethodGet, "/v1/documents/delete", nil), http.StatusOK); d.Text != "named delete" {
		t.Fatalf("id delete: %+v", d)
	}
	wantError(t, e.do(http.MethodGet, "/v1/documents/missing", nil), http.StatusNotFound, api.CodeNotFound)
	// Another tenant's document is indistinguishable from a missing one.
	d1 := wantError(t, e.do(http.MethodGet, "/v1/documents/a", nil, "Authorization", "Bearer "+acmeQueryKey), http.StatusNotFound, api.CodeNotFound)
	d2 := wantError(t, e.do(http.MethodGet, "/v1/documents/missing", nil, "Authorization", "Bearer "+acmeQueryKey), http.StatusNotFound, api.CodeNotFound)
	if d1.Message != d2.Message {
		t.Fatalf("foreign and missing documents answer differently: %q vs %q", d1.Message, d2.Message)
	}
	decodeAs[spi.Document](t, e.do(http.MethodGet, "/v1/documents/acme-doc", nil, "Authorization", "Bearer "+acmeQueryKey), http.StatusOK)

	wantError(t, e.do(http.MethodGet, "/v1/documents/%ff", nil), http.StatusBadRequest, api.CodeInvalidID)
	wantError(t, e.do(http.MethodGet, "/v1/documents/%01", nil), http.StatusBadRequest, api.CodeInvalidID)
	wantError(t, e.do(http.MethodGet, "/v1/documents/"+strings.Repeat("x", ingest.DefaultMaxIDBytes+1), nil), http.StatusBadRequest, api.CodeInvalidID)

	e.store.HydrateFn = func(context.Context, []string) ([]spi.Document, []string, error) {
		return nil, nil, fmt.Errorf("vector: %w", spi.ErrUnavailable)
	}
	wantError(t, e.do(http.MethodGet, "/v1/documents/a", nil), http.StatusServiceUnavailable, api.CodeUnavailable)
}

func TestDeleteDocument(t *testing.T) {
	e := newEnv(t, nil)
	e.store.docs["a"] = spi.Document{ID: "a"}
	e.store.docs["g"] = spi.Document{ID: "g", Tenant: "globex"}

	r := decodeAs[ingest.Result](t, e.do(http.MethodDelete, "/v1/documents/a", nil), http.StatusOK)
	if r.ID != "a" || r.Status != ingest.StatusOK {
		t.Fatalf("result %+v", r)
	}
	if _, ok := e.store.get("a"); ok {
		t.Fatal("document still stored")
	}
	wantError(t, e.do(http.MethodDelete, "/v1/documents/a", nil), http.StatusNotFound, api.CodeNotFound)
	wantError(t, e.do(http.MethodDelete, "/v1/documents/g", nil, "Authorization", "Bearer "+acmeAdminKey), http.StatusNotFound, api.CodeNotFound)
	if _, ok := e.store.get("g"); !ok {
		t.Fatal("another tenant's document was deleted")
	}
	if got := e.writer.lastOpts().Tenant; got != "acme" {
		t.Fatalf("the key's tenant reached the writer as %q", got)
	}

	for _, tc := range []struct {
		res    ingest.Result
		status int
		code   string
	}{
		{ingest.Result{ID: "g", Status: ingest.StatusFailed, Code: ingest.CodeStoreUnavailable, Error: "down"}, http.StatusServiceUnavailable, api.CodeUnavailable},
		{ingest.Result{ID: "g", Status: ingest.StatusFailed, Code: ingest.CodeStoreFailed, Error: "disk"}, http.StatusInternalServerError, api.CodeInternal},
	} {
		e.writer.DeleteFn = func(context.Context, []string) []ingest.Result { return []ingest.Result{tc.res} }
		wantError(t, e.do(http.MethodDelete, "/v1/documents/g", nil), tc.status, tc.code)
	}
	e.writer.DeleteFn = func(_ context.Context, ids []string) []ingest.Result {
		return []ingest.Result{{ID: ids[0], Status: ingest.StatusOK, Version: 3, Stores: map[string]string{"vector": "ok", "graph": "pending"}}}
	}
	if r := decodeAs[ingest.Result](t, e.do(http.MethodDelete, "/v1/documents/g", nil), http.StatusOK); r.Stores["graph"] != ingest.StorePending {
		t.Fatalf("result %+v", r)
	}
}

func TestBatchDelete(t *testing.T) {
	e := newEnv(t, nil)
	e.store.docs["a"] = spi.Document{ID: "a", Tenant: "acme"}
	e.store.docs["b"] = spi.Document{ID: "b", Tenant: "acme"}
	e.store.docs["g"] = spi.Document{ID: "g", Tenant: "globex"}

	resp := decodeAs[api.BatchResponse](t, e.do(http.MethodPost, "/v1/documents/delete", `{"ids":["a","missing","g","b"]}`,
		"Authorization", "Bearer "+acmeAdminKey), http.StatusOK)
	if got := statuses(resp.Results); got != "a:ok missing:not_found g:not_found b:ok" {
		t.Fatalf("results %s", got)
	}
	if resp.OK != 2 || resp.NotFound != 2 || resp.Failed != 0 {
		t.Fatalf("counts %+v", resp)
	}
	if got := e.writer.lastOpts().Tenant; got != "acme" {
		t.Fatalf("the key's tenant reached the writer as %q", got)
	}
	if _, ok := e.store.get("g"); !ok {
		t.Fatal("another tenant's document was deleted")
	}

	e.store.docs["c"] = spi.Document{ID: "c"}
	e.writer.DeleteFn = func(_ context.Context, ids []string) []ingest.Result {
		return []ingest.Result{{ID: ids[0], Status: ingest.StatusFailed, Code: ingest.CodeStoreUnavailable}}
	}
	resp = decodeAs[api.BatchResponse](t, e.do(http.MethodPost, "/v1/documents/delete", `{"ids":["c"]}`), http.StatusMultiStatus)
	if resp.Failed != 1 {
		t.Fatalf("counts %+v", resp)
	}
}

func TestBatchDeleteBadBodies(t *testing.T) {
	ids := make([]string, testMaxIDs+1)
	for i := range ids {
		ids[i] = fmt.Sprintf("%q", fmt.Sprint("id", i))
	}
	cases := []struct{ name, body, code, field string }{
		{"no ids", `{}`, api.CodeEmptyBatch, "ids"},
		{"empty ids", `{"ids":[]}`, api.CodeEmptyBatch, "ids"},
		{"too many ids", `{"ids":[` + strings.Join(ids, ",") + `]}`, api.CodeTooManyIDs, "ids"},
		{"duplicate", `{"ids":["a","b","a"]}`, api.CodeDuplicateID, "ids[2]"},
		{"empty id", `{"ids":["a",""]}`, api.CodeInvalidID, "ids[1]"},
		{"ids not strings", `{"ids":[1]}`, "invalid_ids", "ids[0]"},
		{"unknown field", `{"ids":["a"],"force":true}`, api.CodeUnknownField, "force"},
	}
	e := newEnv(t, nil)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := wantError(t, e.do(http.MethodPost, "/v1/documents/delete", tc.body), http.StatusBadRequest, tc.code)
			if d.Field != tc.field {
				t.Fatalf("field %q, want %q", d.Field, tc.field)
			}
		})
	}
	if n := len(e.writer.deleteCalls()); n != 0 {
		t.Fatalf("writer called %d times", n)
	}
}

// Issue 29 item 6: "a\ud800" and "a\udbff" both decoded to "a\ufffd", so
// two ids the client told apart were stored as one. An escaped lone
// surrogate is refused like invalid UTF-8; a surrogate pair is a
// character and passes.
func TestUpsertLoneSurrogateIs400(t *testing.T) {
	e := newEnv(t, nil)
	prefix := `{"documents":[{"id":"a`
	for _, esc := range []string{`\ud800`, `\udbff`, `\udc00`} {
		d := wantError(t, e.do(http.MethodPost, "/v1/documents", prefix+esc+`","text":"x"}]}`), http.StatusBadRequest, api.CodeMalformedJSON)
		if d.Offset == nil || *d.Offset != int64(len(prefix)) {
			t.Fatalf("%s: offset = %v, want %d (the escape)", esc, d.Offset, len(prefix))
		}
	}
	wantError(t, e.do(http.MethodPost, "/v1/query", `{"text":"wing \ud800"}`), http.StatusBadRequest, api.CodeMalformedJSON)
	if n := len(e.writer.upsertCalls()) + len(e.searcher.calls()); n != 0 {
		t.Fatalf("%d calls reached the writer or the searcher", n)
	}
	resp := decodeAs[api.BatchResponse](t, e.do(http.MethodPost, "/v1/documents", prefix+`\ud83d\ude00","text":"x"}]}`), http.StatusOK)
	if resp.OK != 1 || resp.Results[0].ID != "a\U0001F600" {
		t.Fatalf("a surrogate pair: %+v", resp)
	}
}

// Issue 29 item 6: one rule, per-document failures for anything about one
// document. A metadata value of the wrong JSON type or an updated_at out
// of range failed the whole batch with 400 while an empty id or a long
// text failed alone; now each fails alone, with the code of its field and
// its path, and the batch's other documents are written. Only what is
// about the body (syntax, encoding, a name twice, the batch's shape,
// repeated ids) is still a 400.
func TestUpsertPerDocumentDecodeFailures(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.Ingest.MaxDocsPerRequest = 20 })
	docs := []string{
		`{"id":"a","text":"ok"}`,
		`{"id":"b","text":"x","metadata":[1]}`,
		// Issue 18 item 16: parses, but in UTC it is the year 10000,
		// which no store keeps.
		`{"id":"c","text":"x","updated_at":"9999-12-31T23:59:59-23:59"}`,
		`{"id":"d","text":"x","updated_at":"yesterday"}`,
		`{"id":"e","txt":"x"}`,
		`{"ID":"f","text":"x"}`,
		`{"id":"g","vector":[1e999]}`,
		`{"id":"h","text":"x","entities":[1]}`,
		`{"id":"i","text":"x","links":[2]}`,
		`{"id":"j","title":5}`,
		`7`,
		`null`,
		`{"id":8,"text":"x"}`,
		`{"id":"k","text":"fine","metadata":{"lang":"en"}}`,
	}
	resp := decodeAs[api.BatchResponse](t, e.do(http.MethodPost, "/v1/documents", `{"documents":[`+strings.Join(docs, ",")+`]}`), http.StatusMultiStatus)
	want := "a:ok b:failed:invalid_metadata c:failed:invalid_updated_at d:failed:invalid_updated_at e:failed:unknown_field " +
		"f:failed:unknown_field g:failed:invalid_vector h:failed:invalid_entities i:failed:invalid_links j:failed:invalid_text " +
		":failed:invalid_document :failed:invalid_document :failed:invalid_id k:ok"
	if got := statuses(resp.Results); got != want {
		t.Fatalf("results\n got %q\nwant %q", got, want)
	}
	if resp.OK != 2 || resp.Failed != len(docs)-2 || resp.Total != len(docs) {
		t.Fatalf("counts %+v", resp)
	}
	for i, path := range map[int]string{1: "documents[1].metadata", 3: "documents[3].updated_at", 4: "documents[4].txt", 5: "documents[5].ID",
		6: "documents[6].vector[0]", 7: "documents[7].entities[0]", 10: "documents[10]", 12: "documents[12].id"} {
		if msg := resp.Results[i].Error; !strings.HasPrefix(msg, path+": ") || strings.Contains(msg, "Go ") || strings.Contains(msg, "spi.Document") {
			t.Errorf("result %d: error %q, want it to name %s and no Go type", i, msg, path)
		}
	}
	for _, id := range []string{"a", "k"} {
		if _, ok := e.store.get(id); !ok {
			t.Errorf("document %s was not written", id)
		}
	}
	for _, id := range []string{"b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		if _, ok := e.store.get(id); ok {
			t.Errorf("document %s was written", id)
		}
	}
	// The body's own faults are still the whole request's.
	for _, tc := range []struct{ body, code, field string }{
		{`{"documents":[{"id":"a","text":"x"},{"id":"b","id":"c","text":"y"}]}`, api.CodeDuplicateField, "documents[1].id"},
		{`{"documents":[{"id":"a","text":"x"},{"id":"a","text":"y"}]}`, api.CodeDuplicateID, "documents[1].id"},
		{`{"documents":[{"id":"a","text":"x\ud800"}]}`, api.CodeMalformedJSON, ""},
		{`{"documents":{"id":"a"}}`, "invalid_documents", "documents"},
		{`{"documents":[{"id":"a"}],"upsert":true}`, api.CodeUnknownField, "upsert"},
	} {
		if d := wantError(t, e.do(http.MethodPost, "/v1/documents", tc.body), http.StatusBadRequest, tc.code); d.Field != tc.field {
			t.Errorf("%s: field %q, want %q", tc.body, d.Field, tc.field)
		}
	}
}

// A batch past its size is refused at the first item past the limit,
// before anything is decoded: decoding built every item first (300,000
// documents in an 8 MB body cost 347 MB of allocations and 1.2 s before
// too_many_documents). What follows the item past the limit is not read:
// a duplicate name in it, which a decoder reports, does not change the
// answer, and the offset is that item's byte.
func TestBatchSizeIsCheckedBeforeDecoding(t *testing.T) {
	e := newEnv(t, nil)
	docs := make([]string, testMaxDocs)
	for i := range docs {
		docs[i] = fmt.Sprintf(`{"id":"d%d","text":"x"}`, i)
	}
	head := `{"documents":[` + strings.Join(docs, ",") + `,`
	body := head + `{"id":"a","id":"b"}]}`
	d := wantError(t, e.do(http.MethodPost, "/v1/documents", body), http.StatusBadRequest, api.CodeTooManyDocuments)
	if d.Field != "documents" || d.Offset == nil || *d.Offset != int64(len(head)) {
		t.Fatalf("%+v (offset %v), want documents at byte %d", d, d.Offset, len(head))
	}
	ids := make([]string, testMaxIDs)
	for i := range ids {
		ids[i] = fmt.Sprintf(`"id%d"`, i)
	}
	head = `{"ids":[` + strings.Join(ids, ",") + `,`
	d = wantError(t, e.do(http.MethodPost, "/v1/documents/delete", head+`{"a":1,"a":2}]}`), http.StatusBadRequest, api.CodeTooManyIDs)
	if d.Field != "ids" || d.Offset == nil || *d.Offset != int64(len(head)) {
		t.Fatalf("%+v (offset %v), want ids at byte %d", d, d.Offset, len(head))
	}
	// At the limit, the decoder has its say as before.
	wantError(t, e.do(http.MethodPost, "/v1/documents/delete", `{"ids":["a",{"a":1,"a":2}]}`), http.StatusBadRequest, api.CodeDuplicateField)
}

// A document whose metadata keys, a metadata list's items, entities or
// links pass the write path's count, or that has a member no document
// has, fails alone
// without being decoded: decoding built the whole value before the
// count was looked at (one document of 600,000 metadata keys in a 7 MB
// body cost 357 MB of allocations and 1.7 s before its invalid_metadata;
// 1,200,000 entities 155 MB; a 600,000-key object under an unknown name
// 165 MB). What stands in for it keeps its id, so a repeated id is still
// the batch's duplicate_id, and its unknown member, so the decoder words
// that failure as before. A name twice inside such a document is not
// read, so it fails that document, not the batch (below: the metadata
// repeats "k0", which read the whole body and answered 400
// duplicate_field before).
func TestOversizedDocumentsAreNotDecoded(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.Ingest.MaxDocsPerRequest = 20 })
	lim := ingest.Limits{}.WithDefaults()
	many := func(n int, item func(i int) string) string {
		s := make([]string, n)
		for i := range s {
			s[i] = item(i)
		}
		return strings.Join(s, ",")
	}
	keys := many(lim.MaxMetadataKeys+1, func(i int) string { return fmt.Sprintf(`"k%d":%d`, i, i) })
	docs := []string{
		`{"id":"a","text":"ok"}`,
		`{"id":"b","text":"x","metadata":{` + keys + `,"k0":null}}`,
		`{"id":"c","text":"x","entities":[` + many(lim.MaxEntities+1, func(int) string { return `"e"` }) + `]}`,
		`{"links":[` + many(lim.MaxLinks+1, func(int) string { return `"l"` }) + `],"id":"d","text":"x"}`,
		`{"id":"e","text":"x","zz":{` + keys + `}}`,
		`{"ID":"f","text":"x","metadata":{` + keys + `}}`,
		`7`,
		`{"id":"h","text":"x","metadata":{"a":[1],"l\u00e9":[` + many(lim.MaxMetadataListItems+1, func(i int) string { return "1" }) + `]}}`,
		`{"id":"g","text":"fine","metadata":{` + many(lim.MaxMetadataKeys, func(i int) string { return fmt.Sprintf(`"k%d":%d`, i, i) }) + `}}`,
	}
	resp := decodeAs[api.BatchResponse](t, e.do(http.MethodPost, "/v1/documents", `{"documents":[`+strings.Join(docs, ",")+`]}`), http.StatusMultiStatus)
	want := "a:ok b:failed:invalid_metadata c:failed:invalid_entities d:failed:invalid_links e:failed:unknown_field " +
		"f:failed:unknown_field :failed:invalid_document h:failed:invalid_metadata g:ok"
	if got := statuses(resp.Results); got != want {
		t.Fatalf("results\n got %q\nwant %q", got, want)
	}
	for i, msg := range map[int]string{
		// Members as sent: "k0" twice counts twice.
		1: fmt.Sprintf("metadata has %d keys, at most %d allowed", lim.MaxMetadataKeys+2, lim.MaxMetadataKeys),
		2: fmt.Sprintf("%d entities, at most %d allowed", lim.MaxEntities+1, lim.MaxEntities),
		3: fmt.Sprintf("%d links, at most %d allowed", lim.MaxLinks+1, lim.MaxLinks),
		4: "documents[4].zz: unknown field",
		5: `documents[5].ID: unknown field: field names are case-sensitive (did you mean "id"?)`,
		7: fmt.Sprintf(`metadata list of key "lé" has %d items, at most %d allowed`, lim.MaxMetadataListItems+1, lim.MaxMetadataListItems),
	} {
		if got := resp.Results[i].Error; got != msg {
			t.Errorf("result %d: %q, want %q", i, got, msg)
		}
	}
	for id, want := range map[string]bool{"a": true, "g": true, "b": false, "c": false} {
		if _, ok := e.store.get(id); ok != want {
			t.Errorf("document %s written: %v, want %v", id, ok, want)
		}
	}
	// Text that is not a character anywhere, an oversized document
	// included, still fails the request.
	for _, bad := range []string{"\xff", `\ud800`} {
		body := `{"documents":[{"id":"x","text":"y"},{"id":"z","text":"` + bad + `","metadata":{` + keys + `}}]}`
		wantError(t, e.do(http.MethodPost, "/v1/documents", body), http.StatusBadRequest, api.CodeMalformedJSON)
	}
	// The id of a document that failed on a count still may not repeat.
	body := `{"documents":[{"id":"x","text":"y"},{"id":"x","metadata":{` + keys + `}}]}`
	d := wantError(t, e.do(http.MethodPost, "/v1/documents", body), http.StatusBadRequest, api.CodeDuplicateID)
	if d.Field != "documents[1].id" {
		t.Fatalf("duplicate id at %q, want documents[1].id", d.Field)
	}
}

// The walk that finds oversized documents and what stands in for them
// keep every other document as sent, however the body is laid out:
// random batches, random whitespace between tokens, escaped ids, several
// oversized documents anywhere; each oversized one fails alone and every
// other one is stored with its text.
func TestOversizedDocumentsKeepTheOthers(t *testing.T) {
	lim := ingest.Limits{}.WithDefaults()
	rng := rand.New(rand.NewPCG(29, 3))
	ws := func() string { return []string{"", " ", "\n", "\t ", "\r\n  "}[rng.IntN(5)] }
	for round := range 40 {
		e := newEnv(t, func(c *api.Config) { c.Ingest.MaxDocsPerRequest = 20 })
		n := 1 + rng.IntN(8)
		var parts []string
		want := make([]string, n)
		for i := range n {
			id := fmt.Sprintf("r%d-d%d-\\u00e9", round, i)
			members := []string{`"id"` + ws() + ":" + ws() + `"` + id + `"`, `"text"` + ws() + ":" + ws() + fmt.Sprintf(`"text %d"`, i)}
			want[i] = fmt.Sprintf("r%d-d%d-é:ok", round, i)
			switch rng.IntN(4) {
			case 0: // too many metadata keys
				keys := make([]string, lim.MaxMetadataKeys+1+rng.IntN(3))
				for k := range keys {
					keys[k] = fmt.Sprintf(`"k%d"%s:%s%d`, k, ws(), ws(), k)
				}
				members = append(members, `"metadata":{`+strings.Join(keys, ","+ws())+`}`)
				want[i] = fmt.Sprintf("r%d-d%d-é:failed:invalid_metadata", round, i)
			case 1: // within the bounds
				members = append(members, `"metadata":{"lang":"en","tags":[1,2,3]}`, `"entities":["a","b"]`)
			}
			rng.Shuffle(len(members), func(a, b int) { members[a], members[b] = members[b], members[a] })
			parts = append(parts, "{"+ws()+strings.Join(members, ws()+","+ws())+ws()+"}")
		}
		body := "{" + ws() + `"documents"` + ws() + ":" + ws() + "[" + ws() + strings.Join(parts, ws()+","+ws()) + ws() + "]" + ws() + "}"
		rec := e.do(http.MethodPost, "/v1/documents", body)
		var resp api.BatchResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			t.Fatalf("round %d: %d %s", round, rec.Code, rec.Body)
		}
		if got := statuses(resp.Results); got != strings.Join(want, " ") {
			t.Fatalf("round %d: body %s\n got %q\nwant %q", round, body, got, strings.Join(want, " "))
		}
		for i := range n {
			if !strings.HasSuffix(want[i], ":ok") {
				continue
			}
			d, ok := e.store.get(fmt.Sprintf("r%d-d%d-é", round, i))
			if !ok || d.Text != fmt.Sprintf("text %d", i) {
				t.Fatalf("round %d: document %d stored as %+v (%v)", round, i, d, ok)
			}
		}
	}
}
