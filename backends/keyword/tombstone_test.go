package keyword_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/spi"
)

func tombstones(t *testing.T, b *keyword.Backend) int {
	t.Helper()
	n, err := keyword.Tombstones(b)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Tombstones have an end: deletes applied through the log leave none once
// the checkpoint has passed them (scorch rewrites every internal key into
// each snapshot, so kept tombstones slow every later batch); one written
// by a repair (its version above the checkpoint) goes with the first apply
// whose checkpoint passes it, and so do those an older ragd left.
func TestTombstonesEnd(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := mustOpen(t, keyword.Config{Dir: dir})
	const log = "log-1"
	var ups, dels []spi.Change
	for i := range 10 {
		d := spi.Document{ID: fmt.Sprintf("d%d", i), Text: "some text"}
		ups = append(ups, spi.Change{Seq: uint64(i + 1), Op: spi.OpUpsert, ID: d.ID, Doc: &d, Version: uint64(i + 1)})
		dels = append(dels, spi.Change{Seq: uint64(i + 11), Op: spi.OpDelete, ID: d.ID, Version: uint64(i + 11)})
	}
	apply := func(through uint64, cs ...spi.Change) {
		t.Helper()
		if err := b.ApplyChanges(ctx, log, cs, through); err != nil {
			t.Fatal(err)
		}
	}
	apply(10, ups...)
	apply(20, dels...)
	if n := tombstones(t, b); n != 0 {
		t.Fatalf("%d tombstones after deletes the checkpoint passed, want 0", n)
	}
	// A repair applies the record's current state without moving the
	// checkpoint: the tombstone stays until the checkpoint passes it.
	d := spi.Document{ID: "r", Text: "repaired"}
	apply(21, spi.Change{Seq: 21, Op: spi.OpUpsert, ID: "r", Doc: &d, Version: 21})
	apply(0, spi.Change{ID: "r", Version: 30})
	if n := tombstones(t, b); n != 1 {
		t.Fatalf("%d tombstones after a repair's delete above the checkpoint, want 1", n)
	}
	late := spi.Document{ID: "r", Text: "older state"}
	apply(0, spi.Change{ID: "r", Doc: &late, Version: 25})
	if docs, _, _ := b.Hydrate(ctx, []string{"r"}); len(docs) != 0 {
		t.Fatal("an older state revived a document its tombstone covers")
	}
	apply(30)
	if n := tombstones(t, b); n != 0 {
		t.Fatalf("%d tombstones once the checkpoint passed the repair's, want 0", n)
	}
	// An older ragd's tombstones (never removed then) go at the next
	// apply after a restart.
	for i := range 5 {
		if err := keyword.SetInternal(b, fmt.Sprintf("ragd.v/old%d", i), keyword.TaggedVersion(log, uint64(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = mustOpen(t, keyword.Config{Dir: dir})
	if n := tombstones(t, b); n != 5 {
		t.Fatalf("%d tombstones after the restart, want the 5 written", n)
	}
	apply(31)
	if n := tombstones(t, b); n != 0 {
		t.Fatalf("%d of an older ragd's tombstones survived an apply, want 0", n)
	}
}
