package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/retriever"
)

var testEnv = map[string]string{
	"PG_DSN":         "postgres://ragd@127.0.0.1:5432/ragd",
	"NEO4J_PASSWORD": "secret-password",
	"ADMIN_KEY":      "admin-key-0123456789abcdef",
	"OS_PASSWORD":    "opensearch-password",
}

func lookup(k string) (string, bool) {
	v, ok := testEnv[k]
	return v, ok
}

func parseFile(t *testing.T, path string) (*config.Config, error) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return config.Parse(b, lookup)
}

func TestGoodFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.good.yaml")
	if len(files) == 0 {
		t.Fatal("no testdata/*.good.yaml")
	}
	for _, f := range append(files, "../rag.yaml") {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if _, err := parseFile(t, f); err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
		})
	}
}

func TestBadFiles(t *testing.T) {
	// Each bad file and the fragments its error must contain: the key it
	// names and, where the problem has a place in the file, the line.
	want := map[string][]string{
		"unknown-key.bad.yaml":       {"line 5", "server.lisen", "unknown key", `did you mean "listen"`},
		"unknown-nested.bad.yaml":    {"line 7", "backends.graph.passwrd", "unknown key"},
		"unknown-in-map.bad.yaml":    {"line 5", "retriever.sources.vector.weigth", "unknown key"},
		"bad-kind.bad.yaml":          {"backends.vector.kind", `"faiss"`},
		"limit-over-max.bad.yaml":    {"line 4", "retriever.limit", "500"},
		"type.bad.yaml":              {"line 4", "retriever.window", "many"},
		"env-missing.bad.yaml":       {"line 6", "NOT_SET_ANYWHERE", "not set"},
		"auth-no-keys.bad.yaml":      {"auth.keys", "enabled: false"},
		"breaker-threshold.bad.yaml": {"line 4", "breakers.failure_threshold"},
		"int-fraction.bad.yaml":      {"line 4", "breakers.failure_threshold", "whole number", "1.9"},
		"int-half.bad.yaml":          {"line 4", "server.max_in_flight", "whole number", "0.5"},
		"memory-limit.bad.yaml":      {"server.memory_limit_mb", ">= 0", "-1"},
		"graph-apply-batch.bad.yaml": {"backends.graph.apply_batch", ">= 0", "-5"},
		"ann.bad.yaml":               {"backends.vector.ann.min_rows", ">= -1", "-2", "backends.vector.ann.probe", ">= 0", "-0.5"},
		"ann-pgvector.bad.yaml":      {"backends.vector.ann", "ef_search"},
		"tenant.bad.yaml":            {"line 4", "auth.keys[1].tenant", "control character U+0009"},
		"tenant-invisible.bad.yaml":  {"line 4", "auth.keys[1].tenant", "U+202E at byte 4"},
		"breaker-unknown.bad.yaml":   {"breakers.overrides.postgres", "unknown breaker"},
		"unknown-source.bad.yaml":    {"retriever.sources.bm25", "unknown source"},
		"no-backends.bad.yaml":       {"backends", "at least one"},
		"key.bad.yaml":               {"line 4", "auth.keys[0].key", "auth.keys[0].role"},
		// Issue 29 item 6: HTTP strips the spaces around a header value,
		// so such a key (whose spaces counted toward the 16 characters)
		// could never authenticate; a control character cannot be sent.
		// Issue 29 item 4: the default auth.public lists metrics, which
		// counts every tenant's traffic; a metrics key reads every tenant's.
		"tenant-metrics.bad.yaml": {"auth.public", "auth.keys[1] is bound to a tenant", "role metrics", "auth.keys[2].tenant", "cannot be bound"},
		"key-space.bad.yaml": {"auth.keys[0].key", "auth.keys[1].key", "whitespace", "never authenticate",
			"auth.keys[2].key", "control character"},
		// A key beyond ASCII reads as another in rag.yaml (U+200B is
		// invisible, U+202E reverses what follows) and authenticates
		// from some clients only: curl sends UTF-8, Python's http.client
		// Latin-1 or nothing (it refuses U+200B). A key's name is shown
		// as who held a breaker: a hold reason's rule.
		"key-ascii.bad.yaml":        {"auth.keys[0].key", "U+200B", "auth.keys[1].key", "U+202E", "auth.keys[2].key", "U+00E9", "ASCII", "auth.keys[4].name", "U+202E at byte 2", "auth.keys[5].name", "control character U+001B"},
		"not-mapping.bad.yaml":      {"line 1", "mapping"},
		"syntax.bad.yaml":           {"(file)"},
		"listen.bad.yaml":           {"server.listen", "host:port"},
		"weight.bad.yaml":           {"retriever.sources.keyword.weight", "between 0 and 1000"},
		"tracing.bad.yaml":          {"tracing.endpoint", "tracing.sample_ratio"},
		"embedder-cache.bad.yaml":   {"embedder.document_concurrency", "embedder.cache.dir", "embedder.cache.query_entries"},
		"builtin.bad.yaml":          {"embedder.model", "invalid model name", "embedder.threads", "embedder.max_seq_length", "[CLS]", "embedder.pull_timeout_s", "embedder.precision"},
		"openai-dimension.bad.yaml": {"embedder.dimension", "must be set", "openai"},
		"settle.bad.yaml":           {"backends.keyword.settle_after_ms", "backends.keyword.settle_within_s", "-1 for no bound"},
		"opensearch.bad.yaml":       {"backends.keyword.hosts[1]", "ftp://", "backends.keyword.index_prefix", "Upper", "backends.keyword.replicas", "backends.keyword.kind", "change log"},
	}
	// A space inside a key is sent as it is, and works.
	if _, err := parseFile(t, "testdata/key-space.bad.yaml"); err == nil || strings.Contains(err.Error(), "auth.keys[3]") {
		t.Errorf("key-space.bad.yaml: %v; want keys 0-2 refused and key 3 (an inner space) accepted", err)
	}
	if _, err := parseFile(t, "testdata/key-ascii.bad.yaml"); err == nil || strings.Contains(err.Error(), "auth.keys[3]") {
		t.Errorf("key-ascii.bad.yaml: %v; want keys 0-2 refused and key 3 accepted", err)
	}
	files, _ := filepath.Glob("testdata/*.bad.yaml")
	if len(files) != len(want) {
		t.Fatalf("%d bad files but %d expectations: keep them in step", len(files), len(want))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			frags, ok := want[name]
			if !ok {
				t.Fatalf("no expectation for %s", name)
			}
			_, err := parseFile(t, f)
			if err == nil {
				t.Fatal("expected an error")
			}
			if !errors.Is(err, config.ErrInvalid) {
				t.Errorf("error does not match config.ErrInvalid: %v", err)
			}
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Errorf("error is not a *config.Error: %v", err)
			}
			for _, frag := range frags {
				if !strings.Contains(err.Error(), frag) {
					t.Errorf("error %q does not contain %q", err, frag)
				}
			}
		})
	}
}

