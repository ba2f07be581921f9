package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/integration"
)

// Environment variables of the OpenSearch helpers.
const (
	// EnvOpenSearchURL is the base URL of a shared OpenSearch server
	// (http://127.0.0.1:port), without security (plain HTTP, no auth).
	EnvOpenSearchURL = "RAG_TEST_OPENSEARCH_URL"
	// EnvOpenSearchHome is an installed OpenSearch (bin/opensearch, and
	// the analysis-common module) that dedicated servers run from.
	EnvOpenSearchHome = "RAG_TEST_OPENSEARCH_HOME"
	// EnvOpenSearchUser is the OS account dedicated servers run as when
	// the test runs as root (OpenSearch refuses root); default
	// "opensearch".
	EnvOpenSearchUser = "RAG_TEST_OPENSEARCH_USER"
)

// OpenSearchServer is an OpenSearch node private to one test.
type OpenSearchServer struct {
	// URL is the node's HTTP address, http://127.0.0.1:port.
	URL string
	ctl *process
}

// Stop stops the node gracefully: afterwards connections are refused.
// Stopping a stopped node is a no-op.
func (s *OpenSearchServer) Stop(ctx context.Context) error { return s.ctl.stop(ctx) }

// Start starts a stopped node again on the same port with the same data
// and returns once the cluster answers with a status better than red.
// Starting a running node is a no-op.
func (s *OpenSearchServer) Start(ctx context.Context) error { return s.ctl.start(ctx) }

// Kill ends the node at once, as a crash would (SIGKILL), and waits until
// it is gone. Killing a stopped node is a no-op.
func (s *OpenSearchServer) Kill(ctx context.Context) error { return s.ctl.kill(ctx) }

// Pause freezes the node (SIGSTOP to its process group): it keeps its
// sockets, so connections are accepted by the kernel and then nothing
// answers — a hung server. Unpause continues it.
func (s *OpenSearchServer) Pause(ctx context.Context) error { return s.ctl.pause(ctx) }

// Unpause continues a node that Pause froze and waits until it answers.
func (s *OpenSearchServer) Unpause(ctx context.Context) error { return s.ctl.unpause(ctx) }

