package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/internal/faults"
)

// /debug/faults sets, lists and clears injected faults for admins only,
// and answers bad input with the JSON error shape.
func TestDebugFaults(t *testing.T) {
	in := faults.New()
	e := newEnv(t, func(c *api.Config) { c.Faults = in })
	if rec := e.do(http.MethodPut, "/debug/faults/graph", `{"hang":true}`, "Authorization", "Bearer "+queryKey); rec.Code != http.StatusForbidden {
		t.Fatalf("query key: %d %s", rec.Code, rec.Body)
	}
	rec := e.do(http.MethodPut, "/debug/faults/graph", `{"hang":true}`, "Authorization", "Bearer "+adminKey)
	if rec.Code != http.StatusOK || !in.List()["graph"].Hang {
		t.Fatalf("PUT: %d %s, faults %v", rec.Code, rec.Body, in.List())
	}
	var listed map[string]faults.Fault
	rec = e.do(http.MethodGet, "/debug/faults", nil, "Authorization", "Bearer "+adminKey)
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &listed) != nil || !listed["graph"].Hang {
		t.Fatalf("GET: %d %s", rec.Code, rec.Body)
	}
	for _, bad := range []struct{ path, body string }{
		{"/debug/faults/nope", `{"fail":true}`},
		{"/debug/faults/graph", `{"delay_ms":-1}`},
		{"/debug/faults/graph", `{"hang":"yes"}`},
	} {
		rec := e.do(http.MethodPut, bad.path, bad.body, "Authorization", "Bearer "+adminKey)
		if rec.Code != http.StatusBadRequest || !json.Valid(rec.Body.Bytes()) {
			t.Errorf("PUT %s %s: %d %s, want a JSON 400", bad.path, bad.body, rec.Code, rec.Body)
		}
	}
	if rec := e.do(http.MethodDelete, "/debug/faults/graph", nil, "Authorization", "Bearer "+adminKey); rec.Code != http.StatusOK || len(in.List()) != 0 {
		t.Fatalf("DELETE: %d %s, faults %v", rec.Code, rec.Body, in.List())
	}
}

// TestServerSaysFaultInjectionIsOn is issue 29 item 8: GET
// /v1/status/server says when fault injection is served, so that the
// console can show it on every page; it says nothing otherwise.
func TestServerSaysFaultInjectionIsOn(t *testing.T) {
	for _, on := range []bool{false, true} {
		e := newEnv(t, func(c *api.Config) {
			if on {
				c.Faults = faults.New()
			}
		})
		rec := e.do(http.MethodGet, "/v1/status/server", nil, "Authorization", "Bearer "+queryKey)
		var body map[string]any
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &body) != nil {
			t.Fatalf("GET /v1/status/server: %d %s", rec.Code, rec.Body)
		}
		if got, _ := body["debug_faults"].(bool); got != on {
			t.Errorf("fault injection %v: debug_faults %v in %s", on, body["debug_faults"], rec.Body)
		}
	}
}
