package testenv_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/ragd/ragd/internal/integration"
	"github.com/ragd/ragd/internal/testenv"
)

// recorder is a testing.TB that records Skip and Fatal instead of acting on
// the real test, so the resolution rules can be checked without services.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}

func (r *recorder) Skip(args ...any) {
	r.skipped, r.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) {
	r.failed, r.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder on its own goroutine (Skip and Fatal end it).
func run(t *testing.T, f func(testing.TB)) *recorder {
	t.Helper()
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

// noServices clears every variable testenv reads and disables Docker.
func noServices(t *testing.T) {
	for _, v := range []string{testenv.EnvPGDSN, testenv.EnvPGBin, testenv.EnvNeo4jURI,
		testenv.EnvNeo4jUser, testenv.EnvNeo4jPassword, testenv.EnvNeo4jHome, integration.EnvRequire,
		testenv.EnvEmbedderURL, testenv.EnvEmbedderModel, testenv.EnvEmbedderDim, testenv.EnvTestenv} {
		t.Setenv(v, "")
	}
	t.Setenv(testenv.EnvNoDocker, "1")
}

var helpers = []struct {
	name string
	call func(testing.TB)
	// envVar must be named in the skip message.
	envVar string
}{
	{"Postgres", func(tb testing.TB) { testenv.Postgres(tb) }, testenv.EnvPGDSN},
	{"Neo4j", func(tb testing.TB) { testenv.Neo4j(tb) }, testenv.EnvNeo4jURI},
	{"DedicatedPostgres", func(tb testing.TB) { testenv.DedicatedPostgres(tb) }, testenv.EnvPGBin},
	{"DedicatedNeo4j", func(tb testing.TB) { testenv.DedicatedNeo4j(tb) }, testenv.EnvNeo4jHome},
	{"Embedder", func(tb testing.TB) { testenv.Embedder(tb) }, testenv.EnvEmbedderURL},
}

func TestNoServiceSkipsNamingTheVariable(t *testing.T) {
	for _, h := range helpers {
		t.Run(h.name, func(t *testing.T) {
			noServices(t)
			r := run(t, h.call)
			if !r.skipped || r.failed {
				t.Fatalf("skipped=%v failed=%v, want a skip; msg %q", r.skipped, r.failed, r.msg)
			}
			if !strings.Contains(r.msg, h.envVar) {
				t.Errorf("skip message %q does not name %s", r.msg, h.envVar)
			}
		})
	}
}

func TestNoServiceFailsWhenIntegrationRequired(t *testing.T) {
	for _, h := range helpers {
		t.Run(h.name, func(t *testing.T) {
			noServices(t)
			t.Setenv(integration.EnvRequire, "1")
			r := run(t, h.call)
			if !r.failed || r.skipped {
				t.Fatalf("skipped=%v failed=%v, want a failure; msg %q", r.skipped, r.failed, r.msg)
			}
			if !strings.Contains(r.msg, h.envVar) || !strings.Contains(r.msg, integration.EnvRequire) {
				t.Errorf("failure message %q does not name %s and %s", r.msg, h.envVar, integration.EnvRequire)
			}
		})
	}
}

// RAG_TESTENV=containers without a Docker engine fails every server helper,
// even with the variables of native servers set and without
// RAG_REQUIRE_INTEGRATION: the mode was asked for, so it must not skip or
// quietly fall back to processes. An unknown mode fails too.
func TestContainerModeWithoutDockerFails(t *testing.T) {
	for _, mode := range []string{"containers", "container"} {
		for _, h := range helpers[:4] { // the PostgreSQL and Neo4j helpers
			t.Run(mode+"/"+h.name, func(t *testing.T) {
				noServices(t)
				t.Setenv(testenv.EnvTestenv, mode)
				t.Setenv(testenv.EnvPGDSN, "postgres://postgres@127.0.0.1:1/postgres")
				t.Setenv(testenv.EnvPGBin, t.TempDir())
				t.Setenv(testenv.EnvNeo4jURI, "bolt://127.0.0.1:1")
				t.Setenv(testenv.EnvNeo4jHome, t.TempDir())
				r := run(t, h.call)
				if !r.failed || r.skipped {
					t.Fatalf("skipped=%v failed=%v, want a failure; msg %q", r.skipped, r.failed, r.msg)
				}
				if !strings.Contains(r.msg, testenv.EnvTestenv) {
					t.Errorf("failure message %q does not name %s", r.msg, testenv.EnvTestenv)
				}
			})
		}
	}
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// A variable naming a server that does not answer is a failure, not a skip,
// even without RAG_REQUIRE_INTEGRATION.
func TestBrokenEnvironmentFails(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		call func(testing.TB)
	}{
		{"Postgres", map[string]string{
			testenv.EnvPGDSN: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", closedPort(t)),
		}, func(tb testing.TB) { testenv.Postgres(tb) }},
		{"Neo4j", map[string]string{
			testenv.EnvNeo4jURI: fmt.Sprintf("bolt://127.0.0.1:%d", closedPort(t)),
		}, func(tb testing.TB) { testenv.Neo4j(tb) }},
		{"DedicatedPostgres", map[string]string{
			testenv.EnvPGBin: t.TempDir(), // no initdb in it
		}, func(tb testing.TB) { testenv.DedicatedPostgres(tb) }},
		{"DedicatedNeo4j", map[string]string{
			testenv.EnvNeo4jHome: t.TempDir(), // no lib/*.jar in it
		}, func(tb testing.TB) { testenv.DedicatedNeo4j(tb) }},
		{"Embedder", map[string]string{
			testenv.EnvEmbedderURL: fmt.Sprintf("http://127.0.0.1:%d", closedPort(t)), testenv.EnvEmbedderModel: "m", testenv.EnvEmbedderDim: "384",
		}, func(tb testing.TB) { testenv.Embedder(tb) }},
		{"EmbedderWrongDimension", map[string]string{
			testenv.EnvEmbedderURL: embeddingServer(t, 3), testenv.EnvEmbedderModel: "m", testenv.EnvEmbedderDim: "384",
		}, func(tb testing.TB) { testenv.Embedder(tb) }},
		{"EmbedderNoDimension", map[string]string{
			testenv.EnvEmbedderURL: embeddingServer(t, 384), testenv.EnvEmbedderModel: "m",
		}, func(tb testing.TB) { testenv.Embedder(tb) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			noServices(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			r := run(t, c.call)
			if !r.failed || r.skipped {
				t.Fatalf("skipped=%v failed=%v, want a failure; msg %q", r.skipped, r.failed, r.msg)
			}
		})
	}
}

// embeddingServer serves /v1/embeddings answering every input with a vector
// of dim numbers: enough to check testenv's own probe.
func embeddingServer(t *testing.T, dim int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":[{"index":0,"embedding":[%s]}]}`, strings.TrimSuffix(strings.Repeat("0.5,", dim), ","))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// The probe accepts a server whose vectors have the stated dimension.
func TestEmbedderAcceptsMatchingServer(t *testing.T) {
	noServices(t)
	url := embeddingServer(t, 4)
	t.Setenv(testenv.EnvEmbedderURL, url+"/")
	t.Setenv(testenv.EnvEmbedderModel, "m")
	t.Setenv(testenv.EnvEmbedderDim, "4")
	got := testenv.Embedder(t)
	if want := (testenv.EmbedderConn{URL: url, Model: "m", Dimension: 4}); got != want {
		t.Fatalf("Embedder = %+v, want %+v", got, want)
	}
}
