package ingest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	graphembedded "github.com/ragd/ragd/backends/graph/embedded"
	vectorembedded "github.com/ragd/ragd/backends/vector/embedded"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/spi"
)

// fakeLease is one lease the processes of a test contend for.
type fakeLease struct {
	mu     sync.Mutex
	holder string
	names  map[string]bool
}

func (l *fakeLease) give(who string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holder = who
}

// leasedRecord is one process's view of a shared record that offers
// leases (spi.ApplyLeaser): the first process to ask takes a free lease.
type leasedRecord struct {
	spitestRecord
	who   string
	lease *fakeLease
}

var _ spi.ApplyLeaser = (*leasedRecord)(nil)

func (r *leasedRecord) ApplyLease(_ context.Context, name string) (bool, error) {
	r.lease.mu.Lock()
	defer r.lease.mu.Unlock()
	r.lease.names[name] = true
	if r.lease.holder == "" {
		r.lease.holder = r.who
	}
	return r.lease.holder == r.who, nil
}

// openRecordAndGraph opens the embedded record and graph the replicas of
// these tests share, closed when the test ends.
func openRecordAndGraph(t *testing.T) (*vectorembedded.Store, *graphembedded.Store) {
	t.Helper()
	ctx, dir := context.Background(), t.TempDir()
	vs, err := vectorembedded.Open(ctx, vectorembedded.Config{Dir: dir + "/vector", Dimension: 4, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vs.Close() })
	gr, err := graphembedded.Open(ctx, graphembedded.Config{Dir: dir + "/graph", NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gr.Close() })
	return vs, gr
}

// TestSharedStoreAppliedOnceByTheLeaseHolder runs two replicas on one
// record and one shared graph: only the lease holder applies the log to
// the graph (the other's applier is never called to apply), both report
// the graph current as the holder moves its checkpoint, and when the
// lease passes to the other replica, that one applies what follows.
func TestSharedStoreAppliedOnceByTheLeaseHolder(t *testing.T) {
	ctx := context.Background()
	vs, gr := openRecordAndGraph(t)
	lease := &fakeLease{names: map[string]bool{}}
	type replica struct {
		p     *ingest.Pipeline
		graph *faultyApplier
	}
	var reps []replica
	for _, who := range []string{"a", "b"} {
		g := &faultyApplier{ChangeApplier: gr}
		p, err := ingest.New(ingest.Config{
			Record:   &leasedRecord{spitestRecord: vs, who: who, lease: lease},
			Derived:  []ingest.NamedApplier{{Name: spi.SourceGraph, Applier: g, Shared: true}},
			Embedder: &fakeEmbedder{dim: 4},
			Poll:     10 * time.Millisecond,
			Now:      func() time.Time { return fixedNow },
		})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); p.Run(runCtx) }()
		t.Cleanup(func() { cancel(); <-done })
		reps = append(reps, replica{p, g})
	}
	calls := func(g *faultyApplier) int {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.calls
	}
	current := func(p *ingest.Pipeline) bool {
		st, err := p.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Head > 0 && st.Stores[0].Behind == 0
	}
	write := func(via int, ids ...string) {
		var docs []spi.Document
		for _, id := range ids {
			docs = append(docs, doc(id))
		}
		for _, r := range reps[via].p.Upsert(ctx, docs, none) {
			if r.Status != ingest.StatusOK {
				t.Fatalf("upsert %s: %+v", r.ID, r)
			}
		}
	}
	// Writes through both replicas; a takes the lease (b has not asked
	// yet when a's first step runs, or asks and is refused after).
	lease.give("a")
	write(0, "d1", "d2")
	write(1, "d3")
	waitFor(t, "both replicas to see the graph current", func() bool { return current(reps[0].p) && current(reps[1].p) })
	if calls(reps[0].graph) == 0 || calls(reps[1].graph) != 0 {
		t.Fatalf("apply calls: holder a %d, follower b %d; want only a's", calls(reps[0].graph), calls(reps[1].graph))
	}
	if len(lease.names) != 1 {
		t.Errorf("lease names %v, want one (the graph of this log)", lease.names)
	}
	// The lease passes to b (a lost its connection to the record): b
	// applies what follows, a no longer does.
	aCalls := calls(reps[0].graph)
	lease.give("b")
	// a may be inside a step that asked for the lease before the change:
	// one more apply of a is allowed, none after the first of b.
	write(0, "d4")
	waitFor(t, "both replicas to see d4 applied", func() bool { return current(reps[0].p) && current(reps[1].p) })
	write(0, "d5")
	waitFor(t, "both replicas to see d5 applied", func() bool { return current(reps[0].p) && current(reps[1].p) })
	if calls(reps[1].graph) == 0 || calls(reps[0].graph) > aCalls+1 {
		t.Fatalf("after the handover: a applied %d more times, b %d times; want b applying", calls(reps[0].graph)-aCalls, calls(reps[1].graph))
	}
	for _, id := range []string{"d1", "d2", "d3", "d4", "d5"} {
		if docs, _, err := gr.Hydrate(ctx, []string{id}); err != nil || len(docs) != 1 {
			t.Errorf("graph lacks %s: %v", id, err)
		}
	}
}

