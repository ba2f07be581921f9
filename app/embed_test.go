package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ragd/ragd/app"
	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/embedder/vcache"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/internal/fakeembed"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openaiConfig is the embedded stack with the openai embedder pointed at s,
// no retries (every fault shows at once), model named model.
func openaiConfig(t *testing.T, s *fakeembed.Server, model string) *config.Config {
	t.Helper()
	cfg := embeddedConfig(t)
	cfg.Embedder = config.Default().Embedder
	cfg.Embedder.Kind = config.KindOpenAI
	cfg.Embedder.BaseURL = s.URL
	cfg.Embedder.Model = model
	cfg.Embedder.Dimension = 16
	cfg.Embedder.MaxRetries = 0
	return cfg
}

func corpus(n int) []spi.Document {
	docs := make([]spi.Document, n)
	for i := range docs {
		docs[i] = spi.Document{ID: fmt.Sprintf("d%03d", i), Title: fmt.Sprintf("title %d", i), Text: fmt.Sprintf("words of document number %d about wings", i)}
	}
	return docs
}

func upsertAll(t *testing.T, a *app.App, docs []spi.Document) {
	t.Helper()
	for _, r := range a.Pipeline.Upsert(context.Background(), docs, ingest.WriteOptions{}) {
		if r.Status != ingest.StatusOK {
			t.Fatalf("upsert %s: %+v", r.ID, r)
		}
	}
}

// TestReingestEmbedsNothing: the same corpus written again embeds no
// text (the stored vectors are reused), and a fresh data directory that
// shares the vector cache embeds none either (ragd eval without
// --data-dir, whose cache lives outside the temporary directory).
func TestReingestEmbedsNothing(t *testing.T) {
	s := fakeembed.New(t, 16)
	cache := t.TempDir()
	cfg := openaiConfig(t, s, "m1")
	cfg.Embedder.Cache.Dir = cache
	a := newApp(t, cfg)
	docs := corpus(70)
	upsertAll(t, a, docs)
	if n := len(s.Texts()); n != 70 {
		t.Fatalf("first ingest embedded %d texts, want 70", n)
	}
	upsertAll(t, a, docs)
	if n := len(s.Texts()); n != 70 {
		t.Fatalf("re-ingest embedded %d more texts, want none", n-70)
	}
	a.Close()

	fresh := openaiConfig(t, s, "m1")
	fresh.Embedder.Cache.Dir = cache
	b := newApp(t, fresh)
	defer b.Close()
	upsertAll(t, b, docs)
	if n := len(s.Texts()); n != 70 {
		t.Fatalf("ingest into a fresh data directory sharing the cache embedded %d texts, want none", n-70)
	}
	if st := b.VectorCache.Stats(); st.Hits["document"] != 70 {
		t.Fatalf("cache stats %+v, want 70 document hits", st)
	}
}

