package spitest

import (
	"context"
	"testing"

	"github.com/ragd/ragd/spi"
)

// TestDocCount runs the spi.DocCounter contract on a derived store: two
// documents applied and one of them deleted count once. A store on a
// server other tests share (shared true) may hold their documents too: it
// is checked for counting at least its own.
func TestDocCount(t *testing.T, open func(t *testing.T) AppliedStore, shared bool) {
	s := &applierSuite{open: open}
	r := s.start(t)
	c, ok := r.st.(spi.DocCounter)
	if !ok {
		t.Fatalf("%T does not implement spi.DocCounter", r.st)
	}
	ctx := context.Background()
	before, err := c.DocCount(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.apply(t, 3, r.upsert(1, "a", "alpha"), r.upsert(2, "b", "beta"), r.upsert(3, "c", "gamma"))
	r.apply(t, 4, r.tombstone(4, "b"))
	after, err := c.DocCount(ctx)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case !shared && after-before != 2:
		t.Fatalf("DocCount %d before, %d after applying 3 documents and deleting 1: want 2 more", before, after)
	case shared && after < 2:
		t.Fatalf("DocCount %d after applying 3 documents and deleting 1: want at least 2", after)
	}
}
