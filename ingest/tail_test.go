package ingest_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/spi"
)

// A store that is failing while another replica compacts the log past its
// checkpoint must not skip the removed entries once it recovers: the
// applier notices the gap and resynchronises the store from the record,
// whether it looked at the compaction watermark while the store was down
// (and the resync failed) or not at all since.
func TestCompactionWhileAStoreFailsSkipsNothing(t *testing.T) {
	for _, recheck := range []bool{true, false} {
		t.Run(fmt.Sprintf("recheck=%v", recheck), func(t *testing.T) {
			now := fixedNow
			var mu sync.Mutex
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			r := newRig(t, rigOpts{noRun: true, config: func(c *ingest.Config) { c.Now = clock; c.Retention = time.Hour }})
			ctx := context.Background()
			r.p.Upsert(ctx, []spi.Document{doc("a"), doc("b")}, none)
			if _, err := r.p.Step(ctx, spi.SourceKeyword); err != nil {
				t.Fatal(err)
			}
			down := fmt.Errorf("keyword down: %w", spi.ErrUnavailable)
			r.kw.set(down, nil)
			r.p.Upsert(ctx, []spi.Document{doc("c"), doc("d"), doc("e")}, none)
			// Another replica has applied everything and compacts 1..4.
			other, err := ingest.New(ingest.Config{Record: r.rec, Now: func() time.Time { return time.Now().Add(48 * time.Hour) }, Retention: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if n, err := other.Compact(ctx); err != nil || n != 4 {
				t.Fatalf("Compact removed %d, %v; want 4", n, err)
			}
			if recheck {
				mu.Lock()
				now = now.Add(time.Hour) // past the periodic look at the watermark
				mu.Unlock()
			}
			for range 3 {
				if _, err := r.p.Step(ctx, spi.SourceKeyword); err == nil {
					t.Fatal("a step succeeded while the store was down")
				}
			}
			r.kw.set(nil, nil)
			r.settle(t, spi.SourceKeyword)
			st, err := r.p.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if kw := st.Stores[0]; kw.Behind != 0 {
				t.Fatalf("keyword is %d behind after recovering", kw.Behind)
			}
			for _, id := range []string{"a", "b", "c", "d", "e"} {
				if _, ok := r.kwText(t, id); !ok {
					t.Errorf("keyword lacks %s: the applier skipped entries compaction removed", id)
				}
			}
		})
	}
}

// A batch that keeps running out of time is not retried as it is forever:
// the applier shrinks its batches until they fit, and the store catches up.
func TestBatchThatTimesOutShrinks(t *testing.T) {
	r := newRig(t, rigOpts{noRun: true, config: func(c *ingest.Config) { c.ApplyBatch = 8 }})
	ctx := context.Background()
	docs := make([]spi.Document, 20)
	for i := range docs {
		docs[i] = doc(fmt.Sprintf("d%02d", i))
	}
	r.p.Upsert(ctx, docs, none)
	r.kw.setMaxBatch(3)
	caughtUp := false
	for range 40 {
		_, _ = r.p.Step(ctx, spi.SourceKeyword) // timeouts are expected on the way
		st, err := r.p.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Stores[0].Behind == 0 {
			caughtUp = true
			break
		}
	}
	if !caughtUp {
		t.Fatalf("keyword never caught up; batch sizes tried: %v", r.kw.sizes)
	}
	if got := r.kw.sizes[:3]; !slices.Equal(got, []int{8, 4, 2}) {
		t.Errorf("first batch sizes %v, want halved on each timeout: [8 4 2]", got)
	}
	for _, d := range docs {
		if _, ok := r.kwText(t, d.ID); !ok {
			t.Errorf("keyword lacks %s", d.ID)
		}
	}
}

// A check compares a page of documents at a time and holds the store's
// apply lock only while it compares a page: while it reads the record's
// next page, the store's applier can apply. The hook looks at the lock
// while the record is read.
func TestCheckLetsTheApplierRunBetweenPages(t *testing.T) {
	r := newRig(t, rigOpts{noRun: true, config: func(c *ingest.Config) { c.ApplyBatch = 4 }})
	ctx := context.Background()
	docs := make([]spi.Document, 20)
	for i := range docs {
		docs[i] = doc(fmt.Sprintf("d%02d", i))
	}
	r.p.Upsert(ctx, docs, none)
	visits, held := 0, 0
	r.rec.setVisit(func(string) {
		visits++
		if !r.p.ApplyLockFree(spi.SourceKeyword) {
			held++
		}
	})
	rep, err := r.p.Check(ctx, true)
	r.rec.setVisit(nil)
	if err != nil {
		t.Fatal(err)
	}
	if kw := rep.Stores[0]; kw.Store != spi.SourceKeyword || kw.Error != "" || kw.Differences() != 0 || kw.RecordDocuments != 20 || kw.Documents != 20 {
		t.Fatalf("keyword check = %+v, want 20 documents on both sides and no difference", kw)
	}
	if visits == 0 || held > 0 {
		t.Fatalf("the keyword applier was locked out during %d of the %d record reads", held, visits)
	}
}

// A store's own ApplyBatch (NamedApplier.ApplyBatch) replaces the
// pipeline's for that store alone: the keyword store applies 7 entries at
// a time while the graph keeps Config.ApplyBatch's 3.
func TestPerStoreApplyBatch(t *testing.T) {
	r := newRig(t, rigOpts{noRun: true, config: func(c *ingest.Config) {
		c.ApplyBatch = 3
		c.Derived[0].ApplyBatch = 7
	}})
	ctx := context.Background()
	docs := make([]spi.Document, 20)
	for i := range docs {
		docs[i] = doc(fmt.Sprintf("d%02d", i))
	}
	r.p.Upsert(ctx, docs, none)
	for _, store := range []string{spi.SourceKeyword, spi.SourceGraph} {
		for range 20 {
			if n, err := r.p.Step(ctx, store); err != nil {
				t.Fatalf("%s: %v", store, err)
			} else if n == 0 {
				break
			}
		}
	}
	if got, want := r.kw.sizes, []int{7, 7, 6}; !slices.Equal(got[:min(len(got), 3)], want) {
		t.Errorf("keyword batch sizes %v, want %v", got, want)
	}
	if got := r.graph.sizes; len(got) < 7 || slices.Max(got) != 3 {
		t.Errorf("graph batch sizes %v, want batches of 3 (20 entries in 7)", got)
	}
}

// A resynchronisation and a check, interleaved at every read of the
// record the resynchronisation makes (it reads with applyMu released, so
// a check can run there): a check may be refused while the store is
// still behind, but never once the store has reached the log's head.
// (The repair's recount used to read the record after the checkpoint
// had moved to the head, with the store still marked resynchronising.)
func TestCheckDuringAResyncIsRefusedOnlyWhileBehind(t *testing.T) {
	r := newRig(t, rigOpts{noRun: true, config: func(c *ingest.Config) { c.Retention = time.Hour }})
	ctx := context.Background()
	r.p.Upsert(ctx, []spi.Document{doc("a"), doc("b")}, none)
	if _, err := r.p.Step(ctx, spi.SourceKeyword); err != nil {
		t.Fatal(err)
	}
	r.p.Upsert(ctx, []spi.Document{doc("c"), doc("d"), doc("e")}, none)
	// Another replica compacts 1..4: the keyword store, at 2, has a gap.
	other, err := ingest.New(ingest.Config{Record: r.rec, Now: func() time.Time { return time.Now().Add(48 * time.Hour) }, Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := other.Compact(ctx); err != nil || n != 4 {
		t.Fatalf("Compact removed %d, %v; want 4", n, err)
	}
	var inside atomic.Bool
	var visits, refusedBehind int
	var wrong []string
	r.rec.setVisit(func(string) {
		if !inside.CompareAndSwap(false, true) {
			return // the check's own reads of the record
		}
		defer inside.Store(false)
		visits++
		st, err := r.p.Status(ctx)
		if err != nil {
			t.Errorf("status: %v", err)
			return
		}
		rep, err := r.p.Check(ctx, false)
		if err != nil {
			t.Errorf("check: %v", err)
			return
		}
		switch kw := rep.Stores[0]; {
		case kw.Error != "" && st.Stores[0].Behind > 0:
			refusedBehind++
		case kw.Error != "":
			wrong = append(wrong, kw.Error)
		}
	})
	r.settle(t, spi.SourceKeyword)
	r.rec.setVisit(nil)
	if visits == 0 || refusedBehind == 0 {
		t.Fatalf("the interleaving did not happen: %d reads of the record, %d checks refused while behind", visits, refusedBehind)
	}
	if len(wrong) > 0 {
		t.Fatalf("%d checks refused once the store was current: %v", len(wrong), wrong)
	}
	r.converged(t)
}