// TestInterruptedReembedResumes: a reembed that fails half-way, run
// again, embeds only what the first run had not; the first run's vectors
// come from the vector cache.
func TestInterruptedReembedResumes(t *testing.T) {
	s := fakeembed.New(t, 16)
	cfg := openaiConfig(t, s, "m1")
	a := newApp(t, cfg)
	upsertAll(t, a, corpus(200))
	a.Close()

	// Another model: its vectors must all be rebuilt.
	cfg.Embedder.Model = "m2"
	before := len(s.Texts())
	var mu sync.Mutex
	served := 0
	s.SetHandle(func(inputs []string, w http.ResponseWriter, _ *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		if served+len(inputs) > 2*app.ReembedBatch { // the third batch fails
			http.Error(w, `{"error":"model crashed"}`, http.StatusInternalServerError)
			return true
		}
		served += len(inputs)
		return false
	})
	r, err := app.New(context.Background(), cfg, app.Options{Logger: quiet(), Reembed: true})
	if err != nil {
		t.Fatal(err)
	}
	done, err := r.Reembed(context.Background(), nil)
	r.Close()
	if err == nil || done != 2*app.ReembedBatch {
		t.Fatalf("first reembed: %d done, err %v; want it to stop after %d", done, err, 2*app.ReembedBatch)
	}
	if _, err := app.New(context.Background(), cfg, app.Options{Logger: quiet()}); err == nil {
		t.Fatal("ragd started on a half re-embedded store")
	}

	s.SetHandle(nil)
	first := len(s.Texts()) - before
	r, err = app.New(context.Background(), cfg, app.Options{Logger: quiet(), Reembed: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if done, err := r.Reembed(context.Background(), nil); err != nil || done != 200 {
		t.Fatalf("second reembed: %d, %v", done, err)
	}
	if second := len(s.Texts()) - before - first; first != 2*app.ReembedBatch || second != 200-2*app.ReembedBatch {
		t.Fatalf("the runs embedded %d and %d texts, want %d and %d: the second must not redo the first's",
			first, second, 2*app.ReembedBatch, 200-2*app.ReembedBatch)
	}
}

// TestDocumentEmbeddingHasItsOwnBreaker: a failing bulk ingest opens the
// document embedder's breaker, not the query embedder's: text queries
// keep their vectors.
func TestDocumentEmbeddingHasItsOwnBreaker(t *testing.T) {
	s := fakeembed.New(t, 16)
	a := newApp(t, openaiConfig(t, s, "m1"))
	defer a.Close()
	upsertAll(t, a, corpus(5))
	fail := true
	var mu sync.Mutex
	s.SetHandle(func(inputs []string, w http.ResponseWriter, _ *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		if fail && strings.HasPrefix(inputs[0], "title") {
			http.Error(w, `{"error":"out of memory"}`, http.StatusInternalServerError)
			return true
		}
		return false
	})
	for i := range 10 {
		res := a.Pipeline.Upsert(context.Background(), []spi.Document{{ID: fmt.Sprint("new", i), Title: "title new", Text: fmt.Sprint("text ", i)}}, ingest.WriteOptions{})
		if res[0].Code != ingest.CodeEmbedderUnavailable {
			t.Fatalf("upsert %d: %+v, want embedder_unavailable", i, res[0])
		}
	}
	if st := a.Breakers.Get(spi.SourceDocumentEmbedder).State(); st != breaker.Open {
		t.Fatalf("document embedder breaker %v, want open", st)
	}
	if st := a.Breakers.Get(spi.SourceEmbedder).State(); st != breaker.Closed {
		t.Fatalf("query embedder breaker %v, want closed: ingest failures must not trip it", st)
	}
	res := top(t, a, retriever.Query{Text: "words of document number 3", Limit: 1, Sources: retriever.Only(spi.SourceVector)})
	if res.Sources[spi.SourceVector].Status != retriever.StatusOK || len(res.Hits) == 0 {
		t.Fatalf("vector query while the document embedder is open: %+v", res.Sources)
	}
}

// TestBulkIngestDoesNotShedQueries: document batches in flight (held in
// the server by a hook) take none of the query embedder's slots. With one
// shared guard at a limit of 2, the third call (the query) was shed.
func TestBulkIngestDoesNotShedQueries(t *testing.T) {
	s := fakeembed.New(t, 16)
	cfg := openaiConfig(t, s, "m1")
	two := config.LimitSettings{MinLimit: 1, MaxLimit: 2, InitialLimit: 2}
	cfg.Concurrency.Overrides = map[string]config.LimitSettings{spi.SourceEmbedder: two}
	cfg.Embedder.DocumentConcurrency = 2
	a := newApp(t, cfg)
	defer a.Close()

	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // a failing test must not leave the server's handlers blocked
	s.SetHandle(func(inputs []string, w http.ResponseWriter, _ *http.Request) bool {
		if strings.HasPrefix(inputs[0], "title") {
			entered <- struct{}{}
			<-release
		}
		return false
	})
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			docs := corpus(3)
			for k := range docs {
				docs[k].ID = fmt.Sprint(docs[k].ID, "-", i)
				docs[k].Title = fmt.Sprint(docs[k].Title, " ", i)
			}
			for _, r := range a.Pipeline.Upsert(context.Background(), docs, ingest.WriteOptions{}) {
				if r.Status != ingest.StatusOK {
					t.Errorf("upsert %s: %+v", r.ID, r)
				}
			}
		})
	}
	<-entered
	<-entered // both document batches are in the server now
	res, err := a.Retriever.Retrieve(context.Background(), retriever.Query{Text: "words about wings", Limit: 1})
	unblock()
	wg.Wait()
	if err != nil || res.Sources[spi.SourceEmbedder].Status != retriever.StatusOK {
		t.Fatalf("query embedding while two document batches run: %+v, %v; want the embedder ok", res, err)
	}
}

