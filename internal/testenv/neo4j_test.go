package testenv_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/ragd/ragd/internal/testenv"
)

func neo4jDriver(t *testing.T, c testenv.Neo4jConn) neo4j.DriverWithContext {
	t.Helper()
	d, err := neo4j.NewDriverWithContext(c.URI, neo4j.BasicAuth(c.User, c.Password, ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	return d
}

func TestNeo4jSharedServerAnswers(t *testing.T) {
	conn := testenv.Neo4j(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := neo4jDriver(t, conn)
	id := t.Name() + "-" + time.Now().Format(time.RFC3339Nano)
	t.Cleanup(func() {
		_, _ = neo4j.ExecuteQuery(context.Background(), d, "MATCH (n:TestenvProbe {id: $id}) DELETE n",
			map[string]any{"id": id}, neo4j.EagerResultTransformer)
	})
	if _, err := neo4j.ExecuteQuery(ctx, d, "CREATE (:TestenvProbe {id: $id, v: 42})",
		map[string]any{"id": id}, neo4j.EagerResultTransformer); err != nil {
		t.Fatal(err)
	}
	res, err := neo4j.ExecuteQuery(ctx, d, "MATCH (n:TestenvProbe {id: $id}) RETURN n.v AS v",
		map[string]any{"id": id}, neo4j.EagerResultTransformer)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 1 {
		t.Fatalf("%d records, want 1", len(res.Records))
	}
	if v, _ := res.Records[0].Get("v"); v != int64(42) {
		t.Errorf("v = %v, want 42", v)
	}
}

func countProbes(ctx context.Context, d neo4j.DriverWithContext) (int64, error) {
	res, err := neo4j.ExecuteQuery(ctx, d, "MATCH (n:TestenvProbe) RETURN count(n) AS c",
		nil, neo4j.EagerResultTransformer)
	if err != nil {
		return 0, err
	}
	c, _ := res.Records[0].Get("c")
	return c.(int64), nil
}

func TestDedicatedNeo4jStopStartKeepsData(t *testing.T) {
	s := testenv.DedicatedNeo4j(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	d := neo4jDriver(t, s.Neo4jConn)
	for i := 0; i < 3; i++ {
		if _, err := neo4j.ExecuteQuery(ctx, d, "CREATE (:TestenvProbe {i: $i})",
			map[string]any{"i": i}, neo4j.EagerResultTransformer); err != nil {
			t.Fatal(err)
		}
	}

	if err := s.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	vctx, vcancel := context.WithTimeout(ctx, 10*time.Second)
	err := d.VerifyConnectivity(vctx)
	vcancel()
	if err == nil {
		t.Fatal("VerifyConnectivity succeeded on a stopped server")
	}
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(s.URI, "bolt://"), 5*time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial a stopped server: %v, want connection refused", err)
	}

	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	// The same driver (same URI) works again and the data survived.
	n, err := countProbes(ctx, d)
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if n != 3 {
		t.Errorf("%d nodes after restart, want 3", n)
	}
}
