package api_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/internal/faults"
	"github.com/ragd/ragd/spi"
)

// Ids in paths are percent-decoded exactly once (issue 18, item 5): the
// URL built with url.PathEscape(id) addresses the document id, whatever
// escapes id itself contains.
func TestPathIDDecodedExactlyOnce(t *testing.T) {
	e := newEnv(t, nil)
	for _, id := range []string{"invoiceA", "invoice%41", "50%off", "x/y", "x%2Fy", "a+b", "a b"} {
		e.store.docs[id] = spi.Document{ID: id, Text: "text of " + id}
	}
	for _, tc := range []struct{ path, id string }{
		{"/v1/documents/invoice%2541", "invoice%41"},
		{"/v1/documents/invoiceA", "invoiceA"},
		{"/v1/documents/50%25off", "50%off"},
		{"/v1/documents/x%252Fy", "x%2Fy"},
		{"/v1/documents/x%2Fy", "x/y"},
		{"/v1/documents/x%2fy", "x/y"},
		{"/v1/documents/a+b", "a+b"},
		{"/v1/documents/a%20b", "a b"},
	} {
		d := decodeAs[spi.Document](t, e.do(http.MethodGet, tc.path, nil), http.StatusOK)
		if d.ID != tc.id {
			t.Errorf("GET %s: document %q, want %q", tc.path, d.ID, tc.id)
		}
	}
	// The probe's case: deleting invoice%41 must leave invoiceA alone.
	r := decodeAs[ingest.Result](t, e.do(http.MethodDelete, "/v1/documents/invoice%2541", nil), http.StatusOK)
	if r.ID != "invoice%41" {
		t.Fatalf("DELETE invoice%%2541 deleted %q", r.ID)
	}
	if _, ok := e.store.get("invoiceA"); !ok {
		t.Fatal("DELETE /v1/documents/invoice%2541 deleted invoiceA")
	}
	if _, ok := e.store.get("invoice%41"); ok {
		t.Fatal("invoice%41 is still stored")
	}
	decodeAs[ingest.Result](t, e.do(http.MethodDelete, "/v1/documents/50%25off", nil), http.StatusOK)
	if _, ok := e.store.get("50%off"); ok {
		t.Fatalf("%q is still stored", "50%off")
	}
}

// idAlphabet favours what breaks decoding: escapes, separators, reserved
// and non-ASCII characters.
var idAlphabet = []string{
	"%", "2", "5", "F", "f", "4", "1", "/", "a", "Z", "0", " ", "+", "?", "#", "&", "=", ";", ":", "@",
	".", "..", "~", "!", "$", "'", "(", ")", "*", ",", "[", "]", "\\", "é", "中", "😀", "\u00a0",
}

func randomID(r *rand.Rand) string {
	var b strings.Builder
	for n := 1 + r.IntN(12); n > 0; n-- {
		b.WriteString(idAlphabet[r.IntN(len(idAlphabet))])
	}
	return b.String()
}

// recordingStore answers every Hydrate with the ids it was asked for, and
// remembers them.
func recordingStore(e *env) func() []string {
	var mu sync.Mutex
	var asked []string
	e.store.HydrateFn = func(_ context.Context, ids []string) ([]spi.Document, []string, error) {
		mu.Lock()
		asked = append(asked, ids...)
		mu.Unlock()
		docs := make([]spi.Document, len(ids))
		for i, id := range ids {
			docs[i] = spi.Document{ID: id, Text: "x"}
		}
		return docs, nil, nil
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := asked
		asked = nil
		return out
	}
}

// Property: for any id, GET and DELETE of "/v1/documents/" +
// url.PathEscape(id) reach the record store with exactly id, through the
// real echo router.
func TestPathIDRoundTripsProperty(t *testing.T) {
	e := newEnv(t, nil)
	asked := recordingStore(e)
	var mu sync.Mutex
	var deleted []string
	e.writer.DeleteFn = func(_ context.Context, ids []string) []ingest.Result {
		mu.Lock()
		deleted = append(deleted, ids...)
		mu.Unlock()
		return []ingest.Result{{ID: ids[0], Status: ingest.StatusOK}}
	}
	r := rand.New(rand.NewPCG(18, 5))
	for range 3000 {
		id := randomID(r)
		path := "/v1/documents/" + url.PathEscape(id)
		rec := e.do(http.MethodGet, path, nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s (id %q): %d %s", path, id, rec.Code, rec.Body)
		}
		if got := asked(); !slices.Equal(got, []string{id}) {
			t.Fatalf("GET %s: the store was asked for %q, want %q", path, got, id)
		}
		rec = e.do(http.MethodDelete, path, nil)
		mu.Lock()
		got := deleted
		deleted = nil
		mu.Unlock()
		if rec.Code != http.StatusOK || !slices.Equal(got, []string{id}) {
			t.Fatalf("DELETE %s: %d, deleted %q, want %q", path, rec.Code, got, id)
		}
	}
}

// Breaker names and fault sources are path parameters too: decoded once.
func TestPathNamesDecodedExactlyOnce(t *testing.T) {
	var forced []string
	snap := func(name string) (breaker.Snapshot, error) {
		forced = append(forced, name)
		return breaker.Snapshot{Name: name}, nil
	}
	in := faults.New()
	e := newEnv(t, func(c *api.Config) {
		c.Breakers = &fakeBreakers{ForceCloseFn: snap, ForceOpenFn: snap}
		c.Faults = in
	})
	for _, tc := range []struct{ path, name string }{
		{"/v1/status/breakers/a%2Fb/force-close", "a/b"},
		{"/v1/status/breakers/a%2541/force-open", "a%41"},
		{"/v1/status/breakers/gr%61ph/force-close", "graph"},
	} {
		forced = nil
		rec := e.do(http.MethodPost, tc.path, nil)
		if rec.Code != http.StatusOK || !slices.Equal(forced, []string{tc.name}) {
			t.Errorf("POST %s: %d, breaker %q, want %q: %s", tc.path, rec.Code, forced, tc.name, rec.Body)
		}
	}
	if rec := e.do(http.MethodPut, "/debug/faults/gr%61ph", `{"fail":true}`); rec.Code != http.StatusOK {
		t.Fatalf("PUT /debug/faults/gr%%61ph: %d %s", rec.Code, rec.Body)
	}
	if _, ok := in.List()["graph"]; !ok {
		t.Fatalf("faults %v, want graph set", in.List())
	}
}