// TestRateLimitIsNotAFailure: a 429 that outlasts the retries is load: the
// query embedder's breaker stays closed however many queries it hits, and
// the answer says shed, not error.
func TestRateLimitIsNotAFailure(t *testing.T) {
	s := fakeembed.New(t, 16)
	a := newApp(t, openaiConfig(t, s, "m1"))
	defer a.Close()
	s.SetHandle(func(_ []string, w http.ResponseWriter, _ *http.Request) bool {
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":{"message":"Rate limit reached"}}`)
		return true
	})
	for i := range 3 * config.Default().Breakers.FailureThreshold {
		res := top(t, a, retriever.Query{Text: fmt.Sprint("query ", i), Limit: 1})
		if st := res.Sources[spi.SourceEmbedder].Status; st != retriever.StatusShed {
			t.Fatalf("query %d: embedder status %q, want shed", i, st)
		}
	}
	if st := a.Breakers.Get(spi.SourceEmbedder).State(); st != breaker.Closed {
		t.Fatalf("query embedder breaker %v after rate limits, want closed", st)
	}
	for _, d := range corpus(2 * config.Default().Breakers.FailureThreshold) {
		res := a.Pipeline.Upsert(context.Background(), []spi.Document{d}, ingest.WriteOptions{})
		if res[0].Code != ingest.CodeEmbedderUnavailable {
			t.Fatalf("upsert while rate limited: %+v", res[0])
		}
	}
	if st := a.Breakers.Get(spi.SourceDocumentEmbedder).State(); st != breaker.Closed {
		t.Fatalf("document embedder breaker %v after a rate limit, want closed", st)
	}
}

// TestQueryVectorsAreCached: a repeated query text is embedded once.
func TestQueryVectorsAreCached(t *testing.T) {
	s := fakeembed.New(t, 16)
	a := newApp(t, openaiConfig(t, s, "m1"))
	defer a.Close()
	for range 3 {
		top(t, a, retriever.Query{Text: "the same question", Limit: 1, Sources: retriever.Only(spi.SourceVector)})
	}
	if got := s.Texts(); !slices.Equal(got, []string{"the same question"}) {
		t.Fatalf("server embedded %q, want the query once", got)
	}
}

// TestCutOffWriteResumes: a large write whose deadline runs out while its
// documents are being embedded (a CPU model needs seconds per 64 texts)
// keeps what it embedded: the retry embeds only the rest. The write path
// embeds 64 texts a call whatever its commit batch (256 here), and each
// finished call's vectors reach the vector cache.
func TestCutOffWriteResumes(t *testing.T) {
	s := fakeembed.New(t, 16)
	cfg := openaiConfig(t, s, "m1")
	cfg.Embedder.BatchSize = 64 // one request per embedding call
	a := newApp(t, cfg)
	defer a.Close()

	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	requests := 0
	s.SetHandle(func(_ []string, _ http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		requests++
		n := requests
		mu.Unlock()
		if n == 3 { // the third call: the deadline runs out while it runs
			cancel()
			<-r.Context().Done()
			return true
		}
		return false
	})
	docs := corpus(200)
	for _, r := range a.Pipeline.Upsert(ctx, docs, ingest.WriteOptions{}) {
		if r.Status != ingest.StatusFailed {
			t.Fatalf("cut-off write: %+v, want every document failed (nothing committed)", r)
		}
	}
	s.SetHandle(nil)
	before := len(s.Texts())
	upsertAll(t, a, docs)
	if n := len(s.Texts()) - before; before != 128 || n != 200-128 {
		t.Fatalf("the cut-off write embedded %d texts and its retry %d more; want 128 and the 72 left", before, n)
	}
}

