package app_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragd/ragd/app"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/embedder/builtin/modelcache"
	"github.com/ragd/ragd/internal/integration"
)

const miniLM = "sentence-transformers/all-MiniLM-L6-v2"

func builtinConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg := embeddedConfig(t)
	cfg.Embedder = config.Default().Embedder
	cfg.Embedder.Kind = config.KindBuiltin
	return cfg
}

// mirror serves a model directory as Hugging Face serves a repository
// ({repo}/resolve/{revision}/{file}); hold, when set, blocks every request
// until the client gives up.
func mirror(t *testing.T, dir string, hold bool) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hold {
			<-r.Context().Done()
			return
		}
		_, file, ok := strings.Cut(r.URL.Path, "/resolve/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, file, _ = strings.Cut(file, "/") // the revision
		http.ServeFile(w, r, filepath.Join(dir, filepath.FromSlash(file)))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func deadURL(t *testing.T) string { return "http://" + deadAddr(t) }

// TestModelMissingSaysWhyAndHowToFix: each way the model can be missing
// gives a short reason and the command that installs it; serve's fallback
// is the hashing embedder carrying both.
func TestModelMissingSaysWhyAndHowToFix(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, model string
		pullS       int
		base        func(t *testing.T) string
		reason, fix string
	}{
		{"offline", "", 60, deadURL, "not cached; model host unreachable", "`ragd model pull " + miniLM + "` (offline: `ragd model import PATH --name " + miniLM + "`)"},
		{"pull off", "all-MiniLM-L6-v2", 0, deadURL, "pulling at start is off", "`ragd model pull " + miniLM + "`"},
		{"not pinned", "intfloat/e5-small-v2", 60, deadURL, "not cached; no pinned download", "`ragd model import PATH --name intfloat/e5-small-v2`"},
		{"pull too slow", "", 1, func(t *testing.T) string { return mirror(t, t.TempDir(), true) }, "longer than pull_timeout_s (1s)", "`ragd model pull " + miniLM + "`"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := builtinConfig(t)
			cfg.Embedder.Model, cfg.Embedder.PullTimeoutS = tc.model, tc.pullS
			cache := &modelcache.Cache{Dir: t.TempDir(), BaseURL: tc.base(t)}
			_, _, err := app.ModelDir(ctx, cfg, app.EmbedderOptions{Cache: cache})
			if !errors.Is(err, app.ErrModel) || !errors.Is(err, modelcache.ErrNotCached) && tc.pullS == 0 {
				t.Fatalf("err = %v, want app.ErrModel", err)
			}
			if !strings.Contains(err.Error(), tc.reason) || !strings.Contains(err.Error(), tc.fix) || !strings.Contains(err.Error(), cache.Dir) {
				t.Fatalf("err = %v\nwant the reason %q, the fix %q and the cache directory", err, tc.reason, tc.fix)
			}
			emb, ferr := app.FallbackFor(cfg, err)
			if ferr != nil {
				t.Fatal(ferr)
			}
			fb := emb.Fallback
			if fb == nil || !strings.HasPrefix(emb.Identity, "kind=hashing") || emb.Kind(cfg) != config.KindHashing || emb.CPU {
				t.Fatalf("fallback embedders = %+v", emb)
			}
			if d := fb.Detail(); !strings.Contains(d, "FALLBACK") || !strings.Contains(d, tc.reason) || !strings.Contains(d, "run ragd model ") || len(d) > 200 {
				t.Fatalf("detail %q lacks the reason or the command, or is longer than the 200 bytes the health report keeps", d)
			}
			if v, err := emb.Query.Embed(ctx, []string{"wing"}); err != nil || len(v[0]) != 384 {
				t.Fatalf("the fallback does not embed: %v", err)
			}
		})
	}
}

// TestModelPulledAtStart: a model missing from the cache is pulled (here
// from a local mirror of Hugging Face serving the real files) and found in
// the cache the next time, without a request.
func TestModelPulledAtStart(t *testing.T) {
	src := integration.ModelDir(t)
	cfg := builtinConfig(t)
	cache := &modelcache.Cache{Dir: t.TempDir(), BaseURL: mirror(t, src, false)}
	dir, name, err := app.ModelDir(context.Background(), cfg, app.EmbedderOptions{Cache: cache})
	if err != nil || name != miniLM {
		t.Fatalf("pull at start: %q, %q, %v", dir, name, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	cache.BaseURL = deadURL(t)
	if again, _, err := app.ModelDir(context.Background(), cfg, app.EmbedderOptions{Cache: cache}); err != nil || again != dir {
		t.Fatalf("second start: %q, %v; want the cached %q without a request", again, err, dir)
	}
}
