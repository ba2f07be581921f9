package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/testenv"
)

// envComposeTest, when 1, runs TestCompose: it needs a Docker engine, the
// Compose v2 CLI plugin and the images docker-compose.yml names (on a
// machine without Docker Hub: scripts/images.sh build and env). .ci/run
// sets it in its container phase.
const envComposeTest = "RAG_COMPOSE_TEST"

// TestCompose runs docker-compose.yml as a user would, with the docker
// compose CLI: `up -d --wait` until every service is healthy, a hybrid
// query (vector, keyword and graph) answered on the published port, Neo4j
// paused (every answer still 200 with the graph dropped, the breaker open)
// and unpaused (the graph back), the replicas profile's ragd-2 joining
// and answering, and `down -v` leaving no container, volume or network.
// The project has a name and ports of its own, so it runs beside a user's.
func TestCompose(t *testing.T) {
	if os.Getenv(envComposeTest) != "1" {
		t.Skipf("runs only with %s=1 (a Docker engine, docker compose and the images; see docs/services.md)", envComposeTest)
	}
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	project := "ragd-e2e-" + strings.TrimPrefix(randomTag(t), "crash")
	ports := map[string]int{}
	for _, v := range []string{"RAGD_PORT", "RAGD_PORT_2", "RAG_PG_PORT", "RAG_NEO4J_BOLT_PORT", "RAG_NEO4J_HTTP_PORT"} {
		ports[v] = freeLoopbackPort(t)
	}
	const adminKey = "compose-e2e-admin-key-0123456789"
	env := append(os.Environ(), "RAGD_ADMIN_KEY="+adminKey)
	for v, p := range ports {
		env = append(env, fmt.Sprintf("%s=%d", v, p))
	}
	compose := func(timeout time.Duration, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "docker", append([]string{"compose", "-p", project, "-f", "docker-compose.yml"}, args...)...)
		cmd.Dir, cmd.Env = root, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	if out, err := compose(time.Minute, "version"); err != nil {
		t.Fatalf("docker compose version: %v: %s (build the plugin: scripts/images.sh compose)", err, out)
	}
	t.Cleanup(func() {
		if out, err := compose(5*time.Minute, "--profile", "replicas", "down", "-v", "--remove-orphans"); err != nil {
			t.Logf("cleanup: down -v: %v: %s", err, out)
		}
	})

	begin := time.Now()
	if out, err := compose(10*time.Minute, "up", "-d", "--wait"); err != nil {
		logs, _ := compose(time.Minute, "logs", "--tail", "40")
		t.Fatalf("up -d --wait: %v: %s\nlogs:\n%s", err, out, logs)
	}
	t.Logf("up -d --wait: every service healthy in %v", time.Since(begin).Round(time.Millisecond))
	checkLoopbackOnly(t, compose)

	ragd := newClient(fmt.Sprintf("127.0.0.1:%d", ports["RAGD_PORT"]), adminKey)
	defer ragd.close()
	ctx := context.Background()
	docs := []document{
		{ID: "compose-1", Title: "Supersonic wing flutter", Text: "Flutter of a swept wing at supersonic speeds in the wind tunnel", Entities: []string{"wing flutter", "wind tunnel"}},
		{ID: "compose-2", Title: "Boundary layer transition", Text: "Transition of the boundary layer on a flat plate", Entities: []string{"boundary layer"}},
	}
	var resp batchResponse
	if st, body, err := ragd.call(ctx, http.MethodPost, "/v1/documents?wait=60s", upsertRequest{Documents: docs}, &resp); err != nil || st != http.StatusOK || resp.OK != len(docs) {
		t.Fatalf("POST /v1/documents: status %d, %v: %.500s", st, err, body)
	}

	// deploy/rag.servers.yaml leaves the graph out (weight 0): the query
	// asks for it, so the answer is a hybrid of all three.
	on, one := true, 1.0
	hybrid := queryRequest{Text: "wing flutter in the wind tunnel", Limit: 5,
		Sources: map[string]sourceOptions{"graph": {Enabled: &on, Weight: &one}}}
	query := func(c *client) (int, queryResult, []byte) {
		t.Helper()
		var res queryResult
		st, body, err := c.call(ctx, http.MethodPost, "/v1/query", hybrid, &res)
		if err != nil {
			t.Fatalf("POST /v1/query: %v", err)
		}
		return st, res, body
	}
	// The first graph queries of a fresh Neo4j (plans, JIT) can outlast
	// the servers configuration's 800 ms source timeout on a loaded
	// machine: query until every source answers, each answer a 200 with
	// the right document first, for at most two minutes.
	var (
		st   int
		res  queryResult
		body []byte
	)
	begin = time.Now()
	for tries := 1; ; tries++ {
		st, res, body = query(ragd)
		if st != http.StatusOK || len(res.Hits) == 0 || res.Hits[0].ID != "compose-1" {
			t.Fatalf("hybrid query: status %d, want compose-1 first: %.500s", st, body)
		}
		if why := checkHealthy(res); why == "" {
			t.Logf("hybrid query: every source answered (query %d, %v after the first)", tries, time.Since(begin).Round(time.Millisecond))
			break
		} else if time.Since(begin) > 2*time.Minute {
			t.Fatalf("hybrid query: after 2 minutes and %d queries: %s", tries, why)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, n := range sourceNames {
		if res.Sources[n].Returned == 0 {
			t.Errorf("hybrid query: source %s answered no hit", n)
		}
	}

	// Neo4j hung: every answer 200 with the graph dropped, until the
	// breaker has opened.
	if out, err := compose(time.Minute, "pause", "neo4j"); err != nil {
		t.Fatalf("pause neo4j: %v: %s", err, out)
	}
	deadline := time.Now().Add(2 * time.Minute)
	n := 0
	for open := false; !open; n++ {
		if time.Now().After(deadline) {
			t.Fatalf("the graph breaker did not open within 2 minutes of pausing Neo4j (%d queries)", n)
		}
		st, res, body := query(ragd)
		if st != http.StatusOK {
			t.Fatalf("query with Neo4j paused: status %d: %.300s", st, body)
		}
		if why := checkDropped(res, "graph"); why != "" {
			t.Fatalf("query with Neo4j paused: %s", why)
		}
		open = res.Sources["graph"].Status == "circuit_open"
	}
	t.Logf("Neo4j paused: %d queries, all 200 with the graph dropped, until its breaker opened", n)

	if out, err := compose(time.Minute, "unpause", "neo4j"); err != nil {
		t.Fatalf("unpause neo4j: %v: %s", err, out)
	}
	begin = time.Now()
	for {
		if time.Since(begin) > 2*time.Minute {
			t.Fatalf("the graph did not answer again within 2 minutes of unpausing Neo4j")
		}
		st, res, body := query(ragd)
		if st != http.StatusOK {
			t.Fatalf("query after unpausing Neo4j: status %d: %.300s", st, body)
		}
		if res.Sources["graph"].Status == "ok" && !res.Partial {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("Neo4j unpaused: the graph answered again after %v, through the breaker's probes", time.Since(begin).Round(time.Millisecond))

	// The replicas profile: ragd-2 starts once ragd is healthy, fills its
	// own keyword index from the record and answers the same query.
	begin = time.Now()
	if out, err := compose(10*time.Minute, "--profile", "replicas", "up", "-d", "--wait"); err != nil {
		logs, _ := compose(time.Minute, "logs", "--tail", "40", "ragd-2")
		t.Fatalf("--profile replicas up -d --wait: %v: %s\nlogs:\n%s", err, out, logs)
	}
	t.Logf("ragd-2 healthy in %v", time.Since(begin).Round(time.Millisecond))
	checkLoopbackOnly(t, compose)
	ragd2 := newClient(fmt.Sprintf("127.0.0.1:%d", ports["RAGD_PORT_2"]), adminKey)
	defer ragd2.close()
	st, res, body = query(ragd2)
	if st != http.StatusOK || len(res.Hits) == 0 || res.Hits[0].ID != "compose-1" || res.Sources["keyword"].Status != "ok" || res.Sources["keyword"].Returned == 0 {
		t.Fatalf("query on ragd-2: status %d, want compose-1 first with keyword hits: %.500s", st, body)
	}

	// down -v: nothing of the project is left.
	if out, err := compose(5*time.Minute, "--profile", "replicas", "down", "-v", "--remove-orphans"); err != nil {
		t.Fatalf("down -v: %v: %s", err, out)
	}
	filter := "label=com.docker.compose.project=" + project
	for _, what := range [][]string{{"ps", "-aq"}, {"volume", "ls", "-q"}, {"network", "ls", "-q"}} {
		out, err := exec.Command("docker", append(what, "--filter", filter)...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %v: %v: %s", what, err, out)
		}
		if left := strings.TrimSpace(string(out)); left != "" {
			t.Errorf("after down -v, docker %s still lists: %s", strings.Join(what, " "), left)
		}
	}
}

// checkLoopbackOnly requires every published port of the project to be
// bound to 127.0.0.1.
func checkLoopbackOnly(t *testing.T, compose func(time.Duration, ...string) (string, error)) {
	t.Helper()
	out, err := compose(time.Minute, "ps", "--format", "json")
	if err != nil {
		t.Fatalf("ps: %v: %s", err, out)
	}
	published := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var c struct {
			Service    string
			Publishers []struct {
				URL           string
				PublishedPort int
			}
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("ps --format json: %v: %q", err, line)
		}
		for _, p := range c.Publishers {
			if p.PublishedPort == 0 {
				continue // exposed, not published
			}
			published++
			if p.URL != "127.0.0.1" {
				t.Errorf("%s publishes port %d on %q, want 127.0.0.1 only", c.Service, p.PublishedPort, p.URL)
			}
		}
	}
	if published == 0 {
		t.Errorf("ps lists no published port: %s", out)
	}
}

// freeLoopbackPort returns a TCP port free on 127.0.0.1 just now.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
