package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/spi"
)

// embeddedTexts counts the texts the fake embedder was asked for.
func (f *fakeEmbedder) embeddedTexts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += len(c)
	}
	return n
}

// TestUnchangedDocumentsAreNotEmbeddedAgain: a second upsert of the same
// documents embeds nothing (the embedder now fails every call, so a write
// that embedded would fail) and is reported unchanged, without a log entry.
func TestUnchangedDocumentsAreNotEmbeddedAgain(t *testing.T) {
	r := newRig(t, rigOpts{})
	ctx := context.Background()
	docs := []spi.Document{doc("a"), doc("b"), doc("c")}
	first := r.p.Upsert(ctx, docs, none)
	if got := statuses(first); got != "a:ok b:ok c:ok" {
		t.Fatalf("first upsert: %s", got)
	}
	if n := r.emb.embeddedTexts(); n != 3 {
		t.Fatalf("first upsert embedded %d texts, want 3", n)
	}
	st, err := r.p.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head := st.Head

	r.emb.EmbedFn = func(context.Context, []string) ([][]float32, error) {
		return nil, fmt.Errorf("fake: %w: embedding must not be needed", spi.ErrUnavailable)
	}
	again := r.p.Upsert(ctx, docs, none)
	for i, res := range again {
		if res.Status != ingest.StatusOK || !res.Unchanged || res.Version != first[i].Version {
			t.Fatalf("re-upsert of %s = %+v, want ok, unchanged, version %d", res.ID, res, first[i].Version)
		}
	}
	if n := r.emb.embeddedTexts(); n != 3 {
		t.Fatalf("re-upsert asked the embedder for %d more texts, want none", n-3)
	}
	if st, err := r.p.Status(ctx); err != nil || st.Head != head {
		t.Fatalf("log head %d -> %d (%v): an unchanged write appended an entry", head, st.Head, err)
	}
	if e := r.p.EmbedStatus(); e.Reused != 3 || e.Embedded != 3 || e.Pending != 0 {
		t.Fatalf("embed status = %+v, want 3 embedded, 3 reused, none pending", e)
	}
}

// TestMetadataChangeKeepsTheVector: a change that leaves the title and the
// text alone is written (a new version) with the stored vector, without
// embedding; a changed text is embedded.
func TestMetadataChangeKeepsTheVector(t *testing.T) {
	r := newRig(t, rigOpts{})
	ctx := context.Background()
	a, b := doc("a"), doc("b")
	first := r.p.Upsert(ctx, []spi.Document{a, b}, none)
	stored := hydrate(t, r, "a")

	a.Metadata = spi.Strings(map[string]string{"lang": "en"})
	b.Text = "aerodynamics of a different wing"
	res := r.p.Upsert(ctx, []spi.Document{a, b}, none)
	if got := statuses(res); got != "a:ok b:ok" {
		t.Fatalf("statuses = %s", got)
	}
	if res[0].Unchanged || res[0].Version <= first[1].Version {
		t.Fatalf("metadata change = %+v, want a new version", res[0])
	}
	calls := r.emb.calls
	if last := calls[len(calls)-1]; len(calls) != 2 || !slices.Equal(last, []string{ingest.DefaultEmbedText(b)}) {
		t.Fatalf("embedder calls = %q, want the first batch and then b's new text alone", calls)
	}
	got := hydrate(t, r, "a")
	if !got.Metadata["lang"].Equal(spi.String("en")) || !slices.Equal(got.Vector, stored.Vector) {
		t.Fatalf("a = %+v, want the new metadata with the stored vector %v", got, stored.Vector)
	}
}

// TestReuseNeedsTheSameEmbeddedText: a title change alone changes the
// embedded text, so the document is embedded again.
func TestReuseNeedsTheSameEmbeddedText(t *testing.T) {
	r := newRig(t, rigOpts{})
	ctx := context.Background()
	a := doc("a")
	r.p.Upsert(ctx, []spi.Document{a}, none)
	a.Title = "another title"
	if got := statuses(r.p.Upsert(ctx, []spi.Document{a}, none)); got != "a:ok" {
		t.Fatalf("statuses = %s", got)
	}
	if n := r.emb.embeddedTexts(); n != 2 {
		t.Fatalf("embedded %d texts, want 2 (the title is part of the embedded text)", n)
	}
}

// TestReuseSurvivesAnUnreadableRecord: when the stored documents cannot be
// read, the documents are embedded as before rather than failed.
func TestReuseSurvivesAnUnreadableRecord(t *testing.T) {
	r := newRig(t, rigOpts{})
	ctx := context.Background()
	r.p.Upsert(ctx, []spi.Document{doc("a")}, none)
	r.rec.setCurrent(func(context.Context, []string) ([]spi.Change, error) {
		return nil, fmt.Errorf("fake: %w", spi.ErrUnavailable)
	})
	if got := statuses(r.p.Upsert(ctx, []spi.Document{doc("a")}, none)); got != "a:ok" {
		t.Fatalf("statuses = %s", got)
	}
	if n := r.emb.embeddedTexts(); n != 2 {
		t.Fatalf("embedded %d texts, want 2", n)
	}
}

