package vector_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/vector"
	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/spi"
)

// recallAt is the share of the exact top k that retrieve returns, over
// queries.
func recallAt(t *testing.T, b *vector.Backend, ref map[string][]float32, queries [][]float32, k int) float64 {
	t.Helper()
	hits, total := 0, 0
	for _, q := range queries {
		want := exactTop(ref, q, k)
		total += len(want)
		for _, id := range ids(retrieve(t, b, q, k)) {
			if slices.Contains(want, id) {
				hits++
			}
		}
	}
	return float64(hits) / float64(total)
}

// findsItself checks that each id's own vector returns it first, with
// score 1: rows in the tail are scanned exactly whatever the index does.
func findsItself(t *testing.T, b *vector.Backend, ref map[string][]float32, idList []string, stage string) {
	t.Helper()
	for _, id := range idList {
		got := retrieve(t, b, ref[id], 1)
		if len(got) != 1 || got[0].ID != id || got[0].Score < 0.9999 {
			t.Fatalf("%s: %s's own vector finds %v", stage, id, got)
		}
	}
}

// TestIndexBuildDeferredWhileWriting: while writes keep moving the change
// log's head, a tail past the rebuild threshold is not built (nor linked
// in row by row); queries meanwhile answer exactly for the tail, so recall
// does not drop; the build comes once the head stands still for
// Index.Quiet, or at once when the tail passes Index.DeferMax.
func TestIndexBuildDeferredWhileWriting(t *testing.T) {
	const dim = 8
	dsn := testenv.Postgres(t)
	clock := &fakeClock{t: time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)}
	b := mustOpen(t, vector.Config{DSN: dsn, Dimension: dim, Now: clock.Now,
		Index: vector.IndexConfig{RebuildMin: 50, RebuildRatio: 0.5, DeferMax: 300, Quiet: 2 * time.Second, Grace: time.Minute}})
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 8))
	ref := map[string][]float32{}
	n := 0
	write := func(count int) []string {
		var docs []spi.Document
		var written []string
		for range count {
			d := spi.Document{ID: fmt.Sprintf("d%05d", n), Vector: randVec(r, dim)}
			n++
			ref[d.ID] = d.Vector
			docs = append(docs, d)
			written = append(written, d.ID)
		}
		if err := b.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
		return written
	}
	queries := make([][]float32, 30)
	for i := range queries {
		queries[i] = randVec(r, dim)
	}
	// A burst: 100 rows, then 60 a second. Every step defers; the answers
	// are exact (everything is in the tail).
	write(100)
	for range 3 {
		if rep := indexStep(t, b); !rep.Deferred || rep.Rebuilt || rep.Absorbed != 0 {
			t.Fatalf("step during the burst (tail %d) = %+v, want deferred", len(ref), rep)
		}
		if got := recallAt(t, b, ref, queries, 10); got != 1 {
			t.Fatalf("recall@10 %.3f with every row in the deferred tail, want 1 (exact)", got)
		}
		write(60)
		clock.Add(time.Second)
	}
	// 280 rows in the tail; 40 more pass DeferMax (300): built at once,
	// though the head still moves.
	write(40)
	rep := indexStep(t, b)
	if !rep.Rebuilt || rep.V != 320 || rep.Deferred {
		t.Fatalf("step with a tail past DeferMax = %+v, want a rebuild at V=320", rep)
	}
	clock.Add(2 * time.Second) // queries re-read the index state
	// A second burst on top of the index: the new rows wait in the tail
	// (past the threshold, max(50, 0.5 × 320)); the main part is answered
	// by the HNSW index, the tail exactly.
	burst := write(200)
	if rep := indexStep(t, b); !rep.Deferred || rep.Tail != 200 {
		t.Fatalf("step during the second burst = %+v, want the 200-row tail deferred", rep)
	}
	findsItself(t, b, ref, burst[:20], "deferred tail over an index")
	if got := recallAt(t, b, ref, queries, 10); got < 0.95 {
		t.Fatalf("recall@10 %.3f while the build is deferred, want >= 0.95", got)
	}
	// The log stands still for Quiet: one build.
	clock.Add(time.Second)
	if rep := indexStep(t, b); !rep.Deferred {
		t.Fatalf("step 1 s after the last write = %+v, want still deferred", rep)
	}
	clock.Add(time.Second)
	if rep := indexStep(t, b); !rep.Rebuilt || rep.V != 520 {
		t.Fatalf("step after the log stood still for Quiet = %+v, want a rebuild at V=520", rep)
	}
	clock.Add(2 * time.Second)
	findsItself(t, b, ref, burst[:20], "after the build")
	if got := recallAt(t, b, ref, queries, 10); got < 0.95 {
		t.Fatalf("recall@10 %.3f after the build, want >= 0.95", got)
	}
}

