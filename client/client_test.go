package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragd/ragd/client"
	"github.com/ragd/ragd/internal/apptest"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

func mustClient(tb testing.TB, cfg client.Config) *client.Client {
	tb.Helper()
	c, err := client.New(cfg)
	if err != nil {
		tb.Fatalf("client.New: %v", err)
	}
	return c
}

var wait = &client.WriteOptions{Wait: 10 * time.Second}

// TestLive drives every call against a real ragd with auth on.
func TestLive(t *testing.T) {
	srv := apptest.Start(t, apptest.WithAuth)
	ctx := context.Background()
	admin := mustClient(t, client.Config{BaseURL: srv.URL, APIKey: apptest.AdminKey})

	docs := []spi.Document{
		{ID: "wing-1", Title: "Wing flutter", Text: "flutter of swept wings at transonic speed"},
		{ID: "heat-1", Title: "Heat transfer", Text: "heat transfer in a laminar boundary layer"},
		{ID: "acme-1", Tenant: apptest.Tenant, Title: "Acme wing", Text: "acme wing flutter report"},
	}
	up, err := admin.Upsert(ctx, docs, wait)
	if err != nil {
		t.Fatalf("Upsert: %v", err)
	}
	if up.Total != 3 || up.OK != 3 || up.Failed != 0 || len(up.Results) != 3 {
		t.Fatalf("Upsert answered %+v, want 3 ok", up)
	}

	res, err := admin.Query(ctx, retriever.Query{Text: "wing flutter", Limit: 5})
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	if len(res.Hits) == 0 || res.Hits[0].ID != "wing-1" {
		t.Fatalf("Query hits = %+v, want wing-1 first", res.Hits)
	}
	if res.Partial {
		t.Errorf("Query partial with every source up: %+v", res.Sources)
	}

	d, err := admin.Document(ctx, "heat-1")
	if err != nil || d.Title != "Heat transfer" {
		t.Fatalf("Document(heat-1) = %+v, %v", d, err)
	}

	// Typed metadata and the filter language, end to end (issue 30): a
	// loader's page numbers and dates are stored typed, read back typed,
	// and range filters select on them in every source.
	pub := func(day int) spi.Value { return spi.MustTime(time.Date(2024, 5, day, 12, 0, 0, 0, time.UTC)) }
	typed := []spi.Document{
		{ID: "page-3", Title: "Flutter page 3", Text: "flutter page three", Metadata: spi.Metadata{"page": spi.Int(3), "published": pub(1), "tags": spi.List(spi.String("a"), spi.Int(7))}},
		{ID: "page-9", Title: "Flutter page 9", Text: "flutter page nine", Metadata: spi.Metadata{"page": spi.Float(9), "published": pub(20), "draft": spi.Bool(true)}},
		{ID: "page-s", Title: "Flutter page s", Text: "flutter page string", Metadata: spi.Metadata{"page": spi.String("3")}},
	}
	if up, err := admin.Upsert(ctx, typed, wait); err != nil || up.OK != 3 {
		t.Fatalf("Upsert typed = %+v, %v", up, err)
	}
	if d, err := admin.Document(ctx, "page-3"); err != nil || !d.Metadata.Equal(typed[0].Metadata) {
		t.Fatalf("Document(page-3) metadata = %v, %v; want %v", d.Metadata, err, typed[0].Metadata)
	}
	for _, c := range []struct {
		filter spi.Filter
		want   []string
	}{
		{spi.Gte("page", spi.Int(3)), []string{"page-3", "page-9"}},
		{spi.And(spi.Gt("page", spi.Float(3.5)), spi.Lt("published", pub(30))), []string{"page-9"}},
		{spi.Eq("page", spi.String("3")), []string{"page-s"}},
		{spi.Eq("tags", spi.Int(7)), []string{"page-3"}},
		{spi.And(spi.Exists("page"), spi.Not(spi.Exists("draft"))), []string{"page-3", "page-s"}},
		{spi.Or(spi.Eq("draft", spi.Bool(true)), spi.Lt("published", pub(2))), []string{"page-3", "page-9"}},
	} {
		res, err := admin.Query(ctx, retriever.Query{Text: "flutter page", Limit: 10, Filter: c.filter})
		if err != nil {
			t.Fatalf("Query with filter %v: %v", c.filter.Keys(), err)
		}
		var got []string
		for _, h := range res.Hits {
			got = append(got, h.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) || res.Partial {
			raw, _ := json.Marshal(c.filter)
			t.Fatalf("Query with filter %s = %v (partial %v, sources %+v), want %v", raw, got, res.Partial, res.Sources, c.want)
		}
	}
	if _, err := admin.Delete(ctx, []string{"page-3", "page-9", "page-s"}, wait); err != nil {
		t.Fatal(err)
	}

	// The tenant's key sees its tenant only: another tenant's document is
	// not found, and naming another tenant in a query is forbidden.
	acme := mustClient(t, client.Config{BaseURL: srv.URL, APIKey: apptest.TenantKey})
	if _, err := acme.Document(ctx, "heat-1"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("tenant key reading an untenanted document: err = %v, want ErrNotFound", err)
	}
	_, err = acme.Query(ctx, retriever.Query{Text: "wing", Tenant: "other"})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Code() != "tenant_forbidden" || !errors.Is(err, client.ErrForbidden) {
		t.Fatalf("query naming another tenant: err = %v, want 403 tenant_forbidden", err)
	}
	if apiErr.RequestID() == "" {
		t.Errorf("error without request id: %v", apiErr)
	}
	res, err = acme.Query(ctx, retriever.Query{Text: "wing flutter", Limit: 5})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].ID != "acme-1" {
		t.Fatalf("tenant query = %+v, %v; want acme-1 only", res, err)
	}

	// A query key may not write: 403, never retried.
	reader := mustClient(t, client.Config{BaseURL: srv.URL, APIKey: apptest.QueryKey})
	if _, err := reader.Upsert(ctx, docs[:1], nil); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("query key upsert: err = %v, want ErrForbidden", err)
	}
	bad := mustClient(t, client.Config{BaseURL: srv.URL, APIKey: "wrong"})
	if _, err := bad.Health(ctx); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("unknown key: err = %v, want ErrUnauthorized", err)
	}

	// A dead source: the answer is partial and says which and why.
	if _, err := admin.ForceOpen(ctx, "keyword"); err != nil {
		t.Fatalf("ForceOpen: %v", err)
	}
	res, err = admin.Query(ctx, retriever.Query{Text: "wing flutter", Limit: 5})
	if err != nil {
		t.Fatalf("Query with keyword open: %v", err)
	}
	if !res.Partial || res.Sources["keyword"].Status != retriever.StatusCircuitOpen || len(res.Hits) == 0 {
		t.Errorf("Query with keyword open: partial=%v keyword=%+v hits=%d; want a partial answer with hits",
			res.Partial, res.Sources["keyword"], len(res.Hits))
	}
	br, err := admin.Breakers(ctx)
	if err != nil || br.Total == 0 {
		t.Fatalf("Breakers = %+v, %v", br, err)
	}
	h, err := admin.Health(ctx)
	if err != nil || h.Components["keyword"].Status == spi.StatusUp {
		t.Errorf("Health with keyword forced open = %+v, %v; want keyword not up", h, err)
	}
	if _, err := admin.ForceClose(ctx, "keyword"); err != nil {
		t.Fatalf("ForceClose: %v", err)
	}
	if _, err := admin.ForceOpen(ctx, "no-such-breaker"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("ForceOpen of an unknown breaker: err = %v, want ErrNotFound", err)
	}
	ev, err := admin.Events(ctx, 0, 100)
	if err != nil || len(ev.Events) == 0 {
		t.Errorf("Events = %+v, %v; want the forced transitions", ev, err)
	}
	if _, err := admin.Sources(ctx); err != nil {
		t.Errorf("Sources: %v", err)
	}
	if _, ready, err := admin.Ready(ctx); err != nil || !ready {
		t.Errorf("Ready = %v, %v", ready, err)
	}
	rep, err := admin.Check(ctx, false)
	if err != nil || len(rep.Stores) == 0 {
		t.Errorf("Check = %+v, %v", rep, err)
	}

	del, err := admin.Delete(ctx, []string{"wing-1", "never-was"}, wait)
	if err != nil || del.OK != 1 || del.NotFound != 1 {
		t.Fatalf("Delete = %+v, %v; want one deleted, one not found", del, err)
	}
	if _, err := admin.DeleteDocument(ctx, "heat-1", wait); err != nil {
		t.Fatalf("DeleteDocument: %v", err)
	}
	if _, err := admin.DeleteDocument(ctx, "heat-1", nil); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("DeleteDocument of a deleted id: err = %v, want ErrNotFound", err)
	}
}

