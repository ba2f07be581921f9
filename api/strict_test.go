package api_test

import (
	"net/http"
	"testing"

	"github.com/ragd/ragd/api"
)

// Request decoding is case-sensitive and refuses a name twice in one
// object, at every depth and in maps (issue 18, item 17: {"Text":"x"} was
// accepted, and {"text":"a","text":"b"} kept "b").
func TestDecodingIsCaseSensitiveAndRefusesDuplicates(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct {
		name, path, body, code, field string
	}{
		{"query field in another case", "/v1/query", `{"Text":"x"}`, api.CodeUnknownField, "Text"},
		{"nested field in another case", "/v1/query", `{"text":"x","sources":{"keyword":{"Weight":2}}}`, api.CodeUnknownField, "sources.keyword.Weight"},
		{"escaped name in another case", "/v1/query", `{"\u0054ext":"x"}`, api.CodeUnknownField, "Text"},
		{"Kelvin sign folds to k", "/v1/query", "{\"text\":\"x\",\"fusion\":{\"\u212a\":3}}", api.CodeUnknownField, "fusion.\u212a"},
		{"top-level name in another case", "/v1/documents", `{"Documents":[{"id":"a","text":"x"}]}`, api.CodeUnknownField, "Documents"},
		{"duplicate top-level name", "/v1/query", `{"text":"a","text":"b"}`, api.CodeDuplicateField, "text"},
		{"duplicate by escape", "/v1/query", `{"text":"a","\u0074ext":"b"}`, api.CodeDuplicateField, "text"},
		{"duplicate nested name", "/v1/query", `{"text":"a","sources":{"vector":{"k":1,"k":2}}}`, api.CodeDuplicateField, "sources.vector.k"},
		{"duplicate map key", "/v1/query", `{"text":"a","filter":{"lang":["en"],"lang":["fr"]}}`, api.CodeDuplicateField, "filter.lang"},
		{"duplicate source", "/v1/query", `{"text":"a","sources":{"vector":{},"vector":{"enabled":false}}}`, api.CodeDuplicateField, "sources.vector"},
		{"duplicate document field", "/v1/documents", `{"documents":[{"id":"a","text":"x"},{"id":"b","id":"c","text":"y"}]}`, api.CodeDuplicateField, "documents[1].id"},
		{"duplicate metadata key", "/v1/documents", `{"documents":[{"id":"a","text":"x","metadata":{"k":"1","k":"2"}}]}`, api.CodeDuplicateField, "documents[0].metadata.k"},
		{"duplicate numeric metadata key", "/v1/documents", `{"documents":[{"id":"a","text":"x","metadata":{"0":"1","0":"2"}}]}`, api.CodeDuplicateField, "documents[0].metadata.0"},
		{"duplicate ids key", "/v1/documents/delete", `{"ids":["a"],"ids":["b"]}`, api.CodeDuplicateField, "ids"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := wantError(t, e.do(http.MethodPost, tc.path, tc.body), http.StatusBadRequest, tc.code)
			if d.Field != tc.field {
				t.Fatalf("field %q, want %q (%s)", d.Field, tc.field, d.Message)
			}
		})
	}
	if n := len(e.searcher.calls()) + len(e.writer.upsertCalls()) + len(e.writer.deleteCalls()); n != 0 {
		t.Fatalf("%d requests reached the searcher or the writer", n)
	}
	// Exact names at every depth still decode, and unknown fields and
	// syntax errors are reported as before.
	for _, body := range []string{
		`{"text":"a","sources":{"keyword":{"weight":2,"k":5}},"fusion":{"mode":"rrf","k":60},"filter":{"lang":["en"],"Lang":["fr"]}}`,
		`{"vector":[1,2,3,4],"expand":{"enabled":true,"hops":2}}`,
	} {
		if rec := e.do(http.MethodPost, "/v1/query", body); rec.Code != http.StatusOK {
			t.Errorf("%s: %d %s", body, rec.Code, rec.Body)
		}
	}
	wantError(t, e.do(http.MethodPost, "/v1/query", `{"txt":"a"}`), http.StatusBadRequest, api.CodeUnknownField)
	wantError(t, e.do(http.MethodPost, "/v1/query", `{"text":"a",}`), http.StatusBadRequest, api.CodeMalformedJSON)
	wantError(t, e.do(http.MethodPost, "/v1/query", `{"text":"a"`), http.StatusBadRequest, api.CodeMalformedJSON)
}
