package builtin_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ragd/ragd/embedder/builtin"
)

// TestQueriesShareAPass: queries that wait while a pass runs share the
// next pass (one forward pass over all their tokens), and each gets the
// vector it gets alone. The first pass is held by a hook until every other
// query is queued, so the batch is known, not hoped for. One pass at a time
// (Passes 1): with more, the next query would start a pass of its own
// beside the held one (sched's TestWorkers).
func TestQueriesShareAPass(t *testing.T) {
	m, err := builtin.Open(builtin.Config{Dir: "testdata/tiny", Passes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	texts := []string{"wing flutter", "the boundary layer of a flat plate", "", "shock",
		"heat transfer at hypersonic speed " + strings.Repeat("and more ", 20), "panel buckling", "jet nozzle noise"}
	alone := make([][]float32, len(texts))
	for i, tx := range texts {
		v, err := m.Queries().Embed(ctx, []string{tx})
		if err != nil {
			t.Fatal(err)
		}
		alone[i] = v[0]
	}

	var mu sync.Mutex
	var passes []int
	held, release := make(chan struct{}), make(chan struct{})
	queued := make(chan struct{}, len(texts)+1)
	builtin.SetSchedHooks(m, func(bool) { queued <- struct{}{} }, func(query bool, n int) {
		mu.Lock()
		passes = append(passes, n)
		first := len(passes) == 1
		mu.Unlock()
		if first {
			close(held)
			<-release
		}
	})
	defer builtin.SetSchedHooks(m, nil, nil)

	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := m.Queries().Embed(ctx, []string{"the query that holds the first pass"}); err != nil {
			t.Error(err)
		}
	})
	<-held
	got := make([][]float32, len(texts))
	for i, tx := range texts {
		wg.Go(func() {
			v, err := m.Queries().Embed(ctx, []string{tx})
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = v[0]
		})
	}
	for range len(texts) + 1 {
		<-queued
	}
	close(release)
	wg.Wait()
	if !slices.Equal(passes, []int{1, len(texts)}) {
		t.Fatalf("passes of %v queries, want [1 %d]: the waiting queries must share one pass", passes, len(texts))
	}
	for i := range texts {
		if c := cosine(got[i], alone[i]); c < 0.999999 {
			t.Errorf("query %d (%q): batched vector has cosine %v with its vector alone", i, texts[i], c)
		}
	}
	if st := m.BatchStats(); st.Passes < 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestDocumentsChunkedByLength: a documents call runs in chunks of at most
// DocumentBatchTokens tokens (a longer text alone), texts sorted by length,
// and the vectors come back in the caller's order, each as it is alone.
func TestDocumentsChunkedByLength(t *testing.T) {
	m, err := builtin.Open(builtin.Config{Dir: "testdata/tiny"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	var texts []string
	for i := range 120 {
		texts = append(texts, strings.Repeat("flow ", i%23)+"end")
	}
	var mu sync.Mutex
	var sizes []int
	builtin.SetSchedHooks(m, nil, func(query bool, n int) {
		mu.Lock()
		defer mu.Unlock()
		if query {
			t.Error("a documents call ran a query pass")
		}
		sizes = append(sizes, n)
	})
	got, err := m.Documents().Embed(ctx, texts)
	builtin.SetSchedHooks(m, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Each text is 2 to 24 tokens ([CLS] ... [SEP], max_seq_length 24):
	// 120 texts of 1,567 tokens fill at least 4 chunks of 512.
	if len(sizes) < 4 || slices.Max(sizes) > builtin.DocumentBatchTokens/2 {
		t.Fatalf("chunks of %v texts: want at least 4, none over %d texts", sizes, builtin.DocumentBatchTokens/2)
	}
	for i, tx := range texts {
		one, err := m.Documents().Embed(ctx, []string{tx})
		if err != nil {
			t.Fatal(err)
		}
		if c := cosine(got[i], one[0]); c < 0.999999 {
			t.Fatalf("text %d: vector in a chunk has cosine %v with the text alone (order lost?)", i, c)
		}
	}
}
