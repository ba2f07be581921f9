package testenv

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Container images used when no environment variable names a server.
const (
	postgresImage = "pgvector/pgvector:pg16"
	neo4jImage    = "neo4j:5"
	dockerPGPass  = "ragd-test-password"
)

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

// bindPort publishes containerPort on hostPort (0: any free port).
func bindPort(containerPort string, hostPort int) testcontainers.CustomizeRequestOption {
	return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
		if hostPort == 0 {
			return
		}
		hc.PortBindings = network.PortMap{
			network.MustParsePort(containerPort): {{HostPort: fmt.Sprint(hostPort)}},
		}
	})
}

func runPostgresContainer(ctx context.Context, hostPort int) (*testcontainers.DockerContainer, string, error) {
	c, err := testcontainers.Run(ctx, postgresImage,
		testcontainers.WithEnv(map[string]string{"POSTGRES_PASSWORD": dockerPGPass}),
		testcontainers.WithExposedPorts("5432/tcp"),
		testcontainers.WithCmdArgs("-c", "fsync=off"),
		bindPort("5432/tcp", hostPort),
		testcontainers.WithWaitStrategy(wait.ForListeningPort("5432/tcp").WithStartupTimeout(3*time.Minute)),
	)
	if err != nil {
		return c, "", fmt.Errorf("testenv: start %s: %w", postgresImage, err)
	}
	host, err := c.Host(ctx)
	if err != nil {
		return c, "", fmt.Errorf("testenv: %s host: %w", postgresImage, err)
	}
	port, err := c.MappedPort(ctx, "5432/tcp")
	if err != nil {
		return c, "", fmt.Errorf("testenv: %s port: %w", postgresImage, err)
	}
	dsn := fmt.Sprintf("postgres://postgres:%s@%s/postgres?sslmode=disable",
		dockerPGPass, net.JoinHostPort(host, port.Port()))
	if err := waitReady(ctx, pingPostgres(dsn)); err != nil {
		return c, "", fmt.Errorf("testenv: %s not ready: %w", postgresImage, err)
	}
	return c, dsn, nil
}

func runNeo4jContainer(ctx context.Context, boltPort int) (*testcontainers.DockerContainer, Neo4jConn, error) {
	c, err := testcontainers.Run(ctx, neo4jImage,
		testcontainers.WithEnv(map[string]string{
			"NEO4J_AUTH":                         "neo4j/" + dedicatedNeo4jPassword,
			"NEO4J_server_memory_heap_max__size": "512m",
			"NEO4J_server_memory_pagecache_size": "64m",
		}),
		testcontainers.WithExposedPorts("7687/tcp"),
		bindPort("7687/tcp", boltPort),
		testcontainers.WithWaitStrategy(wait.ForListeningPort("7687/tcp").WithStartupTimeout(3*time.Minute)),
	)
	if err != nil {
		return c, Neo4jConn{}, fmt.Errorf("testenv: start %s: %w", neo4jImage, err)
	}
	host, err := c.Host(ctx)
	if err != nil {
		return c, Neo4jConn{}, fmt.Errorf("testenv: %s host: %w", neo4jImage, err)
	}
	port, err := c.MappedPort(ctx, "7687/tcp")
	if err != nil {
		return c, Neo4jConn{}, fmt.Errorf("testenv: %s port: %w", neo4jImage, err)
	}
	conn := Neo4jConn{URI: "bolt://" + net.JoinHostPort(host, port.Port()), User: "neo4j", Password: dedicatedNeo4jPassword}
	if err := waitReady(ctx, pingNeo4j(conn)); err != nil {
		return c, Neo4jConn{}, fmt.Errorf("testenv: %s not ready: %w", neo4jImage, err)
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

// containerCtl stops and starts a dedicated container; its ports are bound
// to fixed host ports, so a restart keeps the address.
type containerCtl struct {
	c     *testcontainers.DockerContainer
	ready func(context.Context) error
}

func (d *containerCtl) stop(ctx context.Context) error {
	timeout := 30 * time.Second
	if err := d.c.Stop(ctx, &timeout); err != nil {
		return fmt.Errorf("testenv: stop container: %w", err)
	}
	return nil
}

func (d *containerCtl) kill(ctx context.Context) error {
	timeout := time.Duration(0) // SIGKILL at once
	if err := d.c.Stop(ctx, &timeout); err != nil {
		return fmt.Errorf("testenv: kill container: %w", err)
	}
	return nil
}

func (d *containerCtl) start(ctx context.Context) error {
	if err := d.c.Start(ctx); err != nil {
		return fmt.Errorf("testenv: start container: %w", err)
	}
	return waitReady(ctx, d.ready)
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