// TestIDsInPaths: an id reaches the server exactly as given, whatever
// characters it holds (escaped once by the client, decoded once by ragd).
func TestIDsInPaths(t *testing.T) {
	srv := apptest.Start(t, nil)
	ctx := context.Background()
	c := mustClient(t, client.Config{BaseURL: srv.URL})
	ids := []string{"plain", "x/y", "a b", "ü-é", "q?x=1", "h#frag", "semi;colon", "plus+sign", "invoice%41", "50%off", "x%2Fy"}
	for _, id := range ids {
		if _, err := c.Upsert(ctx, []spi.Document{{ID: id, Text: "body of " + id}}, nil); err != nil {
			t.Fatalf("Upsert(%q): %v", id, err)
		}
	}
	for _, id := range ids {
		d, err := c.Document(ctx, id)
		if err != nil || d.ID != id {
			t.Errorf("Document(%q) = %+v, %v", id, d, err)
		}
	}
	// Deleting one id leaves every other, however alike they look.
	if _, err := c.DeleteDocument(ctx, "invoice%41", nil); err != nil {
		t.Fatalf("DeleteDocument(invoice%%41): %v", err)
	}
	for _, id := range ids {
		_, err := c.Document(ctx, id)
		if gone := errors.Is(err, client.ErrNotFound); gone != (id == "invoice%41") {
			t.Errorf("after deleting invoice%%41: Document(%q) err = %v", id, err)
		}
	}
}