// countTexts counts how often text reached the embedding server.
func countTexts(s *fakeembed.Server, text string) int {
	n := 0
	for _, t := range s.Texts() {
		if strings.Contains(t, text) {
			n++
		}
	}
	return n
}

// Issue 29 item 4: the vector caches are per tenant. A query one tenant
// asked answered another tenant's same query from the shared LRU
// (embedder took_ms 0, ~1 ms instead of 4-8), and a document text one
// tenant wrote was a hit of the persistent cache for another tenant's
// write (ragd_vector_cache_hits_total{role="document"} rose by one on a
// correct guess). Now a text is embedded once per tenant: a hit tells a
// tenant only what it asked or wrote itself.
func TestVectorCachesArePerTenant(t *testing.T) {
	s := fakeembed.New(t, 16)
	a := newApp(t, openaiConfig(t, s, "m1"))
	defer a.Close()
	ctx := context.Background()

	ask := func(tenant string) *retriever.Result {
		return top(t, a, retriever.Query{Text: "who holds the secret question", Tenant: tenant, Limit: 1, Sources: retriever.Only(spi.SourceVector)})
	}
	ask("acme")
	res := ask("globex")
	if n := countTexts(s, "who holds the secret question"); n != 2 {
		t.Fatalf("the query was embedded %d times for two tenants, want 2 (one each)", n)
	}
	if st := res.Sources[spi.SourceEmbedder]; st.Status != retriever.StatusOK {
		t.Fatalf("globex's query: embedder %+v, want it asked", st)
	}
	ask("acme")
	ask("globex")
	if n := countTexts(s, "who holds the secret question"); n != 2 {
		t.Fatalf("repeated queries embedded %d times, want each tenant's answered from its cache", n)
	}

	write := func(docs ...spi.Document) {
		t.Helper()
		for _, r := range a.Pipeline.Upsert(ctx, docs, ingest.WriteOptions{}) {
			if r.Status != ingest.StatusOK {
				t.Fatalf("upsert %s: %+v", r.ID, r)
			}
		}
	}
	hits := func() uint64 { return a.VectorCache.Stats().Hits[vcache.RoleDocument] }
	write(spi.Document{ID: "a-1", Tenant: "acme", Text: "the merger closes on friday"})
	before := hits()
	write(spi.Document{ID: "g-1", Tenant: "globex", Text: "the merger closes on friday"})
	if n := countTexts(s, "the merger closes on friday"); n != 2 || hits() != before {
		t.Fatalf("another tenant's text: embedded %d times, cache hits %d -> %d; want 2 and no hit", n, before, hits())
	}
	// One batch of two tenants' documents (an unbound key) is embedded per
	// tenant; the same tenant's same text again is a hit.
	write(spi.Document{ID: "a-2", Tenant: "acme", Text: "quarterly figures leak"}, spi.Document{ID: "g-2", Tenant: "globex", Text: "quarterly figures leak"})
	if n := countTexts(s, "quarterly figures leak"); n != 2 {
		t.Fatalf("a mixed batch embedded the shared text %d times, want 2", n)
	}
	before = hits()
	write(spi.Document{ID: "a-3", Tenant: "acme", Text: "the merger closes on friday"})
	if n := countTexts(s, "the merger closes on friday"); n != 2 || hits() != before+1 {
		t.Fatalf("acme's own text again: embedded %d times, hits %d -> %d; want a hit", n, before, hits())
	}
}
