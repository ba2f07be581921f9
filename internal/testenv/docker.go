package testenv

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Environment variables of the container path.
const (
	// EnvTestenv chooses where servers come from: "containers" starts every
	// PostgreSQL and Neo4j server as a container (testcontainers-go), even
	// where RAG_TEST_* variables name native servers, and fails when no
	// Docker engine answers; unset or "processes", the variables come first
	// and a reachable Docker engine is only the fallback.
	EnvTestenv = "RAG_TESTENV"
	// EnvPGImage and EnvNeo4jImage name the images (the same variables
	// docker-compose.yml reads); scripts/images.sh env points them at the
	// images it builds from Debian's packages.
	EnvPGImage    = "RAG_PG_IMAGE"
	EnvNeo4jImage = "RAG_NEO4J_IMAGE"
)

// The images used when EnvPGImage and EnvNeo4jImage are unset: Docker Hub's.
const (
	DefaultPGImage    = "pgvector/pgvector:pg17"
	DefaultNeo4jImage = "neo4j:5.26"
	dockerPGPass      = "ragd-test-password"
)

// Testenv modes (EnvTestenv).
const (
	modeProcesses  = "processes"
	modeContainers = "containers"
)

// useContainers reports whether EnvTestenv asks for containers; any value
// but the two modes fails tb.
func useContainers(tb testing.TB) bool {
	tb.Helper()
	switch m := os.Getenv(EnvTestenv); m {
	case "", modeProcesses:
		return false
	case modeContainers:
		if !dockerAvailable() {
			tb.Fatalf("testenv: %s=%s but no Docker engine answers on %s: start one or set DOCKER_HOST (scripts/images.sh engine up)",
				EnvTestenv, m, dockerWhere())
		}
		return true
	default:
		tb.Fatalf("testenv: %s=%q: want %q or %q", EnvTestenv, m, modeProcesses, modeContainers)
		return false
	}
}

func pgImage() string    { return envOr(EnvPGImage, DefaultPGImage) }
func neo4jImage() string { return envOr(EnvNeo4jImage, DefaultNeo4jImage) }

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

var (
	dockerOnce sync.Once
	dockerOK   bool
)

// dockerAvailable reports, quickly and once per process, whether a Docker
// engine answers /_ping on DOCKER_HOST or a usual socket. It never hangs:
// each candidate gets a two-second deadline.
func dockerAvailable() bool {
	if os.Getenv(EnvNoDocker) == "1" {
		return false
	}
	dockerOnce.Do(func() {
		for _, host := range dockerCandidates() {
			if pingDocker(host) {
				dockerOK = true
				return
			}
		}
	})
	return dockerOK
}

// dockerWhere names the Docker hosts tried, for messages.
func dockerWhere() string {
	if c := dockerCandidates(); len(c) > 0 {
		return strings.Join(c, ", ")
	}
	return "DOCKER_HOST (unset) or the usual sockets (none exists)"
}

func dockerCandidates() []string {
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return []string{h}
	}
	var c []string
	add := func(path string) {
		if _, err := os.Stat(path); err == nil {
			c = append(c, "unix://"+path)
		}
	}
	add("/var/run/docker.sock")
	if home, err := os.UserHomeDir(); err == nil {
		add(filepath.Join(home, ".docker", "run", "docker.sock"))
		add(filepath.Join(home, ".docker", "desktop", "docker.sock"))
	}
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		add(filepath.Join(rt, "docker.sock"))
	}
	return c
}