// script is a fake ragd answering each request with the next status of a
// script (fault injection for the retry policy), counting requests.
type script struct {
	statuses   []int
	retryAfter []string
	calls      atomic.Int32
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := int(s.calls.Add(1)) - 1
	st := s.statuses[min(i, len(s.statuses)-1)]
	if i < len(s.retryAfter) && s.retryAfter[i] != "" {
		w.Header().Set("Retry-After", s.retryAfter[i])
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(st)
	if st >= 400 {
		w.Write([]byte(`{"error":{"code":"code_` + strconv.Itoa(st) + `","message":"scripted","request_id":"rid-` + strconv.Itoa(i) + `"}}`))
		return
	}
	w.Write([]byte(`{"hits":[],"sources":{},"partial":false,"degraded":false,"fusion":{"mode":"rrf","window":10,"weights":{}},"missing":[],"took_ms":1,"total":0,"offset":0,"limit":10}`))
}

// sleeps records the waits the client asked for, without waiting.
type sleeps struct{ got []time.Duration }

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.got = append(s.got, d)
	return ctx.Err()
}

func TestRetryPolicy(t *testing.T) {
	q := retriever.Query{Text: "x"}
	half := func() float64 { return 0.5 }
	tests := []struct {
		name       string
		statuses   []int
		retryAfter []string
		maxRetries int
		wantCalls  int
		wantErr    int // status of the returned *Error, 0 for success
		wantSleeps []time.Duration
	}{
		{name: "503 with Retry-After then ok", statuses: []int{503, 200}, retryAfter: []string{"2"},
			wantCalls: 2, wantSleeps: []time.Duration{2 * time.Second}},
		{name: "429 backs off with jitter, doubling", statuses: []int{429, 429, 200},
			wantCalls: 3, wantSleeps: []time.Duration{187500 * time.Microsecond, 375 * time.Millisecond}},
		{name: "400 never retried", statuses: []int{400, 200}, wantCalls: 1, wantErr: 400},
		{name: "404 never retried", statuses: []int{404, 200}, wantCalls: 1, wantErr: 404},
		{name: "500 not retried", statuses: []int{500, 200}, wantCalls: 1, wantErr: 500},
		{name: "Retry-After above the bound fails at once", statuses: []int{503, 200}, retryAfter: []string{"120"},
			wantCalls: 1, wantErr: 503},
		// Issue 29 item 8: a Retry-After past a million seconds is a wait
		// no client takes, not a missing header to back off 250 ms from.
		{name: "Retry-After above a million seconds fails at once", statuses: []int{503, 200}, retryAfter: []string{"2000000"},
			wantCalls: 1, wantErr: 503},
		{name: "Retry-After of 10^30 seconds fails at once", statuses: []int{429, 200}, retryAfter: []string{"1000000000000000000000000000000"},
			wantCalls: 1, wantErr: 429},
		{name: "malformed Retry-After backs off", statuses: []int{503, 200}, retryAfter: []string{"soon"},
			wantCalls: 2, wantSleeps: []time.Duration{187500 * time.Microsecond}},
		{name: "retries run out", statuses: []int{503}, maxRetries: 2, wantCalls: 3, wantErr: 503,
			wantSleeps: []time.Duration{187500 * time.Microsecond, 375 * time.Millisecond}},
		{name: "no retries", statuses: []int{503, 200}, maxRetries: -1, wantCalls: 1, wantErr: 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{statuses: tt.statuses, retryAfter: tt.retryAfter}
			srv := httptest.NewServer(s)
			defer srv.Close()
			sl := &sleeps{}
			c := mustClient(t, client.Config{BaseURL: srv.URL, MaxRetries: tt.maxRetries, Sleep: sl.sleep, Jitter: half})
			_, err := c.Query(context.Background(), q)
			if got := int(s.calls.Load()); got != tt.wantCalls {
				t.Errorf("requests = %d, want %d", got, tt.wantCalls)
			}
			var e *client.Error
			switch {
			case tt.wantErr == 0 && err != nil:
				t.Fatalf("err = %v, want success", err)
			case tt.wantErr != 0 && (!errors.As(err, &e) || e.StatusCode != tt.wantErr):
				t.Fatalf("err = %v, want an *Error with status %d", err, tt.wantErr)
			case tt.wantErr != 0 && (e.Code() != "code_"+strconv.Itoa(tt.wantErr) || e.RequestID() == ""):
				t.Errorf("error lost the API's code or request id: %+v", e.Detail)
			}
			if len(sl.got) != len(tt.wantSleeps) {
				t.Fatalf("waits = %v, want %v", sl.got, tt.wantSleeps)
			}
			for i := range sl.got {
				if sl.got[i] != tt.wantSleeps[i] {
					t.Errorf("wait %d = %v, want %v", i, sl.got[i], tt.wantSleeps[i])
				}
			}
		})
	}
}

