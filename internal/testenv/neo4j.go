package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"github.com/neo4j/neo4j-go-driver/v5/neo4j/config"
)

// Neo4jConn names a Neo4j server and the credentials to use.
type Neo4jConn struct {
	URI      string // bolt://host:port
	User     string
	Password string
}

// Neo4jServer is a Neo4j server private to one test.
type Neo4jServer struct {
	Neo4jConn
	ctl controller
}

// Stop stops the server: afterwards connections are refused. Stopping a
// stopped server is a no-op.
func (s *Neo4jServer) Stop(ctx context.Context) error { return s.ctl.stop(ctx) }

// Start starts a stopped server again on the same port with the same data and
// returns once bolt answers `RETURN 1`. Starting a running server is a no-op.
func (s *Neo4jServer) Start(ctx context.Context) error { return s.ctl.start(ctx) }

// Kill ends the server at once, as a crash would (SIGKILL), and waits until
// it is gone. Killing a stopped server is a no-op.
func (s *Neo4jServer) Kill(ctx context.Context) error { return s.ctl.kill(ctx) }

// Pause freezes the server, as a hang would (see Server.Pause).
func (s *Neo4jServer) Pause(ctx context.Context) error { return s.ctl.pause(ctx) }

// Unpause lets a paused server run again and returns once bolt answers
// `RETURN 1`.
func (s *Neo4jServer) Unpause(ctx context.Context) error { return s.ctl.unpause(ctx) }

// dedicatedNeo4jPassword is the initial password of dedicated servers.
const dedicatedNeo4jPassword = "ragd-test-password"

// Neo4j returns the shared Neo4j server: RAG_TEST_NEO4J_URI (with
// RAG_TEST_NEO4J_USER, default "neo4j", and RAG_TEST_NEO4J_PASSWORD), or else
// a Neo4j container when Docker is reachable; otherwise the test is skipped
// (failed when RAG_REQUIRE_INTEGRATION=1). With RAG_TESTENV=containers it is
// a container (RAG_NEO4J_IMAGE) shared by the test process. Neo4j Community
// has one database: tests isolate themselves with unique ids or tenants and
// clean up.
func Neo4j(tb testing.TB) Neo4jConn {
	tb.Helper()
	uri := os.Getenv(EnvNeo4jURI)
	if useContainers(tb) {
		uri = ""
	}
	if uri == "" {
		if !dockerAvailable() {
			unavailable(tb, "Neo4j", "set "+EnvNeo4jURI+", "+EnvNeo4jUser+" and "+EnvNeo4jPassword)
		}
		conn, err := sharedDockerNeo4j()
		if err != nil {
			tb.Fatalf("testenv: shared Neo4j container: %v", err)
		}
		return conn
	}
	conn := Neo4jConn{URI: uri, User: os.Getenv(EnvNeo4jUser), Password: os.Getenv(EnvNeo4jPassword)}
	if conn.User == "" {
		conn.User = "neo4j"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pingNeo4j(conn)(ctx); err != nil {
		tb.Fatalf("testenv: %s=%s does not answer RETURN 1: %v", EnvNeo4jURI, uri, err)
	}
	return conn
}

// pingNeo4j returns a readiness probe: connect and run RETURN 1 once.
func pingNeo4j(conn Neo4jConn) func(context.Context) error {
	return func(ctx context.Context) error {
		drv, err := neo4j.NewDriverWithContext(conn.URI, neo4j.BasicAuth(conn.User, conn.Password, ""),
			func(c *config.Config) {
				c.SocketConnectTimeout = 2 * time.Second
				c.MaxConnectionPoolSize = 1
			})
		if err != nil {
			return err
		}
		defer drv.Close(context.Background())
		sess := drv.NewSession(ctx, neo4j.SessionConfig{AccessMode: neo4j.AccessModeRead})
		defer sess.Close(context.Background())
		res, err := sess.Run(ctx, "RETURN 1 AS n", nil)
		if err != nil {
			return err
		}
		rec, err := res.Single(ctx)
		if err != nil {
			return err
		}
		if n, ok := rec.Get("n"); !ok || n != int64(1) {
			return fmt.Errorf("RETURN 1 answered %v", n)
		}
		return nil
	}
}

// DedicatedNeo4j starts a Neo4j server private to the calling test and stops
// it when the test ends: the Neo4j installed at RAG_TEST_NEO4J_HOME (whose
// lib/ holds the server jars) run with its own configuration and data
// directory in the test's temporary directory on free loopback ports, or else
// a Neo4j container when Docker is reachable; otherwise the test is skipped
// (failed when RAG_REQUIRE_INTEGRATION=1). With RAG_TESTENV=containers it is a
// container (RAG_NEO4J_IMAGE) on a fixed loopback port. Starting takes
// several seconds.
func DedicatedNeo4j(tb testing.TB) *Neo4jServer {
	tb.Helper()
	home := os.Getenv(EnvNeo4jHome)
	if useContainers(tb) {
		home = ""
	}
	if home == "" {
		if !dockerAvailable() {
			unavailable(tb, "dedicated Neo4j", "set "+EnvNeo4jHome+" to an installed Neo4j 5 home (its lib/ holds the jars)")
		}
		s, err := dockerDedicatedNeo4j(tb)
		if err != nil {
			tb.Fatalf("%v", err)
		}
		return s
	}
	s, err := nativeNeo4j(tb, home)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	return s
}

func nativeNeo4j(tb testing.TB, home string) (*Neo4jServer, error) {
	tb.Helper()
	lib := filepath.Join(home, "lib")
	jars, err := filepath.Glob(filepath.Join(lib, "*.jar"))
	if err != nil || len(jars) == 0 {
		return nil, fmt.Errorf("testenv: %s=%s: no jars in %s", EnvNeo4jHome, home, lib)
	}
	java, err := javaBin()
	if err != nil {
		return nil, err
	}
	base := tb.TempDir()
	for _, d := range []string{"conf", "data", "logs", "run", "plugins", "import"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			return nil, fmt.Errorf("testenv: neo4j dirs: %w", err)
		}
	}
	if err := os.Symlink(lib, filepath.Join(base, "lib")); err != nil {
		return nil, fmt.Errorf("testenv: neo4j lib: %w", err)
	}
	confDir := filepath.Join(base, "conf")
	env := append(os.Environ(), "NEO4J_HOME="+base, "NEO4J_CONF="+confDir)
	classpath := filepath.Join(lib, "*")
	logPath := filepath.Join(base, "logs", "console.log")

	// scripts/services.sh records Neo4j's classes as a class-data-sharing
	// archive in the home: mapped, it halves the CPU of a start. A JVM that
	// cannot use it ignores it.
	var cds []string
	if archive := filepath.Join(home, "neo4j.jsa"); isFile(archive) {
		cds = []string{"-XX:SharedArchiveFile=" + archive}
	}

	if err := writeNeo4jConf(confDir, base, 0, 0); err != nil {
		return nil, err
	}
	setPassword := &process{
		name: "neo4j set-initial-password",
		argv: slices.Concat([]string{java, "-Xmx128m"}, cds, []string{"-cp", classpath, "org.neo4j.cli.AdminTool",
			"dbms", "set-initial-password", dedicatedNeo4jPassword}),
		env:     env,
		logPath: logPath,
	}
	if err := runOnce(setPassword); err != nil {
		return nil, err
	}

	var conn Neo4jConn
	p, err := startOnFreePorts(tb, 2, func(ports []int) (*process, error) {
		bolt, http := ports[0], ports[1]
		if err := writeNeo4jConf(confDir, base, bolt, http); err != nil {
			return nil, err
		}
		conn = Neo4jConn{URI: fmt.Sprintf("bolt://127.0.0.1:%d", bolt), User: "neo4j", Password: dedicatedNeo4jPassword}
		return &process{
			name: fmt.Sprintf("neo4j on bolt port %d", bolt),
			// C1-only JIT: starts 2-4x faster on a busy two-core machine.
			argv: slices.Concat([]string{java, "-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
				"-XX:+ExitOnOutOfMemoryError", "-Dfile.encoding=UTF-8"}, cds,
				[]string{"-cp", classpath, "org.neo4j.server.CommunityEntryPoint",
					"--home-dir=" + base, "--config-dir=" + confDir}),
			env:     env,
			logPath: logPath,
			stopSig: syscall.SIGTERM,
			ready:   pingNeo4j(conn),
		}, nil
	})
	if err != nil {
		return nil, err
	}
	return &Neo4jServer{Neo4jConn: conn, ctl: p}, nil
}

