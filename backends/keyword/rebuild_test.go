package keyword_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

// Rebuild swaps in an index built from the system of record while the old
// one keeps serving; writes made meanwhile survive the swap.
func TestRebuildLive(t *testing.T) {
	dir := t.TempDir()
	b := mustOpen(t, keyword.Config{Dir: dir, BatchSize: 32})
	stale := spi.Document{ID: "stale", Tenant: "t0", Text: "obsolete document only in the derived index"}
	mustUpsert(t, b, append(corpus(), stale)...)
	before := currentGen(t, dir)

	sor := corpus() // the system of record: no "stale"
	paused, resume := make(chan struct{}), make(chan struct{})
	src := &sliceScanner{docs: sor, onDoc: func(i int) {
		if i == 100 {
			close(paused)
			<-resume
		}
	}}
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := b.Rebuild(context.Background(), src)
		done <- result{n, err}
	}()
	<-paused
	// Mid-rebuild: the old index answers, and takes writes.
	spitest.WantIDs(t, mustRetrieve(t, b, spi.KeywordRequest{Text: "obsolete"}), "stale")
	during := spi.Document{ID: "during", Tenant: "t0", Text: "written while the rebuild ran"}
	newer := spi.Document{ID: "w-en", Tenant: "t1", Title: "widget", Text: "widget manual second edition",
		Metadata: spi.Strings(map[string]string{"lang": "en"})} // sorts after the pause: the scan still sees the old version
	mustUpsert(t, b, during, newer)
	if err := b.Delete(context.Background(), []string{"f0001", "run"}); err != nil {
		t.Fatal(err)
	}
	close(resume)
	res := <-done
	if res.err != nil || res.n != len(sor) {
		t.Fatalf("Rebuild = %d, %v; want %d", res.n, res.err, len(sor))
	}

	if refs := mustRetrieve(t, b, spi.KeywordRequest{Text: "obsolete"}); len(refs) != 0 {
		t.Fatalf("document absent from the system of record survived: %v", refs)
	}
	spitest.WantIDs(t, mustRetrieve(t, b, spi.KeywordRequest{Text: "rebuild ran"}), "during")
	spitest.WantIDs(t, mustRetrieve(t, b, spi.KeywordRequest{Text: "second edition"}), "w-en")
	_, missing, err := b.Hydrate(context.Background(), []string{"f0001", "run", "f0002"})
	if err != nil || !slices.Equal(missing, []string{"f0001", "run"}) {
		t.Fatalf("missing = %v, %v; want the ids deleted during the rebuild", missing, err)
	}
	if n, _ := b.DocCount(context.Background()); n != len(sor)+1-2 {
		t.Fatalf("DocCount = %d, want %d", n, len(sor)-1)
	}
	live, _ := generations(t, dir)
	if after := currentGen(t, dir); after == before || !slices.Equal(live, []string{after}) {
		t.Fatalf("generations %v, CURRENT %s (was %s)", live, after, before)
	}
	// The switched-in generation is what a restart opens.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := mustOpen(t, keyword.Config{Dir: dir})
	spitest.WantIDs(t, mustRetrieve(t, b2, spi.KeywordRequest{Text: "rebuild ran"}), "during")
}

func TestRebuildCancelledKeepsOldIndex(t *testing.T) {
	dir := t.TempDir()
	b := mustOpen(t, keyword.Config{Dir: dir, BatchSize: 16})
	mustUpsert(t, b, corpus()...)
	want := snapshot(t, b)
	gen := currentGen(t, dir)

	ctx, cancel := context.WithCancel(context.Background())
	src := &sliceScanner{docs: spitest.KeywordFiller(200), onDoc: func(i int) {
		if i == 50 {
			cancel()
		}
	}}
	if _, err := b.Rebuild(ctx, src); !errors.Is(err, context.Canceled) {
		t.Fatalf("Rebuild err = %v, want context.Canceled", err)
	}
	sameSnapshot(t, snapshot(t, b), want)
	if live, _ := generations(t, dir); !slices.Equal(live, []string{gen}) || currentGen(t, dir) != gen {
		t.Fatalf("generations %v after a cancelled rebuild", live)
	}
	// Writes after the failed rebuild are not recorded for a replay.
	mustUpsert(t, b, spi.Document{ID: "after", Text: "later write"})
	spitest.WantIDs(t, mustRetrieve(t, b, spi.KeywordRequest{Text: "later write"}), "after")
}

func TestRebuildInvalidDocumentFails(t *testing.T) {
	b := mustOpen(t, keyword.Config{})
	mustUpsert(t, b, corpus()...)
	_, err := b.Rebuild(context.Background(), &sliceScanner{docs: []spi.Document{{ID: "ok"}, {ID: ""}}})
	if !isInvalid(err) {
		t.Fatalf("err = %v, want ErrInvalidQuery", err)
	}
	if n, _ := b.DocCount(context.Background()); n != len(corpus()) {
		t.Fatalf("DocCount = %d after a failed rebuild", n)
	}
}

func TestRebuildClosed(t *testing.T) {
	b, err := keyword.Open(keyword.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	if _, err := b.Rebuild(context.Background(), &sliceScanner{}); !errors.Is(err, keyword.ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
	if _, err := b.Rebuild(context.Background(), nil); err == nil {
		t.Fatal("nil scanner accepted")
	}
}
