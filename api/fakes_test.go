package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/internal/syncbuf"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// Keys of the test configuration.
const (
	queryKey       = "query-key-0123456789"
	adminKey       = "admin-key-0123456789"
	acmeQueryKey   = "acme-query-key-0123456"
	acmeAdminKey   = "acme-admin-key-0123456"
	testDimension  = 4
	testMaxDocs    = 8
	testMaxIDs     = 5
	testMaxText    = 1000
	testBodyLimit  = 64 << 10
	testMaxInFight = 8
)

// fakeSearcher answers queries with RetrieveFn, or a one-hit result.
type fakeSearcher struct {
	mu         sync.Mutex
	queries    []retriever.Query
	RetrieveFn func(ctx context.Context, q retriever.Query) (*retriever.Result, error)
	LimitsFn   func() retriever.Limits
}

// Retrieve validates q as the HybridRetriever does (bad input never gets
// further), then records it.
func (f *fakeSearcher) Retrieve(ctx context.Context, q retriever.Query) (*retriever.Result, error) {
	if err := q.Validate(f.Limits()); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.queries = append(f.queries, q)
	f.mu.Unlock()
	if f.RetrieveFn != nil {
		return f.RetrieveFn(ctx, q)
	}
	return &retriever.Result{
		Hits: []retriever.Hit{{ID: "doc-1", Rank: 1, Score: 0.5, Document: &spi.Document{ID: "doc-1", Title: "t"}}},
		Sources: map[string]retriever.SourceStatus{
			spi.SourceVector:  {Status: retriever.StatusOK, Returned: 1},
			spi.SourceKeyword: {Status: retriever.StatusOK, Returned: 1},
		},
		Missing: []string{}, Total: 1, Limit: 10,
	}, nil
}

func (f *fakeSearcher) Limits() retriever.Limits {
	if f.LimitsFn != nil {
		return f.LimitsFn()
	}
	l := retriever.DefaultLimits()
	l.VectorDimension = testDimension
	return l
}

func (f *fakeSearcher) calls() []retriever.Query {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.queries)
}

// fakeStore is an in-memory system of record.
type fakeStore struct {
	mu        sync.Mutex
	docs      map[string]spi.Document
	HydrateFn func(ctx context.Context, ids []string) ([]spi.Document, []string, error)
}

func newFakeStore(docs ...spi.Document) *fakeStore {
	s := &fakeStore{docs: map[string]spi.Document{}}
	for _, d := range docs {
		s.docs[d.ID] = d
	}
	return s
}

func (s *fakeStore) Hydrate(ctx context.Context, ids []string) ([]spi.Document, []string, error) {
	if s.HydrateFn != nil {
		return s.HydrateFn(ctx, ids)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var found []spi.Document
	var missing []string
	for _, id := range ids {
		if d, ok := s.docs[id]; ok {
			found = append(found, d)
		} else {
			missing = append(missing, id)
		}
	}
	return found, missing, nil
}

func (s *fakeStore) get(id string) (spi.Document, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.docs[id]
	return d, ok
}

// Upsert and Delete make fakeStore a record store for the real write
// path (a keyword-only deployment: no change log).
func (s *fakeStore) Upsert(_ context.Context, docs []spi.Document) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range docs {
		s.docs[d.ID] = d
	}
	return nil
}

func (s *fakeStore) Delete(_ context.Context, ids []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.docs, id)
	}
	return nil
}

// fakeWriter is the real write path (ingest.Pipeline) over a fakeStore,
// unless UpsertFn / DeleteFn / StatusFn / CheckFn say otherwise; it
// records what it was asked.
type fakeWriter struct {
	p        *ingest.Pipeline
	mu       sync.Mutex
	upserts  [][]spi.Document
	deletes  [][]string
	opts     []ingest.WriteOptions
	UpsertFn func(ctx context.Context, docs []spi.Document) []ingest.Result
	DeleteFn func(ctx context.Context, ids []string) []ingest.Result
	StatusFn func(ctx context.Context) (ingest.LogStatus, error)
	CheckFn  func(ctx context.Context, repair bool) (ingest.CheckReport, error)
}