// TestCommitDuringBuild interleaves writes with a bulk build at two
// points, with hooks: a commit (and a derived store's read of the log)
// between the build reading its V and its CREATE INDEX, and a commit that
// holds its rows uncommitted while the build reads V and starts. Either way every written row is found by its
// own vector, rewritten rows never by their old vector, deleted rows not
// at all, and after the next steps nothing is left outside the index.
func TestCommitDuringBuild(t *testing.T) {
	const dim = 8
	dsn := testenv.Postgres(t)
	clock := &fakeClock{t: time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)}
	cfg := vector.Config{DSN: dsn, Dimension: dim, Now: clock.Now,
		Index: vector.IndexConfig{RebuildMin: 1, DeferMax: 1, Grace: time.Minute}}
	indexer := mustOpen(t, cfg)
	writer := mustOpen(t, cfg)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(9, 10))
	ref := map[string][]float32{}
	old := map[string][]float32{}
	docsOf := func(prefix string, count int) []spi.Document {
		var docs []spi.Document
		for i := range count {
			d := spi.Document{ID: fmt.Sprintf("%s%03d", prefix, i), Vector: randVec(r, dim)}
			if v, ok := ref[d.ID]; ok {
				old[d.ID] = v
			}
			ref[d.ID] = d.Vector
			docs = append(docs, d)
		}
		return docs
	}
	if err := writer.Upsert(ctx, docsOf("a", 100)); err != nil {
		t.Fatal(err)
	}
	check := func(stage string) {
		t.Helper()
		var all []string
		for id := range ref {
			all = append(all, id)
		}
		slices.Sort(all)
		findsItself(t, indexer, ref, all, stage)
		for id, v := range old {
			for _, x := range retrieve(t, indexer, v, 5) {
				if x.ID == id && x.Score > 0.9999 {
					t.Fatalf("%s: %s found by the vector it was rewritten from", stage, id)
				}
			}
		}
	}

	// 1. A commit between the build's V and its CREATE INDEX.
	built := make(chan int64)
	release := make(chan struct{})
	vector.SetBuildHook(indexer, func(v int64) { built <- v; <-release })
	var rep vector.IndexReport
	var stepErr error
	var wg sync.WaitGroup
	wg.Go(func() { rep, stepErr = indexer.IndexStep(ctx) })
	v := <-built
	if v != 100 {
		t.Fatalf("build V = %d, want 100", v)
	}
	batch := append(docsOf("b", 20), docsOf("a", 5)...) // 20 new, 5 rewritten
	if err := writer.Upsert(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := writer.Delete(ctx, []string{"a050", "a051"}); err != nil {
		t.Fatal(err)
	}
	delete(ref, "a050")
	delete(ref, "a051")
	// A derived store's apply reads the log while the build waits: every
	// entry, in order, with its document's current state.
	changes, err := writer.Changes(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 127 {
		t.Fatalf("Changes during the build: %d entries, want 127", len(changes))
	}
	for i, c := range changes {
		if c.Seq != uint64(i+1) {
			t.Fatalf("entry %d has seq %d", i, c.Seq)
		}
	}
	if last := changes[126]; last.ID != "a051" || last.Doc != nil {
		t.Fatalf("last entry %+v, want the delete of a051", last)
	}
	close(release)
	wg.Wait()
	if stepErr != nil || !rep.Rebuilt || rep.V != 100 {
		t.Fatalf("step = %+v, %v; want a rebuild at V=100", rep, stepErr)
	}
	clock.Add(2 * time.Second) // queries re-read the index state
	check("writes between V and the build")
	for _, id := range []string{"a050", "a051"} {
		for _, x := range retrieve(t, indexer, randVec(r, dim), 200) {
			if x.ID == id {
				t.Fatalf("deleted %s returned", id)
			}
		}
	}

	// 2. A commit holding its rows uncommitted while the build reads V
	// and starts CREATE INDEX CONCURRENTLY (which waits for it).
	inTx := make(chan struct{})
	commit := make(chan struct{})
	vector.SetCommitHook(writer, func() { close(inTx); <-commit })
	vector.SetBuildHook(indexer, func(v int64) { built <- v })
	var wErr error
	var ww sync.WaitGroup
	ww.Go(func() { wErr = writer.Upsert(ctx, docsOf("c", 30)) })
	<-inTx
	wg.Go(func() { rep, stepErr = indexer.IndexStep(ctx) })
	v = <-built
	if v != 127 {
		t.Fatalf("build V = %d, want 127 (the committed head; the open commit's entries are not visible)", v)
	}
	close(commit)
	ww.Wait()
	wg.Wait()
	if wErr != nil {
		t.Fatal(wErr)
	}
	if stepErr != nil || !rep.Rebuilt || rep.V != 127 {
		t.Fatalf("step = %+v, %v; want a rebuild at V=127", rep, stepErr)
	}
	vector.SetCommitHook(writer, nil)
	clock.Add(2 * time.Second)
	check("a commit open across the build's start")
	// The 30 rows committed after V are in the tail; the next steps move
	// them into the index, leaving nothing outside it.
	vector.SetBuildHook(indexer, nil)
	clock.Add(vector.DefaultIndexQuiet)
	for range 5 {
		if rep := indexStep(t, indexer); rep.Tail == 0 {
			break
		}
	}
	if rep := indexStep(t, indexer); rep.Tail != 0 {
		t.Fatalf("tail %d left after the steps", rep.Tail)
	}
	clock.Add(2 * time.Second)
	check("after linking in")
}

// TestIndexBuildWaitsWhileBusy: with the log's head standing still, a
// tail past the rebuild threshold still waits while Index.Busy says work
// on that head is under way (ragd: a derived store catching up), is built
// once Busy clears, and is built at once past Index.DeferMax whatever Busy
// says.
func TestIndexBuildWaitsWhileBusy(t *testing.T) {
	const dim = 8
	dsn := testenv.Postgres(t)
	clock := &fakeClock{t: time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)}
	var mu sync.Mutex
	busy, asked := true, []uint64(nil)
	isBusy := func(head uint64) bool {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, head)
		return busy
	}
	b := mustOpen(t, vector.Config{DSN: dsn, Dimension: dim, Now: clock.Now,
		Index: vector.IndexConfig{RebuildMin: 50, RebuildRatio: 0.5, DeferMax: 300, Quiet: 2 * time.Second, Grace: time.Minute, Busy: isBusy}})
	ctx := context.Background()
	r := rand.New(rand.NewPCG(9, 10))
	n := 0
	write := func(count int) {
		var docs []spi.Document
		for range count {
			docs = append(docs, spi.Document{ID: fmt.Sprintf("d%05d", n), Vector: randVec(r, dim)})
			n++
		}
		if err := b.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	write(100)
	indexStep(t, b) // the first reading of the head counts as a move
	clock.Add(5 * time.Second)
	if rep := indexStep(t, b); !rep.Deferred || rep.Rebuilt || rep.Tail != 100 {
		t.Fatalf("step with a quiet head while busy = %+v, want the 100-row tail deferred", rep)
	}
	mu.Lock()
	if len(asked) == 0 || asked[len(asked)-1] != 100 {
		t.Errorf("Busy asked with heads %v, want the log's head 100 last", asked)
	}
	busy = false
	mu.Unlock()
	if rep := indexStep(t, b); !rep.Rebuilt || rep.V != 100 {
		t.Fatalf("step once no longer busy = %+v, want a rebuild at V=100", rep)
	}
	// Busy again, a tail past DeferMax: built anyway.
	mu.Lock()
	busy = true
	mu.Unlock()
	clock.Add(2 * time.Second)
	write(301)
	clock.Add(5 * time.Second)
	if rep := indexStep(t, b); !rep.Rebuilt || rep.V != 401 {
		t.Fatalf("step with a tail past DeferMax while busy = %+v, want a rebuild at V=401", rep)
	}
}
