package ingest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/spi"
)

// A dormant derived store is not touched by writes, waits, compaction or
// checks until it is woken; woken after compaction removed entries it
// never applied, it is resynchronised and ends equal to the record.
func TestDormantStoreCatchesUpWhenWoken(t *testing.T) {
	now := fixedNow
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	r := newRig(t, rigOpts{config: func(c *ingest.Config) {
		c.Now, c.Retention = clock, time.Hour
		c.Derived[1].Dormant = true // the graph
	}})
	ctx := context.Background()
	if !r.p.Dormant(spi.SourceGraph) || r.p.Dormant(spi.SourceKeyword) {
		t.Fatal("Dormant does not report the configuration")
	}
	res := r.p.Upsert(ctx, []spi.Document{doc("a"), doc("b"), doc("c")}, ingest.WriteOptions{Wait: 30 * time.Second})
	for _, x := range res {
		if x.Stores[spi.SourceKeyword] != ingest.StoreCurrent || x.Stores[spi.SourceGraph] != ingest.StoreDormant {
			t.Fatalf("%s: stores %v, want keyword current and graph dormant", x.ID, x.Stores)
		}
	}
	if got := r.p.Delete(ctx, []string{"b"}, ingest.WriteOptions{Wait: 30 * time.Second}); got[0].Stores[spi.SourceKeyword] != ingest.StoreCurrent {
		t.Fatalf("delete: %+v", got[0])
	}
	r.graph.mu.Lock()
	calls, seqs := r.graph.calls, r.graph.seqs
	r.graph.mu.Unlock()
	if calls != 0 || seqs != 0 {
		t.Fatalf("the dormant store was called: %d applies, %d checkpoint reads", calls, seqs)
	}
	st, err := r.p.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g := st.Stores[1]; !g.Dormant || g.Behind != st.Head || st.Stores[0].Dormant {
		t.Fatalf("status: %+v", st)
	}
	rep := r.converged(t)
	if !rep.Stores[1].Dormant || rep.Stores[0].Dormant {
		t.Fatalf("check: %+v", rep)
	}

	// Compaction is not held back by the dormant store.
	mu.Lock()
	now = time.Now().Add(48 * time.Hour) // the record stamps entries with the real clock
	mu.Unlock()
	if n, err := r.p.Compact(ctx); err != nil || n != 3 {
		t.Fatalf("Compact removed %d, %v; want 3 (the newest entry stays)", n, err)
	}

	if err := r.p.Wake(spi.SourceGraph); err != nil {
		t.Fatal(err)
	}
	if err := r.p.Wake(spi.SourceGraph); err != nil {
		t.Fatalf("waking twice: %v", err)
	}
	if r.p.Dormant(spi.SourceGraph) {
		t.Fatal("still dormant after Wake")
	}
	head, err := r.p.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := r.p.WaitApplied(wctx, spi.SourceGraph, head); err != nil {
		t.Fatalf("the woken store did not catch up: %v", err)
	}
	rep = r.converged(t)
	if g := rep.Stores[1]; g.Dormant || g.Documents != 2 || g.RecordDocuments != 2 {
		t.Fatalf("graph after waking: %+v", g)
	}
	res = r.p.Upsert(ctx, []spi.Document{doc("d")}, ingest.WriteOptions{Wait: 30 * time.Second})
	if res[0].Stores[spi.SourceGraph] != ingest.StoreCurrent {
		t.Fatalf("a write after waking: %+v", res[0])
	}
	if err := r.p.Wake("nosuch"); !errors.Is(err, ingest.ErrUnknownStore) {
		t.Fatalf("Wake(nosuch) = %v, want ErrUnknownStore", err)
	}
}
