package graph_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/ragd/ragd/backends/vector"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/spi"
)

// racingRecord is one replica's PostgreSQL record whose first ApplyLease
// waits at a barrier for the other replica's first one, so the two ask
// PostgreSQL for the lease at once.
type racingRecord struct {
	*vector.Backend
	barrier *sync.WaitGroup
	once    sync.Once
}

func (r *racingRecord) ApplyLease(ctx context.Context, name string) (bool, error) {
	r.once.Do(func() { r.barrier.Done(); r.barrier.Wait() })
	return r.Backend.ApplyLease(ctx, name)
}

// countingApplier counts, per change-log sequence, how many times any
// replica applied the change to Neo4j, and which replica applied.
type countingApplier struct {
	spi.ChangeApplier
	who   string
	mu    *sync.Mutex
	seqs  map[uint64]int
	calls map[string]int
}

func (c *countingApplier) ApplyChanges(ctx context.Context, log string, changes []spi.Change, through uint64) error {
	if err := c.ChangeApplier.ApplyChanges(ctx, log, changes, through); err != nil {
		return err
	}
	if len(changes) == 0 {
		return nil // a checkpoint move (a check's repair), nothing applied
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[c.who]++
	for _, ch := range changes {
		c.seqs[ch.Seq]++
	}
	return nil
}

// TestReplicasApplyToNeo4jOnce runs two replicas (two ingest pipelines,
// each with its own connections) on one real PostgreSQL record and one
// real Neo4j, racing for the graph's apply lease at start (a barrier
// releases both first requests together). Writes go through both
// replicas, and both run a check with repair meanwhile; each change of the
// log is applied to Neo4j exactly once, by one replica, and both replicas
// report the graph current.
func TestReplicasApplyToNeo4jOnce(t *testing.T) {
	dsn := testenv.Postgres(t)
	conn := testenv.Neo4j(t)
	ctx := context.Background()
	prefix := uniq(t)
	var barrier sync.WaitGroup
	barrier.Add(2)
	var mu sync.Mutex
	seqs, calls := map[uint64]int{}, map[string]int{}
	var pipes []*ingest.Pipeline
	var logID string
	for _, who := range []string{"a", "b"} {
		rec, err := vector.Open(ctx, vector.Config{DSN: dsn, Dimension: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rec.Close() })
		ls, err := rec.LogState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		logID = ls.ID
		g := &countingApplier{ChangeApplier: openBackend(t, conn, nil), who: who, mu: &mu, seqs: seqs, calls: calls}
		p, err := ingest.New(ingest.Config{
			Record:    &racingRecord{Backend: rec, barrier: &barrier},
			Derived:   []ingest.NamedApplier{{Name: spi.SourceGraph, Applier: g, Shared: true}},
			Dimension: 4,
			Poll:      10 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); p.Run(runCtx) }()
		t.Cleanup(func() { cancel(); <-done })
		pipes = append(pipes, p)
	}
	t.Cleanup(func() { cleanupReplicaLog(t, conn, logID, prefix) })

	const batches, per = 6, 25
	var ids []string
	for i := range batches {
		var docs []spi.Document
		for j := range per {
			id := fmt.Sprintf("%s-%d-%d", prefix, i, j)
			ids = append(ids, id)
			docs = append(docs, spi.Document{ID: id, Text: "text " + id, Vector: []float32{1, float32(i), float32(j), 1},
				Entities: []string{prefix + "-e" + fmt.Sprint(j%5), prefix + "-f" + fmt.Sprint(i)}})
		}
		for _, r := range pipes[i%2].Upsert(ctx, docs, ingest.WriteOptions{}) {
			if r.Status != ingest.StatusOK {
				t.Fatalf("upsert %s: %+v", r.ID, r)
			}
		}
	}
	// A rewrite and a delete, through the other replica each.
	if r := pipes[1].Upsert(ctx, []spi.Document{{ID: ids[0], Text: "rewritten", Vector: []float32{2, 0, 0, 1}}}, ingest.WriteOptions{}); r[0].Status != ingest.StatusOK {
		t.Fatalf("rewrite: %+v", r[0])
	}
	if r := pipes[0].Delete(ctx, []string{ids[1]}, ingest.WriteOptions{}); r[0].Status != ingest.StatusOK {
		t.Fatalf("delete: %+v", r[0])
	}
	head := uint64(batches*per + 2)
	// A check with repair on each replica at once, while the holder may
	// still be applying: the follower's waits for the holder's checkpoint
	// instead of applying the same entries (ingest/check.go), and neither
	// finds a difference.
	reps := make([]ingest.CheckReport, len(pipes))
	errs := make([]error, len(pipes))
	var checks sync.WaitGroup
	for i, p := range pipes {
		checks.Go(func() { reps[i], errs[i] = p.Check(ctx, true) })
	}
	checks.Wait()
	for i := range pipes {
		if errs[i] != nil {
			t.Fatalf("check on replica %d: %v", i, errs[i])
		}
		if g := reps[i].Stores[0]; g.Error != "" || g.Differences() != 0 || g.Repaired != 0 {
			t.Fatalf("check on replica %d: %+v", i, g)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, p := range pipes {
		for {
			st, err := p.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.Head >= head && st.Stores[0].Behind == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the graph is not current on a replica after 2 minutes: %+v", st)
			}
			time.Sleep(20 * time.Millisecond) // polling a condition, not timing the test
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 1 {
		t.Errorf("replicas that applied to Neo4j: %v, want exactly one (the lease holder)", calls)
	}
	for seq := uint64(1); seq <= head; seq++ {
		if seqs[seq] != 1 {
			t.Errorf("change %d applied to Neo4j %d times, want exactly once", seq, seqs[seq])
		}
	}
	if len(seqs) != int(head) {
		t.Errorf("%d distinct changes applied, want %d", len(seqs), head)
	}
	g := openBackend(t, conn, nil)
	got, _, err := g.Hydrate(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ids)-1 {
		t.Errorf("Neo4j holds %d of the %d documents written (one deleted)", len(got), len(ids)-1)
	}
	for _, d := range got {
		if d.ID == ids[1] {
			t.Errorf("the deleted %s is in Neo4j", d.ID)
		}
		if d.ID == ids[0] && d.Text != "rewritten" {
			t.Errorf("%s holds %q, want the rewrite", d.ID, d.Text)
		}
	}
}

// cleanupReplicaLog removes what a test under the change log logID left in the
// shared Neo4j, and its entities (named with prefix).
func cleanupReplicaLog(t *testing.T, conn testenv.Neo4jConn, logID, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	drv, err := neo4j.NewDriverWithContext(conn.URI, neo4j.BasicAuth(conn.User, conn.Password, ""))
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	defer drv.Close(ctx)
	for _, q := range []string{
		`MATCH (d:Document) WHERE d.ragd_log = $log OR d.id STARTS WITH $prefix DETACH DELETE d`,
		`MATCH (e:Entity) WHERE e.name STARTS WITH $prefix DETACH DELETE e`,
		`MATCH (v:RagdVersion) WHERE v.key STARTS WITH $log DELETE v`,
		`MATCH (c:RagdCheckpoint {log: $log}) DELETE c`,
	} {
		if _, err := neo4j.ExecuteQuery(ctx, drv, q, map[string]any{"log": logID, "prefix": prefix}, neo4j.EagerResultTransformer); err != nil {
			t.Logf("cleanup: %v", err)
		}
	}
}