// TestUnsharedStoreIgnoresLeases: a store of the process's own (bleve)
// applies whatever the lease says.
func TestUnsharedStoreIgnoresLeases(t *testing.T) {
	ctx := context.Background()
	vs, gr := openRecordAndGraph(t)
	lease := &fakeLease{names: map[string]bool{}, holder: "someone else"}
	g := &faultyApplier{ChangeApplier: gr}
	p, err := ingest.New(ingest.Config{
		Record:   &leasedRecord{spitestRecord: vs, who: "a", lease: lease},
		Derived:  []ingest.NamedApplier{{Name: spi.SourceGraph, Applier: g}},
		Embedder: &fakeEmbedder{dim: 4},
		Poll:     10 * time.Millisecond,
		Now:      func() time.Time { return fixedNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); p.Run(runCtx) }()
	defer func() { cancel(); <-done }()
	if r := p.Upsert(ctx, []spi.Document{doc("x")}, none); r[0].Status != ingest.StatusOK {
		t.Fatal(r[0])
	}
	waitFor(t, "the graph to apply x", func() bool {
		docs, _, _ := gr.Hydrate(ctx, []string{"x"})
		return len(docs) == 1
	})
	if len(lease.names) != 0 {
		t.Errorf("an unshared store asked for leases %v", lease.names)
	}
}

// TestCheckOnAFollowerWaitsForTheLeaseHolder: a check (ragd check, the
// check at start) on a replica that does not hold a shared store's lease
// does not apply the entries the store is behind: it waits for the
// holder's checkpoint (the hook marks each wait, so the test releases the
// holder only once the check waits) and applies nothing; only a holder
// whose checkpoint stands still for the apply timeout (on the checking
// replica's clock) is given up on, and the check applies the rest itself.
// Both checks end clean.
func TestCheckOnAFollowerWaitsForTheLeaseHolder(t *testing.T) {
	ctx := context.Background()
	vs, gr := openRecordAndGraph(t)
	lease := &fakeLease{names: map[string]bool{}}
	lease.give("a")
	var clockMu sync.Mutex
	now := fixedNow
	bClock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	type replica struct {
		p     *ingest.Pipeline
		graph *faultyApplier
	}
	var reps []replica
	for _, who := range []string{"a", "b"} {
		g := &faultyApplier{ChangeApplier: gr}
		clock := func() time.Time { return fixedNow }
		if who == "b" {
			clock = bClock
		}
		p, err := ingest.New(ingest.Config{
			Record:       &leasedRecord{spitestRecord: vs, who: who, lease: lease},
			Derived:      []ingest.NamedApplier{{Name: spi.SourceGraph, Applier: g, Shared: true}},
			Embedder:     &fakeEmbedder{dim: 4},
			Poll:         5 * time.Millisecond,
			ApplyTimeout: 30 * time.Second,
			Now:          clock,
		})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); p.Run(runCtx) }()
		t.Cleanup(func() { cancel(); <-done })
		reps = append(reps, replica{p, g})
	}
	a, b := reps[0], reps[1]
	applied := func(g *faultyApplier) int { // applies that carried entries
		g.mu.Lock()
		defer g.mu.Unlock()
		n := 0
		for _, s := range g.sizes {
			if s > 0 {
				n++
			}
		}
		return n
	}
	write := func(ids ...string) {
		var docs []spi.Document
		for _, id := range ids {
			docs = append(docs, doc(id))
		}
		for _, r := range a.p.Upsert(ctx, docs, none) {
			if r.Status != ingest.StatusOK {
				t.Fatalf("upsert %s: %+v", r.ID, r)
			}
		}
	}
	clean := func(rep ingest.CheckReport, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		g := rep.Stores[0]
		if g.Error != "" || g.Differences() != 0 || g.RecordDocuments != g.Documents {
			t.Fatalf("check: %+v", g)
		}
	}
	type result struct {
		rep ingest.CheckReport
		err error
	}

	// The holder hangs with entries to apply; b's check waits, and once
	// the holder goes on, ends without applying anything.
	block := make(chan struct{})
	a.graph.set(nil, block)
	write("d1", "d2")
	waits := make(chan struct{}, 1)
	b.p.SetCheckWaitHook(func(string) {
		select {
		case waits <- struct{}{}:
		default:
		}
	})
	done := make(chan result, 1)
	go func() { rep, err := b.p.Check(ctx, true); done <- result{rep, err} }()
	select {
	case <-waits:
	case r := <-done:
		close(block)
		t.Fatalf("the follower's check ended without waiting for the holder (applied %d batches): %+v, %v", applied(b.graph), r.rep, r.err)
	}
	close(block)
	r := <-done
	clean(r.rep, r.err)
	if n := applied(b.graph); n != 0 {
		t.Fatalf("the follower's check applied %d batches; want none (the holder applies)", n)
	}

	// The holder hangs for good: b's check gives up on it after the
	// apply timeout on b's clock, applies the rest itself, ends clean.
	block = make(chan struct{})
	a.graph.set(nil, block)
	write("d3")
	b.p.SetCheckWaitHook(func(string) {
		clockMu.Lock()
		now = now.Add(31 * time.Second)
		clockMu.Unlock()
	})
	go func() { rep, err := b.p.Check(ctx, false); done <- result{rep, err} }()
	r = <-done
	clean(r.rep, r.err)
	if n := applied(b.graph); n == 0 {
		t.Fatal("the follower's check did not apply past a stalled holder")
	}
	close(block) // the holder's apply is now a repeat
	b.p.SetCheckWaitHook(nil)
	clean(b.p.Check(ctx, false))
	for _, id := range []string{"d1", "d2", "d3"} {
		if docs, _, err := gr.Hydrate(ctx, []string{id}); err != nil || len(docs) != 1 {
			t.Errorf("graph lacks %s: %v", id, err)
		}
	}
}