func TestFullFileValues(t *testing.T) {
	c, err := parseFile(t, "testdata/full.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"dsn from env", c.Backends.Vector.DSN, testEnv["PG_DSN"]},
		{"password from env", c.Backends.Graph.Password, testEnv["NEO4J_PASSWORD"]},
		{"quoted key from env", c.Auth.Keys[0].Key, testEnv["ADMIN_KEY"]},
		{"int from env default", c.Retriever.BudgetMS, 1500},
		{"fusion", c.Retriever.Fusion, "score"},
		{"source weight", *c.Retriever.Sources["vector"].Weight, 2.0},
		{"source disabled", *c.Retriever.Sources["graph"].Enabled, false},
		{"inline breaker settings", c.Breakers.FailureThreshold, 3},
		{"fractional reset", config.Seconds(c.Breakers.ResetTimeoutS), 10500 * time.Millisecond},
		{"override", c.Breakers.Overrides["graph"].FailureThreshold, 2},
		{"tenant-bound key", c.Auth.Keys[1].Tenant, "acme"},
		{"auth on", c.AuthEnabled(), true},
		{"absolute dir kept", c.Path("/tmp/kw"), "/tmp/kw"},
		{"relative dir joined", c.Path("graph"), filepath.Join("/var/lib/ragd", "graph")},
		{"tracing on", c.Tracing.Enabled, true},
		{"tracing ratio", c.Tracing.SampleRatio, 0.25},
		{"index build memory", c.Backends.Vector.IndexBuildMemMB, 2048},
		{"memory limit", c.Server.MemoryLimitMB, 1536},
		{"graph hub threshold", c.Backends.Graph.MaxDegree, 250},
		{"document concurrency", c.Embedder.DocumentSlots(), 2},
		{"vector cache dir", c.Path(c.Embedder.Cache.Dir), "/var/cache/ragd-vectors"},
		{"vector cache bound", c.Embedder.Cache.MaxMB, 1024},
		{"query cache", c.Embedder.Cache.QueryEntries, 4096},
		{"keyword settle after", c.Backends.Keyword.SettleAfterMS, 5000},
		{"keyword settle unbounded", c.Backends.Keyword.SettleWithinS, -1},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: got %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestBuiltinEmbedderValues(t *testing.T) {
	c, err := parseFile(t, "testdata/builtin.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := c.Embedder
	if e.Kind != config.KindBuiltin || e.BuiltinModel() != "all-MiniLM-L6-v2" || e.Threads != 2 || e.MaxSeqLength != 128 ||
		e.QueryPrefix != "query: " || e.DocumentPrefix != "passage: " || e.PullTimeoutS != 60 || e.Dimension != 0 ||
		e.Precision != config.PrecisionInt8 {
		t.Fatalf("embedder = %+v", e)
	}
	if e.DocumentSlots() != 1 {
		t.Errorf("document slots %d, want 1 for an in-process model", e.DocumentSlots())
	}
	if a := c.Backends.Vector.ANN; a.MinRows != 200000 || a.Probe != 1.5 {
		t.Errorf("backends.vector.ann = %+v, want min_rows 200000, probe 1.5", a)
	}
	if got := c.SourceWeight("vector"); got != 1 {
		t.Errorf("builtin vector weight %v, want 1 (a real model)", got)
	}
	if got := c.SourceWeightFor("vector", config.KindHashing); got != config.DefaultHashingVectorWeight {
		t.Errorf("vector weight while serving on the hashing fallback %v, want %v", got, config.DefaultHashingVectorWeight)
	}
	e.Model = ""
	if e.BuiltinModel() != "sentence-transformers/all-MiniLM-L6-v2" {
		t.Errorf("default model %q", e.BuiltinModel())
	}
}

func TestDefaultsFillGaps(t *testing.T) {
	c, err := parseFile(t, "testdata/minimal.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := config.Default()
	if c.Retriever.RRFK != 60 || c.Retriever.Window != d.Retriever.Window || c.Backends.Vector.Kind != config.KindEmbedded {
		t.Fatalf("defaults not applied: %+v", c.Retriever)
	}
	if c.AuthEnabled() {
		t.Fatal("auth.enabled: false was ignored")
	}
}

func TestEnvExpansionDoesNotInjectYAML(t *testing.T) {
	env := func(k string) (string, bool) { return "x\nlog: {level: nope}", true }
	c, err := config.Parse([]byte("auth:\n  enabled: false\nbackends:\n  graph:\n    kind: neo4j\n    uri: bolt://h:1\n    password: ${P}\n"), env)
	if err != nil {
		t.Fatal(err)
	}
	if c.Backends.Graph.Password != "x\nlog: {level: nope}" || c.Log.Level != "info" {
		t.Fatalf("env value was parsed as YAML: %+v", c.Log)
	}
}

func TestMaxWeightIsTheRetrievers(t *testing.T) {
	if config.MaxWeight != retriever.MaxWeight {
		t.Fatalf("config.MaxWeight %d, retriever.MaxWeight %d", config.MaxWeight, retriever.MaxWeight)
	}
}

func TestLoad(t *testing.T) {
	if _, err := config.Load("testdata/does-not-exist.yaml"); err == nil {
		t.Fatal("missing file must be an error")
	}
	c, err := config.Load("testdata/minimal.good.yaml")
	if err != nil || c == nil {
		t.Fatalf("Load: %v", err)
	}
	// A relative data_dir is the file's directory's, not the working
	// directory's (issue 12 item 11).
	if want := filepath.Join("testdata", "data"); c.DataDir != want {
		t.Fatalf("data_dir %q, want %q", c.DataDir, want)
	}
}

// The default fusion weights: equal for keyword and vector, the graph left
// out, and the built-in hashing embedder's vectors weighted down; a weight
// set in the file wins.
func TestDefaultSourceWeights(t *testing.T) {
	c := config.Default()
	if c.Embedder.Kind != config.KindBuiltin || c.SourceWeight("vector") != 1 {
		t.Errorf("default embedder %q with vector weight %v, want the built-in model at 1", c.Embedder.Kind, c.SourceWeight("vector"))
	}
	c.Embedder.Kind = config.KindHashing
	for name, want := range map[string]float64{"keyword": 1, "vector": config.DefaultHashingVectorWeight, "graph": 0} {
		if got := c.SourceWeight(name); got != want {
			t.Errorf("hashing embedder: %s weight %v, want %v", name, got, want)
		}
	}
	c.Embedder.Kind = config.KindOpenAI
	if got := c.SourceWeight("vector"); got != 1 {
		t.Errorf("openai embedder: vector weight %v, want 1", got)
	}
	w := 0.7
	c.Retriever.Sources = map[string]config.SourceConfig{"vector": {Weight: &w}}
	if got := c.SourceWeight("vector"); got != 0.7 {
		t.Errorf("configured vector weight: %v, want 0.7", got)
	}
}