// OpenSearch returns the base URL of the shared OpenSearch server,
// RAG_TEST_OPENSEARCH_URL; without it the test is skipped (failed when
// RAG_REQUIRE_INTEGRATION=1). Tests isolate themselves on it by index
// names (a unique prefix each) and delete what they made.
func OpenSearch(tb testing.TB) string {
	tb.Helper()
	u := strings.TrimRight(os.Getenv(EnvOpenSearchURL), "/")
	if u == "" {
		integration.SkipOrFail(tb, "OpenSearch", "set "+EnvOpenSearchURL+"; "+servicesHint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pingOpenSearch(u)(ctx); err != nil {
		tb.Fatalf("testenv: %s=%s does not answer: %v", EnvOpenSearchURL, u, err)
	}
	return u
}

// pingOpenSearch returns a readiness probe: the cluster's health answers
// with a status other than red.
func pingOpenSearch(base string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/_cluster/health", nil)
		if err != nil {
			return err
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("cluster health: HTTP %d", res.StatusCode)
		}
		var h struct {
			Status string `json:"status"`
		}
		if err := json.NewDecoder(res.Body).Decode(&h); err != nil {
			return fmt.Errorf("cluster health: %w", err)
		}
		if h.Status != "green" && h.Status != "yellow" {
			return fmt.Errorf("cluster health %q", h.Status)
		}
		return nil
	}
}

// DedicatedOpenSearch starts an OpenSearch node private to the calling
// test and stops it when the test ends: the install at
// RAG_TEST_OPENSEARCH_HOME run with its own configuration and data in the
// test's temporary directory, on free loopback ports, as
// RAG_TEST_OPENSEARCH_USER when the test runs as root. Without the
// variable the test is skipped (failed when RAG_REQUIRE_INTEGRATION=1).
// Starting takes ten seconds or more.
func DedicatedOpenSearch(tb testing.TB) *OpenSearchServer {
	tb.Helper()
	home := os.Getenv(EnvOpenSearchHome)
	if home == "" {
		integration.SkipOrFail(tb, "dedicated OpenSearch", "set "+EnvOpenSearchHome+" to an installed OpenSearch 2 home; "+servicesHint)
	}
	s, err := nativeOpenSearch(tb, home)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	return s
}

// openSearchUser returns the account a dedicated node runs as: nil when
// the test does not run as root.
func openSearchUser() (*osUser, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	name := os.Getenv(EnvOpenSearchUser)
	if name == "" {
		name = "opensearch"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("testenv: running as root, and OpenSearch refuses root: need an OS user %q "+
			"(scripts/services.sh creates it): %w", name, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, fmt.Errorf("testenv: %s uid %q: %w", name, u.Uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, fmt.Errorf("testenv: %s gid %q: %w", name, u.Gid, err)
	}
	return &osUser{name: u.Username, uid: uid, gid: gid}, nil
}

func nativeOpenSearch(tb testing.TB, home string) (*OpenSearchServer, error) {
	tb.Helper()
	bin := filepath.Join(home, "bin", "opensearch")
	if !isFile(bin) {
		return nil, fmt.Errorf("testenv: %s=%s: no bin/opensearch", EnvOpenSearchHome, home)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("testenv: OpenSearch needs Java 11 or later on PATH: %w", err)
	}
	if java, err = filepath.EvalSymlinks(java); err != nil {
		return nil, fmt.Errorf("testenv: java: %w", err)
	}
	owner, err := openSearchUser()
	if err != nil {
		return nil, err
	}
	base := tb.TempDir()
	node := filepath.Join(base, "node")
	if err := handOver(owner, node, filepath.Dir(base)); err != nil {
		return nil, err
	}
	conf := filepath.Join(node, "config")
	for _, d := range []string{conf, filepath.Join(node, "data"), filepath.Join(node, "logs"), filepath.Join(node, "tmp")} {
		if err := handOver(owner, d, filepath.Dir(base)); err != nil {
			return nil, err
		}
	}
	log4j, err := os.ReadFile(filepath.Join(home, "config", "log4j2.properties"))
	if err != nil {
		return nil, fmt.Errorf("testenv: opensearch log4j2.properties: %w", err)
	}
	jvm := strings.Join([]string{
		// C1-only JIT and the serial collector: a quick start on a busy
		// two-core machine (fault tests measure breakers, not speed).
		"-Xms256m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:+ExitOnOutOfMemoryError",
		"-Djava.io.tmpdir=${OPENSEARCH_TMPDIR}", "18-:-Djava.security.manager=allow",
		"-Djava.util.concurrent.ForkJoinPool.common.threadFactory=org.opensearch.secure_sm.SecuredForkJoinWorkerThreadFactory",
	}, "\n") + "\n"
	files := map[string][]byte{"log4j2.properties": log4j, "jvm.options": []byte(jvm)}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(conf, name), b, 0o644); err != nil {
			return nil, fmt.Errorf("testenv: opensearch %s: %w", name, err)
		}
	}
	logPath := filepath.Join(node, "console.log")
	env := append(os.Environ(),
		"OPENSEARCH_JAVA_HOME="+filepath.Dir(filepath.Dir(java)),
		"OPENSEARCH_PATH_CONF="+conf,
		"OPENSEARCH_TMPDIR="+filepath.Join(node, "tmp"))

	var url string
	p, err := startOnFreePorts(tb, 2, func(ports []int) (*process, error) {
		httpPort, transport := ports[0], ports[1]
		yml := strings.Join([]string{
			"cluster.name: ragd-test",
			"node.name: ragd-test",
			"path.data: " + filepath.Join(node, "data"),
			"path.logs: " + filepath.Join(node, "logs"),
			"network.host: 127.0.0.1",
			fmt.Sprintf("http.port: %d", httpPort),
			fmt.Sprintf("transport.port: %d", transport),
			"discovery.type: single-node",
			"cluster.routing.allocation.disk.threshold_enabled: false",
		}, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(conf, "opensearch.yml"), []byte(yml), 0o644); err != nil {
			return nil, fmt.Errorf("testenv: opensearch.yml: %w", err)
		}
		if owner != nil {
			for name := range files {
				_ = os.Chown(filepath.Join(conf, name), owner.uid, owner.gid)
			}
			_ = os.Chown(filepath.Join(conf, "opensearch.yml"), owner.uid, owner.gid)
		}
		url = fmt.Sprintf("http://127.0.0.1:%d", httpPort)
		return &process{
			name:    fmt.Sprintf("opensearch on port %d", httpPort),
			argv:    []string{bin},
			env:     env,
			logPath: logPath,
			user:    owner,
			stopSig: syscall.SIGTERM,
			ready:   pingOpenSearch(url),
		}, nil
	})
	if err != nil {
		return nil, err
	}
	return &OpenSearchServer{URL: url, ctl: p}, nil
}