// pingDocker sends GET /_ping to a unix:// or tcp:// Docker host.
func pingDocker(host string) bool {
	u, err := url.Parse(host)
	if err != nil {
		return false
	}
	var network, addr string
	switch u.Scheme {
	case "unix":
		network, addr = "unix", u.Path
	case "tcp", "http":
		network, addr = "tcp", u.Host
	default:
		return false // ssh:// and TLS setups: leave to explicit env vars
	}
	conn, err := net.DialTimeout(network, addr, 2*time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := fmt.Fprint(conn, "GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n"); err != nil {
		return false
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// shared containers live as long as the test process; testcontainers' reaper
// removes them when it exits.
var (
	sharedMu     sync.Mutex
	sharedPG     string
	sharedPGErr  error
	sharedNeo    *Neo4jConn
	sharedNeoErr error
)

func sharedDockerPostgres() (string, error) {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedPG != "" || sharedPGErr != nil {
		return sharedPG, sharedPGErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, dsn, err := runPostgresContainer(ctx, 0)
	if err != nil {
		sharedPGErr = err
		return "", err
	}
	sharedPG = dsn
	return dsn, nil
}

func sharedDockerNeo4j() (Neo4jConn, error) {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedNeoErr != nil {
		return Neo4jConn{}, sharedNeoErr
	}
	if sharedNeo != nil {
		return *sharedNeo, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, conn, err := runNeo4jContainer(ctx, 0)
	if err != nil {
		sharedNeoErr = err
		return Neo4jConn{}, err
	}
	sharedNeo = &conn
	return conn, nil
}

// publish publishes containerPort on 127.0.0.1 only: on hostPort, or on a
// port the engine chooses when hostPort is 0.
func publish(containerPort string, hostPort int) testcontainers.CustomizeRequestOption {
	return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
		hp := ""
		if hostPort != 0 {
			hp = fmt.Sprint(hostPort)
		}
		hc.PortBindings = network.PortMap{
			network.MustParsePort(containerPort): {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: hp}},
		}
	})
}

// runContainer starts image with opts, publishing port on 127.0.0.1
// (hostPort, or any when 0), and returns it with its host address. The
// container is removed when the test process ends, however it ends.
func runContainer(ctx context.Context, image, port string, hostPort int, opts ...testcontainers.ContainerCustomizer) (*testcontainers.DockerContainer, string, error) {
	setupTestcontainers()
	opts = append(opts,
		testcontainers.WithExposedPorts(port),
		publish(port, hostPort),
		testcontainers.WithLabels(map[string]string{containerLabel: "1"}),
		testcontainers.WithWaitStrategyAndDeadline(startTimeout, wait.ForListeningPort(port).WithStartupTimeout(startTimeout)),
	)
	c, err := testcontainers.Run(ctx, image, opts...)
	if c != nil {
		reapAtExit(c.GetContainerID())
	}
	if err != nil {
		return c, "", fmt.Errorf("testenv: start %s: %w", image, err)
	}
	mapped, err := c.MappedPort(ctx, port)
	if err != nil {
		return c, "", fmt.Errorf("testenv: %s port %s: %w", image, port, err)
	}
	return c, net.JoinHostPort("127.0.0.1", mapped.Port()), nil
}

func runPostgresContainer(ctx context.Context, hostPort int) (*testcontainers.DockerContainer, string, error) {
	image := pgImage()
	c, addr, err := runContainer(ctx, image, "5432/tcp", hostPort,
		testcontainers.WithEnv(map[string]string{"POSTGRES_PASSWORD": dockerPGPass}),
		testcontainers.WithCmdArgs("-c", "fsync=off", "-c", "max_connections=100"),
	)
	if err != nil {
		return c, "", err
	}
	dsn := fmt.Sprintf("postgres://postgres:%s@%s/postgres?sslmode=disable", dockerPGPass, addr)
	if err := waitReady(ctx, pingPostgres(dsn)); err != nil {
		return c, "", fmt.Errorf("testenv: %s not ready: %w", image, err)
	}
	return c, dsn, nil
}

func runNeo4jContainer(ctx context.Context, boltPort int) (*testcontainers.DockerContainer, Neo4jConn, error) {
	image := neo4jImage()
	c, addr, err := runContainer(ctx, image, "7687/tcp", boltPort,
		testcontainers.WithEnv(map[string]string{
			"NEO4J_AUTH":                                     "neo4j/" + dedicatedNeo4jPassword,
			"NEO4J_server_memory_heap_initial__size":         "512m",
			"NEO4J_server_memory_heap_max__size":             "512m",
			"NEO4J_server_memory_pagecache_size":             "64m",
			"NEO4J_dbms_usage__report_enabled":               "false",
			"NEO4J_db_tx__log_preallocate":                   "false",
			"NEO4J_server_config_strict__validation_enabled": "false",
			// C1-only JIT: starts 2-4x faster on a busy two-core machine,
			// as scripts/services.sh runs it.
			"NEO4J_server_jvm_additional": "-XX:TieredStopAtLevel=1",
			// Bolt's network layer otherwise waits twice 5 s for quiet on
			// shutdown.
			"NEO4J_internal_dbms_bolt_netty__server__shutdown__quiet__period": "0",
			"NEO4J_internal_dbms_bolt_netty__server__shutdown__timeout":       "1s",
		}),
	)
	if err != nil {
		return c, Neo4jConn{}, err
	}
	conn := Neo4jConn{URI: "bolt://" + addr, User: "neo4j", Password: dedicatedNeo4jPassword}
	if err := waitReady(ctx, pingNeo4j(conn)); err != nil {
		return c, Neo4jConn{}, fmt.Errorf("testenv: %s not ready: %w", image, err)
	}
	return c, conn, nil
}

// waitReady polls probe until it succeeds or ctx (bounded by startTimeout)
// ends.
func waitReady(ctx context.Context, probe func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		err := probe(pctx)
		pcancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last probe: %v)", context.Cause(ctx), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// containerCtl stops, starts, pauses and kills a dedicated container; its
// ports are bound to fixed host ports, so a restart keeps the address.
type containerCtl struct {
	c     *testcontainers.DockerContainer
	ready func(context.Context) error

	mu     sync.Mutex
	paused bool
}

// thawLocked unpauses a paused container (a frozen container neither stops
// nor dies). d.mu must be held.
func (d *containerCtl) thawLocked(ctx context.Context) error {
	if !d.paused {
		return nil
	}
	cli, err := dockerClient(ctx)
	if err != nil {
		return err
	}
	if _, err := cli.ContainerUnpause(ctx, d.c.GetContainerID(), client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("testenv: unpause container: %w", err)
	}
	d.paused = false
	return nil
}

func (d *containerCtl) stop(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.thawLocked(ctx); err != nil {
		return err
	}
	timeout := 30 * time.Second
	if err := d.c.Stop(ctx, &timeout); err != nil {
		return fmt.Errorf("testenv: stop container: %w", err)
	}
	return nil
}

func (d *containerCtl) kill(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.thawLocked(ctx); err != nil {
		return err
	}
	timeout := time.Duration(0) // SIGKILL at once
	if err := d.c.Stop(ctx, &timeout); err != nil {
		return fmt.Errorf("testenv: kill container: %w", err)
	}
	return nil
}

func (d *containerCtl) start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.c.Start(ctx); err != nil {
		return fmt.Errorf("testenv: start container: %w", err)
	}
	return waitReady(ctx, d.ready)
}

// pause freezes every process of the container (docker pause): its port
// still accepts connections, which then get no answer, as a hung server.
func (d *containerCtl) pause(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.paused {
		return nil
	}
	cli, err := dockerClient(ctx)
	if err != nil {
		return err
	}
	if _, err := cli.ContainerPause(ctx, d.c.GetContainerID(), client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("testenv: pause container: %w", err)
	}
	d.paused = true
	return nil
}

func (d *containerCtl) unpause(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.thawLocked(ctx); err != nil {
		return err
	}
	return waitReady(ctx, d.ready)
}

var (
	dockerCliOnce sync.Once
	dockerCli     *testcontainers.DockerClient
	dockerCliErr  error
)

// dockerClient is the engine's API client (testcontainers-go's), for what
// its container type does not offer (pause).
func dockerClient(ctx context.Context) (*testcontainers.DockerClient, error) {
	dockerCliOnce.Do(func() {
		dockerCli, dockerCliErr = testcontainers.NewDockerClientWithOpts(ctx)
		if dockerCliErr != nil {
			dockerCliErr = fmt.Errorf("testenv: docker client: %w", dockerCliErr)
		}
	})
	return dockerCli, dockerCliErr
}

// containerLabel marks the containers testenv starts
// (docker ps --filter label=org.ragd.testenv).
const containerLabel = "org.ragd.testenv"

var setupOnce sync.Once

// setupTestcontainers turns off testcontainers-go's reaper (Ryuk), whose
// image comes from Docker Hub, unless the environment says otherwise
// (reapAtExit does its work with the docker command), and tells it that
// published ports are on 127.0.0.1.
func setupTestcontainers() {
	setupOnce.Do(func() {
		if _, ok := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !ok {
			_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		}
		// Ports are published on 127.0.0.1 only: that is where they are.
		// (testcontainers-go otherwise guesses, and inside a container, or
		// where it thinks it is in one, it picks the default gateway.)
		_ = os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
	})
}

// reaperPipes holds the write ends of the reapers' pipes for the life of
// the process: the kernel closes them when it exits, however it exits.
var (
	reaperMu    sync.Mutex
	reaperPipes []*os.File
)

// reapAtExit removes the container once the test process has ended, even
// when it was killed: a detached shell waits for the end of a pipe whose
// write end only this process holds, then runs `docker rm -f -v`. Tests
// remove their dedicated containers at cleanup already; this covers the
// shared ones (which live as long as the process) and aborted runs.
// Without a docker command on PATH it does nothing.
func reapAtExit(id string) {
	docker, err := exec.LookPath("docker")
	if err != nil || id == "" {
		return
	}
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", `read -r _; exec "$0" rm -f -v "$1" >/dev/null 2>&1`, docker, id)
	cmd.Stdin = r
	cmd.SysProcAttr = detachedAttr()
	if err := cmd.Start(); err != nil {
		w.Close()
		return
	}
	_ = cmd.Process.Release()
	reaperMu.Lock()
	reaperPipes = append(reaperPipes, w)
	reaperMu.Unlock()
}

func dockerDedicatedPostgres(tb testing.TB) (*Server, error) {
	tb.Helper()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, dsn, err := runPostgresContainer(ctx, port)
	if c != nil {
		testcontainers.CleanupContainer(tb, c)
	}
	if err != nil {
		return nil, err
	}
	if err := createVectorExtension(ctx, dsn); err != nil {
		return nil, err
	}
	return &Server{DSN: dsn, ctl: &containerCtl{c: c, ready: pingPostgres(dsn)}}, nil
}

func dockerDedicatedNeo4j(tb testing.TB) (*Neo4jServer, error) {
	tb.Helper()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, conn, err := runNeo4jContainer(ctx, port)
	if c != nil {
		testcontainers.CleanupContainer(tb, c)
	}
	if err != nil {
		return nil, err
	}
	return &Neo4jServer{Neo4jConn: conn, ctl: &containerCtl{c: c, ready: pingNeo4j(conn)}}, nil
}