func newFakeWriter(t testing.TB, store *fakeStore) *fakeWriter {
	p, err := ingest.New(ingest.Config{Record: store, Dimension: testDimension, Limits: ingest.Limits{MaxTextBytes: testMaxText}})
	if err != nil {
		t.Fatal(err)
	}
	return &fakeWriter{p: p}
}

func (w *fakeWriter) Upsert(ctx context.Context, docs []spi.Document, opts ingest.WriteOptions) []ingest.Result {
	w.mu.Lock()
	w.upserts = append(w.upserts, slices.Clone(docs))
	w.opts = append(w.opts, opts)
	w.mu.Unlock()
	if w.UpsertFn != nil {
		return w.UpsertFn(ctx, docs)
	}
	return w.p.Upsert(ctx, docs, opts)
}

func (w *fakeWriter) Delete(ctx context.Context, ids []string, opts ingest.WriteOptions) []ingest.Result {
	w.mu.Lock()
	w.deletes = append(w.deletes, slices.Clone(ids))
	w.opts = append(w.opts, opts)
	w.mu.Unlock()
	if w.DeleteFn != nil {
		return w.DeleteFn(ctx, ids)
	}
	return w.p.Delete(ctx, ids, opts)
}

func (w *fakeWriter) Status(ctx context.Context) (ingest.LogStatus, error) {
	if w.StatusFn != nil {
		return w.StatusFn(ctx)
	}
	return w.p.Status(ctx)
}

func (w *fakeWriter) Check(ctx context.Context, repair bool) (ingest.CheckReport, error) {
	if w.CheckFn != nil {
		return w.CheckFn(ctx, repair)
	}
	return w.p.Check(ctx, repair)
}

func (w *fakeWriter) upsertCalls() [][]spi.Document {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.upserts)
}

func (w *fakeWriter) deleteCalls() [][]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.deletes)
}

func (w *fakeWriter) lastOpts() ingest.WriteOptions {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.opts) == 0 {
		return ingest.WriteOptions{}
	}
	return w.opts[len(w.opts)-1]
}

// fakeHealth reports HealthFn, or a fixed status.
type fakeHealth struct {
	Status   spi.HealthStatus
	HealthFn func(ctx context.Context) spi.Health
}

func (h *fakeHealth) Health(ctx context.Context) spi.Health {
	if h.HealthFn != nil {
		return h.HealthFn(ctx)
	}
	return spi.Health{Status: h.Status}
}

// fakeBreakers is a Breakers with ...Fn fields.
type fakeBreakers struct {
	SnapshotFn   func() []breaker.Snapshot
	ForceCloseFn func(name string) (breaker.Snapshot, error)
	ForceOpenFn  func(name string) (breaker.Snapshot, error)
	HoldFn       func(name string, m breaker.Manual) (breaker.Snapshot, error)
}

func (b *fakeBreakers) Snapshot() []breaker.Snapshot { return b.SnapshotFn() }
func (b *fakeBreakers) ForceCloseBy(name string, _ breaker.Manual) (breaker.Snapshot, error) {
	return b.ForceCloseFn(name)
}
func (b *fakeBreakers) ForceOpenBy(name string, _ breaker.Manual) (breaker.Snapshot, error) {
	return b.ForceOpenFn(name)
}
func (b *fakeBreakers) Hold(name string, m breaker.Manual) (breaker.Snapshot, error) {
	return b.HoldFn(name, m)
}

// env is a server with its fakes.
type env struct {
	t        testing.TB
	cfg      api.Config
	server   *api.Server
	h        http.Handler
	searcher *fakeSearcher
	store    *fakeStore
	writer   *fakeWriter
	logs     *syncbuf.Buffer
}

