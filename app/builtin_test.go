package app_test

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/app"
	vectorembedded "github.com/ragd/ragd/backends/vector/embedded"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/embedder/builtin/modelcache"
	"github.com/ragd/ragd/internal/integration"
	"github.com/ragd/ragd/internal/syncbuf"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// realModelConfig is the embedded stack on the real built-in model.
func realModelConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg := builtinConfig(t)
	cfg.Embedder.ModelDir = integration.ModelDir(t)
	cfg.Embedder.Model = miniLM
	return cfg
}

// emptyModelCache points the model cache at an empty directory and turns
// pulling off: the model is missing, as on a machine that never had it.
func emptyModelCache(t *testing.T, cfg *config.Config) {
	t.Helper()
	t.Setenv(modelcache.EnvCache, t.TempDir())
	cfg.Embedder.PullTimeoutS = 0
}

// TestBuiltinModelServes: the real model embeds the demo corpus and finds
// a paraphrase the words alone do not give away; its identity is the
// model's, query embedding is limited by expected wait (the queries whose
// measured time fits 80 % of embed_timeout_ms) and the vector weight is a
// real model's.
func TestBuiltinModelServes(t *testing.T) {
	a := newApp(t, realModelConfig(t))
	defer a.Close()
	if !strings.HasPrefix(a.EmbedderIdentity, `kind=builtin model="`+miniLM+`"`) || a.EmbedderFallback != nil {
		t.Fatalf("identity %q, fallback %+v", a.EmbedderIdentity, a.EmbedderFallback)
	}
	if n, err := a.LoadDemo(context.Background()); err != nil || n != 24 {
		t.Fatalf("LoadDemo = %d, %v", n, err)
	}
	// Shares no content word with the stemming document ("Stemming reduces
	// words to a common root so that running, runs and run match").
	res := top(t, a, retriever.Query{Text: "chopping suffixes off terms so that variants match", Limit: 3, Sources: retriever.Only(spi.SourceVector)})
	if len(res.Hits) == 0 || res.Hits[0].ID != "stemming" {
		t.Fatalf("vector search with the model: %+v", res.Hits)
	}
	if w := res.Fusion.Weights[spi.SourceVector]; w != 1 {
		t.Fatalf("vector weight %v, want 1 for a real model", w)
	}
	st := a.QueryServiceTime()
	if st <= 0 {
		t.Fatal("no query service time measured at start")
	}
	n := runtime.GOMAXPROCS(0)
	want := min(max(int(0.8*float64(time.Second)/float64(st)), n), app.MaxQueuedQueries)
	if got := a.Guards[spi.SourceEmbedder].Snapshot().Limit; got != want {
		t.Fatalf("query embedder limit %d, want %d (80 %% of 1s at %v a query, within [%d, %d])", got, want, st, n, app.MaxQueuedQueries)
	}
}

// TestQueryLimitOverride: concurrency.overrides.embedder puts the built-in
// model's query embedding back on an adaptive limit with those settings.
func TestQueryLimitOverride(t *testing.T) {
	cfg := realModelConfig(t)
	cfg.Concurrency.Overrides = map[string]config.LimitSettings{spi.SourceEmbedder: {MinLimit: 3, MaxLimit: 5, InitialLimit: 3}}
	a := newApp(t, cfg)
	defer a.Close()
	if got := a.Guards[spi.SourceEmbedder].Snapshot().Limit; got != 3 {
		t.Fatalf("query embedder limit %d with the override, want its initial 3", got)
	}
}

