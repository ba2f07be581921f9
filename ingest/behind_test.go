package ingest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/spi"
)

// TestBehind: Pipeline.Behind (what holds back the pgvector record's bulk
// index build) is true while a store the process keeps current has not
// applied the head, false once it has, and leaves out a store whose last
// apply failed (down: it must not hold the build back) and a dormant one.
func TestBehind(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, rigOpts{})
	head := func() uint64 {
		st, err := r.p.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Head
	}
	store := func(i int) ingest.StoreLag {
		st, err := r.p.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Stores[i]
	}
	block := make(chan struct{})
	r.graph.set(nil, block)
	if res := r.p.Upsert(ctx, []spi.Document{doc("a"), doc("b")}, none); res[0].Status != ingest.StatusOK {
		t.Fatal(res[0])
	}
	h := head()
	waitFor(t, "the keyword store to apply", func() bool { return store(0).Behind == 0 })
	if !r.p.Behind(h) {
		t.Fatal("Behind(head) = false while the graph's apply hangs")
	}
	// The graph's applies fail (the hung one goes through): it no longer
	// holds anything back.
	r.graph.set(errors.New("graph down"), nil)
	close(block)
	if res := r.p.Upsert(ctx, []spi.Document{doc("c")}, none); res[0].Status != ingest.StatusOK {
		t.Fatal(res[0])
	}
	h = head()
	waitFor(t, "the graph's failure to be recorded", func() bool { return store(0).Behind == 0 && store(1).Error != "" })
	if store(1).Behind == 0 {
		t.Fatal("the failing graph applied the last write")
	}
	if r.p.Behind(h) {
		t.Fatal("Behind(head) = true with the only store behind failing")
	}
	r.graph.set(nil, nil)
	waitFor(t, "the graph to catch up", func() bool { return store(1).Behind == 0 && store(1).Error == "" })
	if r.p.Behind(h) {
		t.Fatal("Behind(head) = true with every store current")
	}
	if !r.p.Behind(h + 1) {
		t.Fatal("Behind(head+1) = false")
	}

	d := newRig(t, rigOpts{config: func(c *ingest.Config) { c.Derived[1].Dormant = true }})
	if res := d.p.Upsert(ctx, []spi.Document{doc("a")}, none); res[0].Status != ingest.StatusOK {
		t.Fatal(res[0])
	}
	st, err := d.p.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the keyword store to apply", func() bool {
		st, err := d.p.Status(ctx)
		return err == nil && st.Stores[0].Behind == 0
	})
	if d.p.Behind(st.Head) {
		t.Fatal("Behind(head) = true with the only store behind dormant")
	}
}