func testConfig(store *fakeStore, searcher *fakeSearcher, writer *fakeWriter, logs io.Writer) api.Config {
	return api.Config{
		Searcher:  searcher,
		Writer:    writer,
		Documents: store,
		Health: map[string]spi.HealthChecker{
			spi.SourceVector:  &fakeHealth{Status: spi.StatusUp},
			spi.SourceKeyword: &fakeHealth{Status: spi.StatusUp},
			"embedder":        &fakeHealth{Status: spi.StatusUp},
		},
		Server: config.ServerConfig{
			Listen: "127.0.0.1:0", BodyLimitBytes: testBodyLimit, RequestTimeoutS: 5, MaxInFlight: testMaxInFight,
			ReadHeaderTimeoutS: 5, ReadTimeoutS: 5, WriteTimeoutS: 5, IdleTimeoutS: 5,
		},
		Ingest: config.IngestConfig{MaxDocsPerRequest: testMaxDocs, MaxIDsPerRequest: testMaxIDs, MaxTextBytes: testMaxText},
		Auth: config.AuthConfig{
			Keys: []config.KeyConfig{
				{Name: "q", Key: queryKey, Role: config.RoleQuery},
				{Name: "a", Key: adminKey, Role: config.RoleAdmin},
				{Name: "acme-q", Key: acmeQueryKey, Role: config.RoleQuery, Tenant: "acme"},
				{Name: "acme-a", Key: acmeAdminKey, Role: config.RoleAdmin, Tenant: "acme"},
			},
			Public: []string{api.PublicHealth, api.PublicReady, api.PublicMetrics, api.PublicOpenAPI},
		},
		Logger:  slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Version: "test",
	}
}

// newEnv builds a server; mutate, when given, edits the config first.
func newEnv(t testing.TB, mutate func(*api.Config)) *env {
	t.Helper()
	store := newFakeStore()
	e := &env{t: t, store: store, searcher: &fakeSearcher{}, writer: newFakeWriter(t, store), logs: &syncbuf.Buffer{}}
	e.cfg = testConfig(store, e.searcher, e.writer, e.logs)
	if mutate != nil {
		mutate(&e.cfg)
	}
	s, err := api.New(e.cfg)
	if err != nil {
		t.Fatalf("api.New: %v", err)
	}
	e.server, e.h = s, s.Handler()
	return e
}

// do sends a request with the admin key unless headers say otherwise.
// body may be a string, []byte, io.Reader or any value to marshal.
func (e *env) do(method, path string, body any, headers ...string) *httptest.ResponseRecorder {
	e.t.Helper()
	return serve(e.t, e.h, method, path, body, append([]string{"Authorization", "Bearer " + adminKey}, headers...)...)
}

// serve sends one request to h. headers are name, value pairs; an empty
// value deletes the header.
func serve(t testing.TB, h http.Handler, method, path string, body any, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = bytes.NewReader([]byte(b))
	case []byte:
		r = bytes.NewReader(b)
	case io.Reader:
		r = b
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("marshal body: %v", err)
		}
		r = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(method, path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// errorOf decodes an error body and checks its shape.
func errorOf(t testing.TB, rec *httptest.ResponseRecorder) api.ErrorDetail {
	t.Helper()
	var body api.ErrorResponse
	dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("status %d: body is not an error response: %v: %s", rec.Code, err, rec.Body.String())
	}
	if body.Error.Code == "" || body.Error.Message == "" {
		t.Fatalf("error without code or message: %s", rec.Body.String())
	}
	if body.Error.RequestID == "" || body.Error.RequestID != rec.Header().Get("X-Request-ID") {
		t.Fatalf("error request_id %q, X-Request-ID header %q", body.Error.RequestID, rec.Header().Get("X-Request-ID"))
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type %q", ct)
	}
	return body.Error
}

// wantError asserts status and code.
func wantError(t testing.TB, rec *httptest.ResponseRecorder, status int, code string) api.ErrorDetail {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d: %s", rec.Code, status, rec.Body.String())
	}
	d := errorOf(t, rec)
	if d.Code != code {
		t.Fatalf("code %q, want %q (message %q)", d.Code, code, d.Message)
	}
	return d
}

// decodeAs checks the status and decodes a success body into T.
func decodeAs[T any](t testing.TB, rec *httptest.ResponseRecorder, status int) T {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d: %s", rec.Code, status, rec.Body.String())
	}
	var v T
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("decode %T: %v: %s", v, err, rec.Body.String())
	}
	return v
}