func TestTransportErrorsRetriedThenReported(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	sl := &sleeps{}
	c := mustClient(t, client.Config{BaseURL: url, MaxRetries: 2, Sleep: sl.sleep})
	_, err := c.Health(context.Background())
	var te *client.TransportError
	if !errors.As(err, &te) || !client.ConnRefused(err) {
		t.Fatalf("err = %v, want a refused *TransportError", err)
	}
	if len(sl.got) != 2 {
		t.Errorf("waits = %v, want 2 retries", sl.got)
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	s := &script{statuses: []int{503}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	c := mustClient(t, client.Config{BaseURL: srv.URL, Sleep: func(ctx context.Context, _ time.Duration) error {
		cancel() // the caller gives up while the client waits to retry
		<-ctx.Done()
		return ctx.Err()
	}})
	_, err := c.Query(ctx, retriever.Query{Text: "x"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := s.calls.Load(); n != 1 {
		t.Errorf("requests = %d, want 1 (no retry after cancel)", n)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, base := range []string{"ftp://x", "http://", "http://h/?q=1", "::"} {
		if _, err := client.New(client.Config{BaseURL: base}); err == nil {
			t.Errorf("New(%q) accepted", base)
		}
	}
	if _, err := client.New(client.Config{Timeout: -time.Second}); err == nil {
		t.Error("New accepted a negative timeout")
	}
	c, err := client.New(client.Config{BaseURL: "127.0.0.1:9/prefix/"})
	if err != nil || c.BaseURL() != "http://127.0.0.1:9/prefix" {
		t.Errorf("New(host:port/prefix/) = %v, %v", c, err)
	}
}

// TestHold: a maintenance hold through the client names the key and the
// reason, survives its cooldown, and ForceClose releases it; a query key
// may not place one.
func TestHold(t *testing.T) {
	srv := apptest.Start(t, apptest.WithAuth)
	ctx := context.Background()
	admin := mustClient(t, client.Config{BaseURL: srv.URL, APIKey: apptest.AdminKey})
	r, err := admin.Hold(ctx, "graph", "neo4j upgrade")
	if err != nil || !r.Held || r.Breaker.Hold == nil || r.Breaker.Hold.Reason != "neo4j upgrade" || r.Breaker.Hold.By == "" {
		t.Fatalf("Hold = %+v, %v", r, err)
	}
	if r, err = admin.Hold(ctx, "graph", ""); err != nil || r.Breaker.Hold == nil || r.Breaker.Hold.Reason != "" {
		t.Fatalf("Hold without a reason = %+v, %v", r, err)
	}
	fc, err := admin.ForceClose(ctx, "graph")
	if err != nil || fc.Breaker.Hold != nil || fc.Breaker.State.String() != "closed" {
		t.Fatalf("ForceClose = %+v, %v", fc, err)
	}
	if _, err := admin.Hold(ctx, "no-such-breaker", ""); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("Hold of an unknown breaker: %v, want ErrNotFound", err)
	}
	q := mustClient(t, client.Config{BaseURL: srv.URL, APIKey: apptest.QueryKey})
	if _, err := q.Hold(ctx, "graph", ""); err == nil {
		t.Error("a query key placed a hold")
	}
}
