package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/spi"
)

// Tenants and ids follow one rule, spi.ValidateName, everywhere a request
// introduces one (issue 18, item 18: a query's tenant was not validated
// at all, NUL or 10 KB answered 200, and ids could hold U+200B or U+202E,
// or be the NFD spelling of another id).
func TestTenantAndIDNameRule(t *testing.T) {
	e := newEnv(t, nil)
	for _, tenant := range []string{"ac\x00me", strings.Repeat("t", 10<<10), "ac\u200bme", "\u202eemca", "acme\u00a0", "cafe\u0301"} {
		d := wantError(t, e.do(http.MethodPost, "/v1/query", map[string]any{"text": "a", "tenant": tenant}), http.StatusBadRequest, "invalid_tenant")
		if d.Field != "tenant" || strings.Contains(d.Message, tenant) {
			t.Errorf("tenant %q: field %q message %q", tenant, d.Field, d.Message)
		}
	}
	if n := len(e.searcher.calls()); n != 0 {
		t.Fatalf("%d queries with a bad tenant reached the searcher", n)
	}
	decodeAs[map[string]any](t, e.do(http.MethodPost, "/v1/query", `{"text":"a","tenant":"caf\u00e9"}`), http.StatusOK)

	docs := []spi.Document{
		{ID: "a\u200bb", Text: "x"},
		{ID: "\u202egnp.exe", Text: "x"},
		{ID: "cafe\u0301", Text: "x"},
		{ID: "ok-1", Tenant: "ac\u2066me", Text: "x"},
		{ID: "ok-2", Text: "x", Links: []string{"b\ufeff"}},
		{ID: "caf\u00e9", Text: "x"},
	}
	res := decodeAs[api.BatchResponse](t, e.do(http.MethodPost, "/v1/documents", map[string]any{"documents": docs}), http.StatusMultiStatus)
	want := "a\u200bb:failed:invalid_id \u202egnp.exe:failed:invalid_id cafe\u0301:failed:invalid_id " +
		"ok-1:failed:invalid_tenant ok-2:failed:invalid_links caf\u00e9:ok"
	if got := statuses(res.Results); got != want {
		t.Fatalf("statuses\n%q, want\n%q", got, want)
	}
	for _, r := range res.Results[:5] {
		if !strings.Contains(r.Error, "U+") && !strings.Contains(r.Error, "NFC") {
			t.Errorf("%q: message %q does not say which character or form", r.ID, r.Error)
		}
	}

	// A document stored under the earlier rule can still be read and
	// deleted, by path and in a batch.
	for _, id := range []string{"old\u200bid", "old\u202eid"} {
		e.store.docs[id] = spi.Document{ID: id, Text: "legacy"}
	}
	path := "/v1/documents/old%E2%80%8Bid"
	if d := decodeAs[spi.Document](t, e.do(http.MethodGet, path, nil), http.StatusOK); d.ID != "old\u200bid" {
		t.Fatalf("GET legacy id: %+v", d)
	}
	decodeAs[ingest.Result](t, e.do(http.MethodDelete, path, nil), http.StatusOK)
	del := decodeAs[api.BatchResponse](t, e.do(http.MethodPost, "/v1/documents/delete", map[string]any{"ids": []string{"old\u202eid"}}), http.StatusOK)
	if del.OK != 1 || len(e.store.docs) != 1 {
		t.Fatalf("batch delete of a legacy id: %+v, store %v", del, e.store.docs)
	}
	// Control characters stay refused everywhere.
	wantError(t, e.do(http.MethodGet, "/v1/documents/a%00b", nil), http.StatusBadRequest, api.CodeInvalidID)
	wantError(t, e.do(http.MethodPost, "/v1/documents/delete", `{"ids":["a\u0000b"]}`), http.StatusBadRequest, api.CodeInvalidID)
}
