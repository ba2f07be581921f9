package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/integration"
)

// Environment variables read by this package.
const (
	EnvPGDSN         = "RAG_TEST_PG_DSN"
	EnvPGBin         = "RAG_TEST_PG_BIN"
	EnvNeo4jURI      = "RAG_TEST_NEO4J_URI"
	EnvNeo4jUser     = "RAG_TEST_NEO4J_USER"
	EnvNeo4jPassword = "RAG_TEST_NEO4J_PASSWORD"
	EnvNeo4jHome     = "RAG_TEST_NEO4J_HOME"
	EnvEmbedderURL   = "RAG_TEST_EMBEDDER_URL"
	EnvEmbedderModel = "RAG_TEST_EMBEDDER_MODEL"
	EnvEmbedderDim   = "RAG_TEST_EMBEDDER_DIM"
	// EnvNoDocker, when set to 1, disables the Docker fallback.
	EnvNoDocker = "RAG_TEST_NO_DOCKER"
)

// startTimeout bounds how long a server may take to answer after start.
// Neo4j on a busy two-core machine takes tens of seconds.
const startTimeout = 3 * time.Minute

// stopTimeout bounds a graceful shutdown before the process is killed.
const stopTimeout = time.Minute

// servicesHint says how to get every service natively.
const servicesHint = "run `eval \"$(scripts/services.sh env)\"` after `scripts/services.sh up`"

// unavailable skips tb, or fails it when RAG_REQUIRE_INTEGRATION=1, for a
// service that Docker can also provide.
func unavailable(tb testing.TB, what, hint string) {
	tb.Helper()
	integration.SkipOrFail(tb, what, hint+"; "+servicesHint+", or make a Docker engine reachable")
}

// uniqueName returns prefix + a sanitized form of the test name + a random
// suffix, lower case, at most max bytes, made of [a-z0-9_].
func uniqueName(prefix, testName string, max int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(testName) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	suffix := "_" + randomHex(4)
	name := b.String()
	if room := max - len(prefix) - len(suffix); len(name) > room {
		name = name[:room]
	}
	return prefix + name + suffix
}

func randomHex(n int) string {
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		panic(fmt.Sprintf("testenv: random: %v", err))
	}
	return hex.EncodeToString(buf)
}

// freePort asks the kernel for a free TCP port on the loopback interface.
func freePort() (int, error) {
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// freePorts asks the kernel for n distinct free TCP ports on the loopback
// interface: every listener stays open until all are chosen, so no port
// is handed out twice.
func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("testenv: free port: %w", err)
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// tail returns the last n bytes of the file at path, for error messages.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := st.Size() - n
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return ""
	}
	return string(buf)
}
