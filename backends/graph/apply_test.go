package graph_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

// cleanupLogs removes what the applier tests leave in the shared server:
// their documents, versions and checkpoints (all under logs named log-*).
func cleanupLogs(t *testing.T, conn testenv.Neo4jConn) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		drv, err := neo4j.NewDriverWithContext(conn.URI, neo4j.BasicAuth(conn.User, conn.Password, ""))
		if err != nil {
			t.Logf("cleanup: %v", err)
			return
		}
		defer drv.Close(ctx)
		for _, q := range []string{
			`MATCH (d:Document) WHERE d.ragd_log STARTS WITH 'log-' DETACH DELETE d`,
			`MATCH (v:RagdVersion) WHERE v.key STARTS WITH 'log-' DELETE v`,
			`MATCH (c:RagdCheckpoint) WHERE c.log STARTS WITH 'log-' DELETE c`,
		} {
			if _, err := neo4j.ExecuteQuery(ctx, drv, q, nil, neo4j.EagerResultTransformer); err != nil {
				t.Logf("cleanup: %v", err)
			}
		}
	})
}

func TestChangeApplier(t *testing.T) {
	conn := testenv.Neo4j(t)
	cleanupLogs(t, conn)
	spitest.TestChangeApplier(t, func(t *testing.T) spitest.AppliedStore {
		return openBackend(t, conn, nil)
	})
}

// TestConcurrentAppliersKeepNewest races two appliers (two replicas) over
// the same documents: whatever the interleaving, each document ends at the
// higher version with that version's content.
func TestConcurrentAppliersKeepNewest(t *testing.T) {
	conn := testenv.Neo4j(t)
	cleanupLogs(t, conn)
	a, b := openBackend(t, conn, nil), openBackend(t, conn, nil)
	log := "log-" + uniq(t)
	ctx := context.Background()
	const docs, rounds = 8, 10
	change := func(id string, v uint64) spi.Change {
		d := spi.Document{ID: id, Tenant: log, Text: fmt.Sprintf("version %d", v), Entities: []string{fmt.Sprintf("e%d", v%3)}}
		return spi.Change{Seq: v, Op: spi.OpUpsert, ID: id, Doc: &d, Version: v}
	}
	for r := range rounds {
		lo, hi := uint64(2*r+1), uint64(2*r+2)
		var low, high []spi.Change
		for i := range docs {
			id := fmt.Sprintf("%s-d%d", log, i)
			low = append(low, change(id, lo))
			high = append(high, change(id, hi))
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		// The lower version goes second on purpose half of the time.
		first, second := a, b
		if r%2 == 1 {
			first, second = b, a
		}
		wg.Go(func() { errs[0] = first.ApplyChanges(ctx, log, high, hi) })
		wg.Go(func() { errs[1] = second.ApplyChanges(ctx, log, low, lo) })
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
		}
		ids := make([]string, docs)
		for i := range ids {
			ids[i] = fmt.Sprintf("%s-d%d", log, i)
		}
		got, _, err := a.Hydrate(ctx, ids)
		if err != nil || len(got) != docs {
			t.Fatalf("round %d: hydrate = %d docs, %v", r, len(got), err)
		}
		for _, d := range got {
			if want := fmt.Sprintf("version %d", hi); d.Text != want {
				t.Fatalf("round %d: %s holds %q, want %q", r, d.ID, d.Text, want)
			}
		}
		if seq, err := a.AppliedSeq(ctx, log); err != nil || seq != hi {
			t.Fatalf("round %d: checkpoint = %d, %v; want %d", r, seq, err, hi)
		}
	}
}

// TestDocCount: the Neo4j server is shared with other tests, so the count
// is checked for holding at least this test's documents.
func TestDocCount(t *testing.T) {
	conn := testenv.Neo4j(t)
	cleanupLogs(t, conn)
	spitest.TestDocCount(t, func(t *testing.T) spitest.AppliedStore { return openBackend(t, conn, nil) }, true)
}
