package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	graphembedded "github.com/ragd/ragd/backends/graph/embedded"
	"github.com/ragd/ragd/backends/keyword"
	vectorembedded "github.com/ragd/ragd/backends/vector/embedded"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/spi"
)

var fixedNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// rig is a pipeline over real embedded stores: the vector store is the
// record, bleve and the embedded graph are derived. The derived stores and
// the record are wrapped for fault injection.
type rig struct {
	p     *ingest.Pipeline
	rec   *faultyRecord
	kw    *faultyApplier
	graph *faultyApplier
	kwB   *keyword.Backend
	grB   *graphembedded.Store
	emb   *fakeEmbedder
	dir   string
	stop  func()
}

type rigOpts struct {
	dir    string // reuse stores from an earlier rig
	noRun  bool   // do not start the appliers
	config func(*ingest.Config)
}

func newRig(t *testing.T, o rigOpts) *rig {
	t.Helper()
	dir := o.dir
	if dir == "" {
		dir = t.TempDir()
	}
	ctx := context.Background()
	vs, err := vectorembedded.Open(ctx, vectorembedded.Config{Dir: dir + "/vector", Dimension: 4, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	kw, err := keyword.Open(keyword.Config{Dir: dir + "/keyword"})
	if err != nil {
		t.Fatal(err)
	}
	gr, err := graphembedded.Open(ctx, graphembedded.Config{Dir: dir + "/graph", NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{rec: &faultyRecord{spitestRecord: vs}, kw: &faultyApplier{ChangeApplier: kw}, graph: &faultyApplier{ChangeApplier: gr},
		kwB: kw, grB: gr, emb: &fakeEmbedder{dim: 4}, dir: dir}
	cfg := ingest.Config{
		Record: r.rec,
		Derived: []ingest.NamedApplier{
			{Name: spi.SourceKeyword, Applier: r.kw},
			{Name: spi.SourceGraph, Applier: r.graph},
		},
		Embedder: r.emb,
		Poll:     20 * time.Millisecond,
		Now:      func() time.Time { return fixedNow },
	}
	if o.config != nil {
		o.config(&cfg)
	}
	p, err := ingest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.p = p
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	if o.noRun {
		close(done)
	} else {
		go func() { defer close(done); p.Run(runCtx) }()
	}
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			<-done
			r.kw.set(nil, nil)
			r.graph.set(nil, nil)
			for _, c := range []interface{ Close() error }{gr, kw, vs} {
				if err := c.Close(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	t.Cleanup(r.stop)
	return r
}

func doc(id string) spi.Document {
	return spi.Document{ID: id, Title: "title " + id, Text: "aerodynamics of wing " + id}
}

func statuses(rs []ingest.Result) string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%s", r.ID, r.Status)
		if r.Code != "" {
			fmt.Fprintf(&b, "/%s", r.Code)
		}
	}
	return b.String()
}

var none ingest.WriteOptions

// waitFor polls cond for up to 30 s (generous: the machine may be loaded).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// converged checks every derived store against the record and fails on
// any difference.
func (r *rig) converged(t *testing.T) ingest.CheckReport {
	t.Helper()
	rep, err := r.p.Check(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Stores {
		if s.Error != "" || s.Differences() > 0 {
			t.Fatalf("store %s differs from the record: %+v", s.Store, s)
		}
	}
	return rep
}

// settle steps store's applier until a step applies nothing, and fails
// when ten steps do not get there.
func (r *rig) settle(t *testing.T, store string) {
	t.Helper()
	for i := 0; ; i++ {
		n, err := r.p.Step(context.Background(), store)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if i == 10 {
			t.Fatalf("the %s applier does not settle", store)
		}
	}
}

func (r *rig) kwText(t *testing.T, id string) (string, bool) {
	t.Helper()
	docs, _, err := r.kwB.Hydrate(context.Background(), []string{id})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		return "", false
	}
	return docs[0].Text, true
}

func TestUpsertReachesEveryStore(t *testing.T) {
	r := newRig(t, rigOpts{})
	res := r.p.Upsert(context.Background(), []spi.Document{doc("a"), doc("b")}, ingest.WriteOptions{Wait: 30 * time.Second})
	if got := statuses(res); got != "a:ok b:ok" {
		t.Fatalf("statuses = %s", got)
	}
	for _, x := range res {
		if x.Version == 0 {
			t.Errorf("%s has no version", x.ID)
		}
		want := map[string]string{"vector": "ok", "keyword": "current", "graph": "current"}
		for k, v := range want {
			if x.Stores[k] != v {
				t.Errorf("%s: stores = %v, want %v (wait was given)", x.ID, x.Stores, want)
			}
		}
	}
	if text, ok := r.kwText(t, "a"); !ok || text != doc("a").Text {
		t.Fatalf("keyword holds a = %q, %v", text, ok)
	}
	rep := r.converged(t)
	if rep.Head != res[1].Version {
		t.Fatalf("log head = %d, want the last version %d", rep.Head, res[1].Version)
	}
	st, err := r.p.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st.Stores {
		if s.Behind != 0 || s.LagSeconds != 0 || s.Applied != st.Head {
			t.Errorf("lag of %s = %+v, want none at head %d", s.Store, s, st.Head)
		}
	}
}

// TestHungStoreDoesNotDelayWrites: a derived store that never answers does
// not hold the write's answer; the answer says the store is pending, and
// the store catches up when it answers again.
func TestHungStoreDoesNotDelayWrites(t *testing.T) {
	r := newRig(t, rigOpts{})
	release := make(chan struct{})
	r.graph.set(nil, release)
	type out struct{ res []ingest.Result }
	ch := make(chan out, 1)
	go func() { ch <- out{r.p.Upsert(context.Background(), []spi.Document{doc("a")}, none)} }()
	var res []ingest.Result
	select {
	case o := <-ch:
		res = o.res
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("the write waited for the hung graph store")
	}
	if res[0].Status != ingest.StatusOK || res[0].Stores["graph"] != ingest.StorePending {
		t.Fatalf("result = %+v, want ok with graph pending", res[0])
	}
	waitFor(t, "keyword to apply the write", func() bool {
		_, ok := r.kwText(t, "a")
		return ok
	})
	// With wait, the answer still comes, after the wait, naming the store
	// that is not current. (The wait is long enough for keyword to apply
	// on a loaded machine; the hung graph makes it last that long.)
	res = r.p.Upsert(context.Background(), []spi.Document{doc("b")}, ingest.WriteOptions{Wait: 3 * time.Second})
	if res[0].Status != ingest.StatusOK || res[0].Stores["graph"] != ingest.StorePending || res[0].Stores["keyword"] != ingest.StoreCurrent {
		t.Fatalf("result with wait = %+v, want keyword current and graph pending", res[0])
	}
	close(release)
	r.graph.set(nil, nil)
	waitFor(t, "the graph to catch up", func() bool {
		st, err := r.p.Status(context.Background())
		return err == nil && st.Stores[1].Behind == 0
	})
	r.converged(t)
}

func TestFailingStoreReportsLagAndRecovers(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.kw.set(fmt.Errorf("keyword: %w: disk full", spi.ErrUnavailable), nil)
	r.p.Upsert(context.Background(), []spi.Document{doc("a"), doc("b"), doc("c")}, none)
	waitFor(t, "the keyword lag to show the failure", func() bool {
		st, err := r.p.Status(context.Background())
		return err == nil && st.Stores[0].Behind == 3 && st.Stores[0].Error != "" && st.Stores[0].LagSeconds >= 0
	})
	st, _ := r.p.Status(context.Background())
	if strings.Contains(st.Stores[0].Error, "disk full") {
		t.Errorf("the lag error quotes the backend: %q", st.Stores[0].Error)
	}
	if st.Stores[1].Behind != 0 && st.Stores[1].Error != "" {
		t.Errorf("graph is affected by the keyword failure: %+v", st.Stores[1])
	}
	r.kw.set(nil, nil)
	waitFor(t, "keyword to recover", func() bool {
		st, err := r.p.Status(context.Background())
		return err == nil && st.Stores[0].Behind == 0 && st.Stores[0].Error == ""
	})
	r.converged(t)
}

func TestInvalidDocumentsFailIndividually(t *testing.T) {
	r := newRig(t, rigOpts{})
	long := strings.Repeat("x", ingest.DefaultMaxTextBytes+1)
	docs := []spi.Document{
		doc("good1"),
		{ID: "", Text: "no id"},
		{ID: "bad\x00id", Text: "nul in id"},
		{ID: "bad-utf8-\xff", Text: "invalid id"},
		{ID: "nul-text", Text: "a\x00b"},
		{ID: "nul-title", Title: "a\x00b", Text: "t"},
		{ID: "nul-meta", Text: "t", Metadata: spi.Strings(map[string]string{"k": "v\x00"})},
		{ID: "bad-text-utf8", Text: "\xffabc"},
		{ID: "zero-vector", Text: "t", Vector: []float32{0, 0, 0, 0}},
		{ID: "nan-vector", Text: "t", Vector: []float32{1, float32(math.NaN()), 0, 0}},
		{ID: "short-vector", Text: "t", Vector: []float32{1}},
		{ID: "too-long", Text: long},
		{ID: "empty"},
		{ID: "year-10000-utc", Text: "t", UpdatedAt: time.Date(9999, 12, 31, 23, 59, 59, 0, time.FixedZone("", -(23*3600+59*60)))},
		{ID: "year-0-utc", Text: "t", UpdatedAt: time.Date(1, 1, 1, 0, 0, 0, 0, time.FixedZone("", 3600))},
		{ID: "bad-entity", Text: "t", Entities: []string{""}},
		{ID: "bad-link", Text: "t", Links: []string{"a\x00b"}},
		{ID: "many-links", Text: "t", Links: make([]string, ingest.DefaultMaxLinks+1)},
		doc("good2"),
	}
	res := r.p.Upsert(context.Background(), docs, ingest.WriteOptions{Wait: 30 * time.Second})
	want := ":failed/invalid_id bad\x00id:failed/invalid_id bad-utf8-\xff:failed/invalid_id nul-text:failed/invalid_text " +
		"nul-title:failed/invalid_text nul-meta:failed/invalid_metadata bad-text-utf8:failed/invalid_text " +
		"zero-vector:failed/invalid_vector nan-vector:failed/invalid_vector short-vector:failed/invalid_vector " +
		"too-long:failed/too_large empty:failed/empty_document " +
		"year-10000-utc:failed/invalid_updated_at year-0-utc:failed/invalid_updated_at " +
		"bad-entity:failed/invalid_entities bad-link:failed/invalid_links many-links:failed/invalid_links"
	if got := statuses(res); got != "good1:ok "+want+" good2:ok" {
		t.Fatalf("statuses =\n%q\nwant\n%q", got, "good1:ok "+want+" good2:ok")
	}
	for _, x := range res {
		if x.Status == ingest.StatusFailed && (strings.Contains(x.Error, "good") || x.Stores != nil) {
			t.Errorf("%q: error %q stores %v: a failure names another document or claims a store", x.ID, x.Error, x.Stores)
		}
	}
	r.converged(t)
}

// TestRecordBatchErrorIsBisected: the record rejects any batch that holds
// "poison" (as PostgreSQL rejects a whole transaction); the others land.
func TestRecordBatchErrorIsBisected(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.rec.setCommit(func(ctx context.Context, ws []spi.Write, next func(context.Context, []spi.Write) ([]spi.WriteResult, error)) ([]spi.WriteResult, error) {
		for _, w := range ws {
			if w.Doc.ID == "poison" {
				return nil, fmt.Errorf("vector: commit: %w: invalid byte sequence", spi.ErrInvalidQuery)
			}
		}
		return next(ctx, ws)
	})
	var docs []spi.Document
	for i := range 9 {
		docs = append(docs, doc(fmt.Sprint("d", i)))
	}
	docs[5].ID = "poison"
	res := r.p.Upsert(context.Background(), docs, none)
	for i, x := range res {
		want := ingest.StatusOK
		if i == 5 {
			want = ingest.StatusFailed
		}
		if x.Status != want {
			t.Fatalf("%s: %s (%s %s), want %s", x.ID, x.Status, x.Code, x.Error, want)
		}
	}
	if res[5].Code != ingest.CodeStoreRejected || !strings.Contains(res[5].Error, "invalid byte sequence") {
		t.Fatalf("poison = %+v, want store_rejected with the reason", res[5])
	}
}

func TestRecordUnavailableFailsTheBatch(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.rec.setCommit(func(context.Context, []spi.Write, func(context.Context, []spi.Write) ([]spi.WriteResult, error)) ([]spi.WriteResult, error) {
		return nil, fmt.Errorf("vector: commit: %w: dial tcp 10.0.0.7:5432: connection refused", spi.ErrUnavailable)
	})
	res := r.p.Upsert(context.Background(), []spi.Document{doc("a"), doc("b")}, none)
	for _, x := range res {
		if x.Code != ingest.CodeStoreUnavailable || strings.Contains(x.Error, "10.0.0.7") || x.Stores != nil {
			t.Fatalf("%+v: want store_unavailable without the backend's text", x)
		}
	}
}

// TestRetryAfterLostReplyIsIdempotent: the record commits but the answer is
// lost; the write is reported as of unknown outcome, and its retry changes
// nothing and reports the version it already had.
func TestRetryAfterLostReplyIsIdempotent(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.rec.setCommit(func(ctx context.Context, ws []spi.Write, next func(context.Context, []spi.Write) ([]spi.WriteResult, error)) ([]spi.WriteResult, error) {
		if _, err := next(ctx, ws); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("vector: commit: %w: connection reset", spi.ErrOutcomeUnknown)
	})
	d := doc("a")
	res := r.p.Upsert(context.Background(), []spi.Document{d}, none)
	if res[0].Code != ingest.CodeOutcomeUnknown || !strings.Contains(res[0].Error, "retry") {
		t.Fatalf("lost reply = %+v, want outcome_unknown asking for a retry", res[0])
	}
	r.rec.setCommit(nil)
	// The derived stores got it anyway, from the log.
	waitFor(t, "keyword to apply the committed write", func() bool { _, ok := r.kwText(t, "a"); return ok })
	retry := r.p.Upsert(context.Background(), []spi.Document{d}, ingest.WriteOptions{Wait: 30 * time.Second})
	if retry[0].Status != ingest.StatusOK || !retry[0].Unchanged {
		t.Fatalf("retry = %+v, want ok and unchanged", retry[0])
	}
	st, err := r.p.Status(context.Background())
	if err != nil || st.Head != retry[0].Version {
		t.Fatalf("log head = %d (%v), want %d: the retry appended an entry", st.Head, err, retry[0].Version)
	}
	if retry[0].Stores["keyword"] != ingest.StoreCurrent {
		t.Fatalf("retry stores = %v, want keyword current", retry[0].Stores)
	}
	r.converged(t)
}

func TestTenantRule(t *testing.T) {
	r := newRig(t, rigOpts{})
	acme := ingest.WriteOptions{Tenant: "acme"}
	globex := ingest.WriteOptions{Tenant: "globex"}
	res := r.p.Upsert(context.Background(), []spi.Document{doc("x"), {ID: "y", Tenant: "globex", Text: "t"}}, acme)
	if got := statuses(res); got != "x:ok y:failed/tenant_forbidden" {
		t.Fatalf("statuses = %s", got)
	}
	res = r.p.Upsert(context.Background(), []spi.Document{doc("x"), doc("z")}, globex)
	if got := statuses(res); got != "x:failed/id_conflict z:ok" {
		t.Fatalf("statuses = %s", got)
	}
	if strings.Contains(res[0].Error, "acme") || strings.Contains(res[0].Error, "tenant") {
		t.Fatalf("id_conflict message %q reveals the other tenant", res[0].Error)
	}
	del := r.p.Delete(context.Background(), []string{"x", "z", "nope"}, globex)
	if got := statuses(del); got != "x:not_found z:ok nope:not_found" {
		t.Fatalf("delete statuses = %s", got)
	}
	docs, _, err := r.rec.Hydrate(context.Background(), []string{"x"})
	if err != nil || len(docs) != 1 || docs[0].Tenant != "acme" {
		t.Fatalf("x = %+v, %v; want acme's document untouched", docs, err)
	}
}

// TestConcurrentWritersConverge: writers race upserts and deletes over a
// few ids; afterwards every store equals the record.
func TestConcurrentWritersConverge(t *testing.T) {
	r := newRig(t, rigOpts{config: func(c *ingest.Config) { c.ApplyBatch = 3 }})
	ids := []string{"a", "b", "c"}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range 25 {
				id := ids[rnd.IntN(len(ids))]
				if rnd.IntN(4) == 0 {
					r.p.Delete(context.Background(), []string{id}, none)
					continue
				}
				d := doc(id)
				d.Text = fmt.Sprintf("writer %d round %d", w, i)
				if res := r.p.Upsert(context.Background(), []spi.Document{d}, none); res[0].Status != ingest.StatusOK {
					t.Errorf("upsert: %+v", res[0])
				}
			}
		})
	}
	wg.Wait()
	r.converged(t)
	// Same content too, not only the same versions.
	for _, id := range ids {
		rec, _, _ := r.rec.Hydrate(context.Background(), []string{id})
		text, ok := r.kwText(t, id)
		if ok != (len(rec) == 1) || (ok && text != rec[0].Text) {
			t.Fatalf("%s: keyword holds %q (%v), record %+v", id, text, ok, rec)
		}
	}
}

// TestCheckFindsAndRepairs damages the keyword index behind the
// pipeline's back: a ghost, a lost document and a stale version.
func TestCheckFindsAndRepairs(t *testing.T) {
	r := newRig(t, rigOpts{})
	ctx := context.Background()
	r.p.Upsert(ctx, []spi.Document{doc("a"), doc("b"), doc("c")}, ingest.WriteOptions{Wait: 30 * time.Second})
	if err := r.kwB.Upsert(ctx, []spi.Document{doc("ghost"), doc("c")}); err != nil {
		t.Fatal(err)
	}
	if err := r.kwB.Delete(ctx, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	rep, err := r.p.Check(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	kw := rep.Stores[0]
	// c was rewritten outside the log: present, but not at the record's version.
	if kw.Store != "keyword" || kw.Missing != 1 || kw.Extra != 1 || kw.Stale != 1 || len(kw.Examples) != 3 {
		t.Fatalf("keyword check = %+v, want b missing, c stale, ghost extra", kw)
	}
	if g := rep.Stores[1]; g.Differences() != 0 {
		t.Fatalf("graph check = %+v, want no difference", g)
	}
	rep, err = r.p.Check(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if kw := rep.Stores[0]; kw.Repaired != 3 || kw.Remaining != 0 {
		t.Fatalf("repair = %+v, want 3 repaired, none remaining", kw)
	}
	r.converged(t)
	if _, ok := r.kwText(t, "ghost"); ok {
		t.Fatal("the ghost survived the repair")
	}
}

// TestRestartAppliesWhatWasMissed: writes committed while no applier ran
// (a crash right after the commit) reach the stores after a restart.
func TestRestartAppliesWhatWasMissed(t *testing.T) {
	r := newRig(t, rigOpts{noRun: true})
	ctx := context.Background()
	res := r.p.Upsert(ctx, []spi.Document{doc("a"), doc("b")}, none)
	r.p.Delete(ctx, []string{"a"}, none)
	if res[0].Stores["keyword"] != ingest.StorePending {
		t.Fatalf("stores = %v, want keyword pending", res[0].Stores)
	}
	dir := r.dir
	r.stop()
	r2 := newRig(t, rigOpts{dir: dir})
	waitFor(t, "the restarted appliers to catch up", func() bool {
		st, err := r2.p.Status(ctx)
		return err == nil && st.Stores[0].Behind == 0 && st.Stores[1].Behind == 0
	})
	r2.converged(t)
	if _, ok := r2.kwText(t, "a"); ok {
		t.Fatal("a was deleted but keyword still holds it")
	}
}

// TestCompactionPastAStoreResynchronisesIt: a store whose checkpoint is
// below what compaction removed is rebuilt from the record's documents.
func TestCompactionPastAStoreResynchronisesIt(t *testing.T) {
	now := fixedNow
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	r := newRig(t, rigOpts{noRun: true, config: func(c *ingest.Config) { c.Now = clock; c.Retention = time.Hour }})
	ctx := context.Background()
	r.p.Upsert(ctx, []spi.Document{doc("a"), doc("b"), doc("c")}, none)
	r.p.Delete(ctx, []string{"b"}, none)
	// Another replica's pipeline (sharing nothing but the record) has
	// applied everything and compacts.
	other, err := ingest.New(ingest.Config{Record: r.rec, Now: func() time.Time { return time.Now().Add(48 * time.Hour) }, Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	n, err := other.Compact(ctx)
	if err != nil || n != 3 {
		t.Fatalf("Compact removed %d, %v; want 3 (the newest entry stays)", n, err)
	}
	dir := r.dir
	r.stop()
	r2 := newRig(t, rigOpts{dir: dir})
	waitFor(t, "the resynchronised stores to catch up", func() bool {
		st, err := r2.p.Status(ctx)
		return err == nil && st.Stores[0].Behind == 0 && st.Stores[1].Behind == 0
	})
	r2.converged(t)
	for id, want := range map[string]bool{"a": true, "b": false, "c": true} {
		if _, ok := r2.kwText(t, id); ok != want {
			t.Errorf("keyword holds %s: %v, want %v", id, ok, want)
		}
	}
}

func TestDeleteReportsNotFound(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.p.Upsert(context.Background(), []spi.Document{doc("a")}, none)
	res := r.p.Delete(context.Background(), []string{"a", "missing", "", "a"}, ingest.WriteOptions{Wait: 30 * time.Second})
	if got := statuses(res); got != "a:ok missing:not_found :failed/invalid_id a:failed/duplicate_id" {
		t.Fatalf("statuses = %s", got)
	}
	if res[0].Stores["keyword"] != ingest.StoreCurrent || res[0].Version == 0 {
		t.Fatalf("delete result = %+v, want a version and keyword current", res[0])
	}
	r.converged(t)
}

func TestEmbedderDown(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.emb.EmbedFn = func(context.Context, []string) ([][]float32, error) {
		return nil, fmt.Errorf("openai: %w: 503 from 10.1.2.3", spi.ErrUnavailable)
	}
	given := doc("given")
	given.Vector = []float32{1, 0, 0, 0}
	res := r.p.Upsert(context.Background(), []spi.Document{doc("a"), given}, none)
	if got := statuses(res); got != "a:failed/embedder_unavailable given:ok" {
		t.Fatalf("statuses = %s", got)
	}
	if strings.Contains(res[0].Error, "10.1.2.3") {
		t.Fatalf("error quotes the backend: %q", res[0].Error)
	}
}

func TestEmbedderBadOutput(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.emb.EmbedFn = func(_ context.Context, texts []string) ([][]float32, error) {
		out := vectors(4, texts)
		out[0][1] = float32(math.Inf(1))
		return out, nil
	}
	res := r.p.Upsert(context.Background(), []spi.Document{doc("a")}, none)
	if res[0].Code != ingest.CodeEmbedderUnavailable {
		t.Fatalf("result = %+v, want embedder_unavailable", res[0])
	}
}

func TestEmbedderRejectsOneTextOfABatch(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.emb.EmbedFn = func(_ context.Context, texts []string) ([][]float32, error) {
		for _, x := range texts {
			if strings.Contains(x, "huge") {
				return nil, fmt.Errorf("%w: too many tokens", spi.ErrInvalidQuery)
			}
		}
		return vectors(4, texts), nil
	}
	huge := doc("huge")
	res := r.p.Upsert(context.Background(), []spi.Document{doc("a"), huge, doc("b")}, none)
	if got := statuses(res); got != "a:ok huge:failed/embedder_rejected b:ok" {
		t.Fatalf("statuses = %s", got)
	}
}

func TestDuplicateIDInBatch(t *testing.T) {
	r := newRig(t, rigOpts{})
	res := r.p.Upsert(context.Background(), []spi.Document{doc("a"), doc("a")}, none)
	if got := statuses(res); got != "a:ok a:failed/duplicate_id" {
		t.Fatalf("statuses = %s", got)
	}
}

func TestCanceledContext(t *testing.T) {
	r := newRig(t, rigOpts{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := r.p.Upsert(ctx, []spi.Document{doc("a")}, none)
	if res[0].Status != ingest.StatusFailed || res[0].Code != ingest.CodeCanceled {
		t.Fatalf("result = %+v, want canceled", res[0])
	}
}

type fixedExtractor struct{ err error }

func (f fixedExtractor) Extract(_ context.Context, d spi.Document) ([]string, error) {
	return []string{"entity of " + d.ID}, f.err
}

func TestExtractor(t *testing.T) {
	r := newRig(t, rigOpts{config: func(c *ingest.Config) { c.Extractor = fixedExtractor{} }})
	given := doc("given")
	given.Entities = []string{"kept"}
	r.p.Upsert(context.Background(), []spi.Document{doc("a"), given}, ingest.WriteOptions{Wait: 30 * time.Second})
	docs, _, err := r.rec.Hydrate(context.Background(), []string{"a", "given"})
	if err != nil || len(docs) != 2 {
		t.Fatal(docs, err)
	}
	if strings.Join(docs[0].Entities, ",") != "entity of a" || strings.Join(docs[1].Entities, ",") != "kept" {
		t.Fatalf("entities = %v / %v", docs[0].Entities, docs[1].Entities)
	}
}

func TestExtractorFailureIsNotFatal(t *testing.T) {
	r := newRig(t, rigOpts{config: func(c *ingest.Config) { c.Extractor = fixedExtractor{err: errors.New("boom")} }})
	if res := r.p.Upsert(context.Background(), []spi.Document{doc("a")}, none); res[0].Status != ingest.StatusOK {
		t.Fatalf("result = %+v", res[0])
	}
}

// TestKeywordOnlyDeployment: without a change log the record is written
// directly and the tenant rule still holds (checked before the write).
func TestKeywordOnlyDeployment(t *testing.T) {
	kw := newStore()
	p, err := ingest.New(ingest.Config{Record: kw, RecordName: "keyword"})
	if err != nil {
		t.Fatal(err)
	}
	res := p.Upsert(context.Background(), []spi.Document{doc("a")}, ingest.WriteOptions{Tenant: "acme"})
	if got := statuses(res); got != "a:ok" || res[0].Stores["keyword"] != ingest.StoreOK {
		t.Fatalf("statuses = %s, stores %v", got, res[0].Stores)
	}
	res = p.Upsert(context.Background(), []spi.Document{doc("a")}, ingest.WriteOptions{Tenant: "globex"})
	if got := statuses(res); got != "a:failed/id_conflict" {
		t.Fatalf("statuses = %s", got)
	}
	vec := doc("v")
	vec.Vector = []float32{1}
	if res := p.Upsert(context.Background(), []spi.Document{vec}, none); res[0].Code != ingest.CodeInvalidVector {
		t.Fatalf("vector without a vector store = %+v", res[0])
	}
	if _, err := p.Check(context.Background(), false); !errors.Is(err, ingest.ErrNoLog) {
		t.Fatalf("Check without a log = %v, want ErrNoLog", err)
	}
}

func TestConfigValidate(t *testing.T) {
	kw := newStore()
	cases := []struct {
		name string
		cfg  ingest.Config
	}{
		{"no record", ingest.Config{}},
		{"derived without a log", ingest.Config{Record: kw, Derived: []ingest.NamedApplier{{Name: "graph", Applier: &faultyApplier{}}}}},
		{"negative batch", ingest.Config{Record: kw, BatchSize: -1}},
		{"negative limit", ingest.Config{Record: kw, Limits: ingest.Limits{MaxTextBytes: -1}}},
		{"dimension mismatch", ingest.Config{Record: kw, Embedder: &fakeEmbedder{dim: 4}, Dimension: 8}},
		{"record dimension", ingest.Config{Record: dimStore{&memStore{docs: map[string]spi.Document{}, dim: 8}}, Embedder: &fakeEmbedder{dim: 4}}},
	}
	for _, c := range cases {
		if err := c.cfg.Validate(); !errors.Is(err, ingest.ErrConfig) {
			t.Errorf("%s: Validate = %v, want ErrConfig", c.name, err)
		}
	}
}

// TestRestoredRecordStopsTheAppliers: a record restored from a backup is
// behind the derived stores' checkpoints; applying on would skip the new
// writes (their sequences were used before), so the appliers stop and say
// so, and rebuilt stores converge.
func TestRestoredRecordStopsTheAppliers(t *testing.T) {
	ctx := context.Background()
	wait := ingest.WriteOptions{Wait: 30 * time.Second}
	r := newRig(t, rigOpts{})
	r.p.Upsert(ctx, []spi.Document{doc("a")}, wait)
	dir := r.dir
	r.stop()
	backup, err := os.ReadFile(filepath.Join(dir, "vector", vectorembedded.FileName))
	if err != nil {
		t.Fatal(err)
	}
	r = newRig(t, rigOpts{dir: dir})
	r.p.Upsert(ctx, []spi.Document{doc("b"), doc("c")}, wait)
	r.stop()
	if err := os.WriteFile(filepath.Join(dir, "vector", vectorembedded.FileName), backup, 0o600); err != nil {
		t.Fatal(err)
	}

	r = newRig(t, rigOpts{dir: dir})
	waitFor(t, "the appliers to report the restore", func() bool {
		st, err := r.p.Status(ctx)
		return err == nil && st.Stores[0].Error != "" && st.Stores[1].Error != ""
	})
	r.stop()
	// The documented way out: remove the derived stores; they are rebuilt.
	for _, d := range []string{"keyword", "graph"} {
		if err := os.RemoveAll(filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	r = newRig(t, rigOpts{dir: dir})
	r.p.Upsert(ctx, []spi.Document{doc("d")}, wait)
	waitFor(t, "the rebuilt stores to catch up", func() bool {
		st, err := r.p.Status(ctx)
		return err == nil && st.Stores[0].Behind == 0 && st.Stores[1].Behind == 0
	})
	r.converged(t)
}

// A log status says when it was read (AsOf, the pipeline's clock just
// before the head), so a caller that waits for the stores to apply what
// was written up to some moment can reject an older status, such as one
// the health endpoint serves from its cache: the crash trials took a
// status cached before PostgreSQL was killed (every store at the head of
// then) for convergence after its restart, and read stores that had not
// applied the entries written in between.
func TestLogStatusSaysWhenItWasRead(t *testing.T) {
	var mu sync.Mutex
	clock := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	r := newRig(t, rigOpts{noRun: true, config: func(c *ingest.Config) {
		c.Now = func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return clock
		}
	}})
	ctx := context.Background()
	before, err := r.p.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !before.AsOf.Equal(clock) {
		t.Fatalf("status read at %v says as of %v", clock, before.AsOf)
	}
	mu.Lock()
	clock = clock.Add(time.Minute)
	mu.Unlock()
	if res := r.p.Upsert(ctx, []spi.Document{doc("a")}, ingest.WriteOptions{}); res[0].Status != ingest.StatusOK {
		t.Fatalf("upsert: %+v", res[0])
	}
	after, err := r.p.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !after.AsOf.Equal(clock) || after.Head <= before.Head {
		t.Fatalf("status after a write at %v: as of %v, head %d (before: as of %v, head %d)", clock, after.AsOf, after.Head, before.AsOf, before.Head)
	}
	// The older status looks converged (nothing applied, nothing written);
	// only its time tells it from a current one.
	for _, l := range before.Stores {
		if l.Applied != before.Head || l.Behind != 0 {
			t.Fatalf("before the write: %+v", before)
		}
	}
	for _, l := range after.Stores {
		if l.Behind == 0 {
			t.Fatalf("after the write, with no applier running: %+v", after)
		}
	}
}