// TestHashingStoreRefusesTheModel: a store written by the hashing embedder
// (a quickstart that ran offline) refuses to open with the model, naming
// both identities and ragd reembed.
func TestHashingStoreRefusesTheModel(t *testing.T) {
	cfg := realModelConfig(t)
	hashing := *cfg
	hashing.Embedder.Kind = config.KindHashing
	a := newApp(t, &hashing)
	upsertAll(t, a, corpus(3))
	a.Close()

	_, err := app.New(context.Background(), cfg, app.Options{Logger: quiet()})
	var ec *vectorembedded.EmbedderChangedError
	if !errors.As(err, &ec) || !strings.Contains(err.Error(), "kind=hashing") || !strings.Contains(err.Error(), "kind=builtin") ||
		!strings.Contains(err.Error(), "ragd reembed") {
		t.Fatalf("the model on a hashing store: %v, want *EmbedderChangedError naming both and ragd reembed", err)
	}
	r, err := app.New(context.Background(), cfg, app.Options{Logger: quiet(), Reembed: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.Reembed(context.Background(), nil); err != nil || n != 3 {
		t.Fatalf("reembed: %d, %v", n, err)
	}
	r.Close()
	newApp(t, cfg).Close()
}

// TestStoreKeepsItsPrecision: a store of the model's fp32 vectors (written
// before int8 was the default) opened with embedder.precision left out
// runs the model in fp32, as its vectors were made; with int8 asked for
// explicitly it refuses, naming ragd reembed; after the reembed it serves
// int8.
func TestStoreKeepsItsPrecision(t *testing.T) {
	cfg := realModelConfig(t)
	fp32 := *cfg
	fp32.Embedder.Precision = config.PrecisionFP32
	a := newApp(t, &fp32)
	upsertAll(t, a, corpus(3))
	want := a.EmbedderIdentity
	a.Close()
	if strings.Contains(want, "precision=") {
		t.Fatalf("fp32 identity %q names a precision", want)
	}

	b := newApp(t, cfg) // precision left out: the default, int8
	if b.EmbedderIdentity != want {
		t.Fatalf("default precision on an fp32 store: identity %q, want the store's %q", b.EmbedderIdentity, want)
	}
	res := top(t, b, retriever.Query{Text: "words of document number 1", Limit: 1, Sources: retriever.Only(spi.SourceVector)})
	if res.Sources[spi.SourceVector].Status != retriever.StatusOK || len(res.Hits) == 0 {
		t.Fatalf("vector query on the kept fp32 store: %+v", res.Sources)
	}
	b.Close()

	int8 := *cfg
	int8.Embedder.Precision = config.PrecisionInt8
	_, err := app.New(context.Background(), &int8, app.Options{Logger: quiet()})
	var ec *vectorembedded.EmbedderChangedError
	if !errors.As(err, &ec) || !strings.Contains(ec.Configured, "precision=int8") || !strings.Contains(err.Error(), "ragd reembed") {
		t.Fatalf("explicit int8 on an fp32 store: %v, want *EmbedderChangedError naming precision=int8 and ragd reembed", err)
	}
	r, err := app.New(context.Background(), &int8, app.Options{Logger: quiet(), Reembed: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.Reembed(context.Background(), nil); err != nil || n != 3 {
		t.Fatalf("reembed: %d, %v", n, err)
	}
	r.Close()
	c := newApp(t, cfg)
	defer c.Close()
	if !strings.HasSuffix(c.EmbedderIdentity, " precision=int8") {
		t.Fatalf("the default after the reembed: identity %q, want int8", c.EmbedderIdentity)
	}
}

// TestModelStoreRefusesTheFallback: serve on a store of the model's
// vectors, with the model gone, stops with the model's fix, not with
// ragd reembed (which would rebuild the vectors with the stand-in).
func TestModelStoreRefusesTheFallback(t *testing.T) {
	cfg := realModelConfig(t)
	a := newApp(t, cfg)
	upsertAll(t, a, corpus(3))
	a.Close()

	gone := *cfg
	gone.Embedder.ModelDir = ""
	emptyModelCache(t, &gone)
	_, err := app.New(context.Background(), &gone, app.Options{Logger: quiet(), ModelFallback: true})
	if !errors.Is(err, app.ErrModel) || !strings.Contains(err.Error(), "ragd model pull "+miniLM) || !strings.Contains(err.Error(), "do not run `ragd reembed`") {
		t.Fatalf("fallback on a store of the model's vectors: %v, want a refusal naming the model's fix", err)
	}
}

// TestServeWithoutTheModelFallsBackLoudly: with the model missing (no
// cache, pulling off), serve starts on the hashing embedder and says so in
// the log, the health report and the weights; without ModelFallback (every
// other command) New fails with the fix.
func TestServeWithoutTheModelFallsBackLoudly(t *testing.T) {
	cfg := builtinConfig(t)
	emptyModelCache(t, cfg)
	if _, err := app.New(context.Background(), cfg, app.Options{Logger: quiet()}); !errors.Is(err, app.ErrModel) ||
		!strings.Contains(err.Error(), "ragd model pull "+miniLM) {
		t.Fatalf("New without fallback: %v, want app.ErrModel with the fix", err)
	}

	var logs syncbuf.Buffer
	a, err := app.New(context.Background(), cfg, app.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil)), ModelFallback: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	fb := a.EmbedderFallback
	if fb == nil || fb.Model != miniLM || !strings.Contains(fb.Fix, "ragd model pull "+miniLM) || !strings.Contains(fb.Fix, "ragd model import") {
		t.Fatalf("fallback = %+v", fb)
	}
	if l := logs.String(); !strings.Contains(l, `"level":"WARN"`) || !strings.Contains(l, "SERVING WITHOUT THE BUILT-IN MODEL") ||
		!strings.Contains(l, "ragd model pull") {
		t.Fatalf("no loud WARN line naming the fix:\n%s", l)
	}
	h := a.Health()[spi.SourceEmbedder].Health(context.Background())
	if h.Status != spi.StatusDegraded || !strings.Contains(h.Detail, "FALLBACK") || !strings.Contains(h.Detail, "ragd model pull") {
		t.Fatalf("embedder health %+v, want degraded naming the fallback and the fix", h)
	}
	if n, err := a.LoadDemo(context.Background()); err != nil || n != 24 {
		t.Fatalf("LoadDemo on the fallback: %d, %v", n, err)
	}
	res := top(t, a, retriever.Query{Text: "circuit breaker half-open trial calls", Limit: 1})
	if len(res.Hits) == 0 || res.Hits[0].ID != "circuit-breaker" {
		t.Fatalf("query on the fallback: %+v", res.Hits)
	}
	if w := res.Fusion.Weights[spi.SourceVector]; w != config.DefaultHashingVectorWeight {
		t.Fatalf("vector weight on the fallback %v, want the hashing embedder's %v", w, config.DefaultHashingVectorWeight)
	}
	if !strings.HasPrefix(a.EmbedderIdentity, "kind=hashing") {
		t.Fatalf("identity %q: the fallback must record its own vector space", a.EmbedderIdentity)
	}
}

// TestBuiltinDimensionMustBeTheModels: a configured dimension that differs
// from the model's is a start-up error, not a fallback.
func TestBuiltinDimensionMustBeTheModels(t *testing.T) {
	cfg := realModelConfig(t)
	cfg.Embedder.Dimension = 768
	_, err := app.New(context.Background(), cfg, app.Options{Logger: quiet(), ModelFallback: true})
	if err == nil || !strings.Contains(err.Error(), "embedder.dimension is 768") || !strings.Contains(err.Error(), "384") {
		t.Fatalf("dimension 768 with MiniLM: %v", err)
	}
}