// writeNeo4jConf writes a minimal neo4j.conf for a private server.
func writeNeo4jConf(confDir, base string, bolt, http int) error {
	lines := []string{
		"server.default_listen_address=127.0.0.1",
		"server.default_advertised_address=127.0.0.1",
		fmt.Sprintf("server.bolt.listen_address=127.0.0.1:%d", bolt),
		fmt.Sprintf("server.bolt.advertised_address=127.0.0.1:%d", bolt),
		fmt.Sprintf("server.http.listen_address=127.0.0.1:%d", http),
		fmt.Sprintf("server.http.advertised_address=127.0.0.1:%d", http),
		"server.https.enabled=false",
		"server.memory.pagecache.size=64m",
		"dbms.security.auth_enabled=true",
		"dbms.usage_report.enabled=false",
		"db.tx_log.preallocate=false",
		"server.config.strict_validation.enabled=false",
		// Bolt's network layer otherwise waits twice 5 s for quiet on
		// shutdown: Stop took 11 s instead of 1 s.
		"internal.dbms.bolt.netty_server_shutdown_quiet_period=0",
		"internal.dbms.bolt.netty_server_shutdown_timeout=1s",
		"server.directories.data=" + filepath.Join(base, "data"),
		"server.directories.logs=" + filepath.Join(base, "logs"),
		"server.directories.run=" + filepath.Join(base, "run"),
		"server.directories.plugins=" + filepath.Join(base, "plugins"),
		"server.directories.import=" + filepath.Join(base, "import"),
	}
	path := filepath.Join(confDir, "neo4j.conf")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("testenv: write %s: %w", path, err)
	}
	return nil
}

// javaBin finds the java launcher: $JAVA_HOME/bin/java, else java on PATH.
func javaBin() (string, error) {
	if jh := os.Getenv("JAVA_HOME"); jh != "" {
		p := filepath.Join(jh, "bin", "java")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("testenv: Neo4j needs Java 17 or 21 (JAVA_HOME or java on PATH): %w", err)
	}
	return p, nil
}

// isFile reports whether path names a regular file.
func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}