// TestEmbedStatusReportsPendingAndETA: while a batch is being embedded its
// texts are pending; afterwards the throughput and an ETA for the next
// writes are known. The embedder blocks in a hook; the clock is fake.
func TestEmbedStatusReportsPendingAndETA(t *testing.T) {
	var mu sync.Mutex
	now := fixedNow
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	r := newRig(t, rigOpts{config: func(c *ingest.Config) { c.Now = clock; c.EmbedBatch = 2 }})
	entered := make(chan int)
	release := make(chan struct{})
	r.emb.EmbedFn = func(_ context.Context, texts []string) ([][]float32, error) {
		entered <- len(texts)
		<-release
		return vectors(4, texts), nil
	}
	done := make(chan []ingest.Result)
	go func() {
		done <- r.p.Upsert(context.Background(), []spi.Document{doc("a"), doc("b"), doc("c"), doc("d")}, none)
	}()
	<-entered
	if e := r.p.EmbedStatus(); e.Pending != 4 || e.ETASeconds != 0 {
		t.Fatalf("during the first batch: %+v, want 4 pending and no ETA yet", e)
	}
	advance(time.Second) // the first batch of 2 takes 1 s
	release <- struct{}{}
	<-entered
	e := r.p.EmbedStatus()
	if e.Pending != 2 || e.Embedded != 2 || e.RatePerSecond != 2 || e.ETASeconds != 1 {
		t.Fatalf("during the second batch: %+v, want 2 pending, 2 embedded, 2/s, ETA 1 s", e)
	}
	release <- struct{}{}
	if got := statuses(<-done); got != "a:ok b:ok c:ok d:ok" {
		t.Fatalf("statuses = %s", got)
	}
	st, err := r.p.Status(context.Background())
	if err != nil || st.Embedding == nil || st.Embedding.Pending != 0 || st.Embedding.Embedded != 4 {
		t.Fatalf("status embedding = %+v (%v), want 4 embedded, none pending", st.Embedding, err)
	}
}

// TestFailedEmbeddingIsNotPending: texts whose embedding failed leave the
// pending count.
func TestFailedEmbeddingIsNotPending(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.emb.EmbedFn = func(context.Context, []string) ([][]float32, error) {
		return nil, errors.New("fake: down")
	}
	r.p.Upsert(context.Background(), []spi.Document{doc("a"), doc("b")}, none)
	if e := r.p.EmbedStatus(); e.Pending != 0 || e.Embedded != 0 {
		t.Fatalf("embed status = %+v, want nothing pending or embedded", e)
	}
}

func hydrate(t *testing.T, r *rig, id string) spi.Document {
	t.Helper()
	docs, _, err := r.rec.Hydrate(context.Background(), []string{id})
	if err != nil || len(docs) != 1 {
		t.Fatalf("hydrate %s: %v, %v", id, docs, err)
	}
	return docs[0]
}

// TestEmbedRateForgetsAnIdleSpell: a rate measured before a pause (here a
// fast one, as texts a vector cache answers) fades by the pause's length,
// so the next bulk load's ETA follows its own pace.
func TestEmbedRateForgetsAnIdleSpell(t *testing.T) {
	var mu sync.Mutex
	now := fixedNow
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	r := newRig(t, rigOpts{config: func(c *ingest.Config) { c.Now = clock }})
	r.emb.EmbedFn = func(_ context.Context, texts []string) ([][]float32, error) {
		if strings.HasPrefix(texts[0], "title slow") {
			advance(10 * time.Second) // 10 s for this batch
		} else {
			advance(time.Millisecond)
		}
		return vectors(4, texts), nil
	}
	fast := make([]spi.Document, 64)
	for i := range fast {
		fast[i] = doc(fmt.Sprint("fast", i))
	}
	r.p.Upsert(context.Background(), fast, none)
	if e := r.p.EmbedStatus(); e.RatePerSecond < 10000 {
		t.Fatalf("rate after a fast batch %v", e.RatePerSecond)
	}
	advance(time.Minute) // idle
	slow := make([]spi.Document, 10)
	for i := range slow {
		slow[i] = doc(fmt.Sprint("slow", i))
	}
	r.p.Upsert(context.Background(), slow, none)
	// 10 texts in 10 s: 1/s. 70 s after the fast batch (seven half-lives)
	// its 64,000/s weighs 1/128: about 501/s. Weighted by the batch's own
	// 10 s only, it would still be about 32,000/s.
	if e := r.p.EmbedStatus(); e.RatePerSecond > 1000 || e.RatePerSecond < 1 {
		t.Fatalf("rate after a minute idle and a slow batch: %v/s, want the old fast rate faded", e.RatePerSecond)
	}
}
