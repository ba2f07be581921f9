package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/spi"
)

var fixedNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type rig struct {
	p     *ingest.Pipeline
	vec   *memStore
	kw    *memStore
	graph *memStore
	emb   *fakeEmbedder
}

func newRig(t *testing.T, mod func(*ingest.Config)) *rig {
	t.Helper()
	r := &rig{vec: newStore(), kw: newStore(), graph: newStore(), emb: &fakeEmbedder{dim: 4}}
	cfg := ingest.Config{
		Record:   r.vec,
		Derived:  []ingest.NamedIndexer{{Name: spi.SourceKeyword, Indexer: r.kw}, {Name: spi.SourceGraph, Indexer: r.graph}},
		Embedder: r.emb,
		Now:      func() time.Time { return fixedNow },
	}
	if mod != nil {
		mod(&cfg)
	}
	p, err := ingest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.p = p
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

func TestUpsertAllOK(t *testing.T) {
	r := newRig(t, func(c *ingest.Config) { c.BatchSize = 2 })
	in := []spi.Document{doc("a"), doc("b"), doc("c")}
	in[1].Vector = []float32{9, 9, 9, 9} // kept, not re-embedded
	in[2].UpdatedAt = fixedNow.Add(-time.Hour)
	orig := slices.Clone(in)
	res := r.p.Upsert(context.Background(), in)
	if got := statuses(res); got != "a:ok b:ok c:ok" {
		t.Fatalf("results = %s", got)
	}
	for _, res := range res {
		want := map[string]string{"vector": "ok", "keyword": "ok", "graph": "ok"}
		if fmt.Sprint(res.Stores) != fmt.Sprint(want) {
			t.Fatalf("%s stores = %v", res.ID, res.Stores)
		}
	}
	for _, s := range []*memStore{r.vec, r.kw, r.graph} {
		if got := strings.Join(s.ids(), ","); got != "a,b,c" {
			t.Fatalf("store has %s", got)
		}
	}
	a, _ := r.vec.get("a")
	if len(a.Vector) != 4 || a.Vector[1] != 1 {
		t.Fatalf("a was not embedded from title+text: %v", a.Vector)
	}
	if !a.UpdatedAt.Equal(fixedNow) {
		t.Fatalf("UpdatedAt = %v, want injected now", a.UpdatedAt)
	}
	if c, _ := r.vec.get("c"); !c.UpdatedAt.Equal(fixedNow.Add(-time.Hour)) {
		t.Fatalf("a given UpdatedAt was overwritten: %v", c.UpdatedAt)
	}
	if b, _ := r.kw.get("b"); b.Vector[0] != 9 {
		t.Fatalf("given vector replaced: %v", b.Vector)
	}
	// Only a and c were embedded, in one batch, as "title\n\ntext".
	calls := r.emb.batches()
	if len(calls) != 1 || len(calls[0]) != 2 || calls[0][0] != "title a\n\naerodynamics of wing a" {
		t.Fatalf("embed calls = %q", calls)
	}
	if len(orig[0].Vector) != 0 || in[0].Vector != nil || !in[0].UpdatedAt.IsZero() {
		t.Fatal("Upsert modified the caller's documents")
	}
	// BatchSize 2 → the record store saw two writes.
	if r.vec.upserts != 2 {
		t.Fatalf("record upserts = %d, want 2 batches", r.vec.upserts)
	}
}

func TestInvalidDocumentsFailIndividually(t *testing.T) {
	r := newRig(t, func(c *ingest.Config) {
		c.Limits = ingest.Limits{MaxTextBytes: 50, MaxMetadataKeys: 2, MaxEntities: 2}
	})
	bad := []struct {
		doc  spi.Document
		code string
	}{
		{spi.Document{ID: "", Text: "x"}, ingest.CodeInvalidID},
		{spi.Document{ID: strings.Repeat("x", 257), Text: "x"}, ingest.CodeInvalidID},
		{spi.Document{ID: "a\nb", Text: "x"}, ingest.CodeInvalidID},
		{spi.Document{ID: "t1", Tenant: "bad\x00", Text: "x"}, ingest.CodeInvalidTenant},
		{spi.Document{ID: "big", Text: strings.Repeat("y", 51)}, ingest.CodeTooLarge},
		{spi.Document{ID: "utf", Text: "\xff\xfe"}, ingest.CodeInvalidText},
		{spi.Document{ID: "empty"}, ingest.CodeEmptyDocument},
		{spi.Document{ID: "md", Text: "x", Metadata: map[string]string{"a": "1", "b": "2", "c": "3"}}, ingest.CodeInvalidMetadata},
		{spi.Document{ID: "mdkey", Text: "x", Metadata: map[string]string{"": "1"}}, ingest.CodeInvalidMetadata},
		{spi.Document{ID: "dim", Text: "x", Vector: []float32{1, 2}}, ingest.CodeInvalidVector},
		{spi.Document{ID: "nan", Text: "x", Vector: []float32{1, 2, 3, float32(math.NaN())}}, ingest.CodeInvalidVector},
		{spi.Document{ID: "ents", Text: "x", Entities: []string{"a", "b", "c"}}, ingest.CodeInvalidEntities},
		{spi.Document{ID: "ent0", Text: "x", Entities: []string{""}}, ingest.CodeInvalidEntities},
		{spi.Document{ID: "link", Text: "x", Links: []string{"ok", ""}}, ingest.CodeInvalidEntities},
	}
	var in []spi.Document
	var want []string
	for i, b := range bad {
		in = append(in, doc(fmt.Sprint("good", i)), b.doc)
		want = append(want, "ok", b.code)
	}
	res := r.p.Upsert(context.Background(), in)
	for i, res := range res {
		got := res.Status
		if res.Status == ingest.StatusFailed {
			got = res.Code
			if res.Error == "" || res.Stores != nil {
				t.Errorf("doc %d: failed result needs an error and no stores: %+v", i, res)
			}
		}
		if got != want[i] {
			t.Errorf("doc %d (%.20q): got %s, want %s (%s)", i, in[i].ID, got, want[i], res.Error)
		}
	}
	if n := len(r.vec.ids()); n != len(bad) {
		t.Fatalf("record store has %d docs, want the %d valid ones", n, len(bad))
	}
	// The error never quotes the document's text.
	for _, res := range res {
		if strings.Contains(res.Error, "yyyy") {
			t.Fatalf("error quotes content: %s", res.Error)
		}
	}
}

func TestDuplicateIDInBatch(t *testing.T) {
	r := newRig(t, nil)
	a2 := doc("a")
	a2.Text = "second version"
	res := r.p.Upsert(context.Background(), []spi.Document{doc("a"), a2})
	if got := statuses(res); got != "a:ok a:failed/duplicate_id" {
		t.Fatalf("results = %s", got)
	}
	if d, _ := r.vec.get("a"); d.Text == "second version" {
		t.Fatal("the rejected duplicate was written")
	}
}

func TestEmbedderDown(t *testing.T) {
	r := newRig(t, nil)
	r.emb.EmbedFn = func(context.Context, []string) ([][]float32, error) {
		return nil, fmt.Errorf("embedder: %w: connection refused", spi.ErrUnavailable)
	}
	withVec := doc("v")
	withVec.Vector = []float32{1, 0, 0, 0}
	res := r.p.Upsert(context.Background(), []spi.Document{doc("a"), withVec, doc("b")})
	if got := statuses(res); got != "a:failed/embedder_unavailable v:ok b:failed/embedder_unavailable" {
		t.Fatalf("results = %s", got)
	}
	for _, s := range []*memStore{r.vec, r.kw, r.graph} {
		if got := strings.Join(s.ids(), ","); got != "v" {
			t.Fatalf("a store has %q; nothing may be written for docs that failed to embed", got)
		}
	}
}

func TestEmbedderBadOutput(t *testing.T) {
	for name, fn := range map[string]func(context.Context, []string) ([][]float32, error){
		"too few vectors": func(_ context.Context, texts []string) ([][]float32, error) {
			return vectors(4, texts)[1:], nil
		},
		"wrong dimension": func(_ context.Context, texts []string) ([][]float32, error) {
			return vectors(3, texts), nil
		},
		"NaN": func(_ context.Context, texts []string) ([][]float32, error) {
			v := vectors(4, texts)
			v[0][2] = float32(math.NaN())
			return v, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, nil)
			r.emb.EmbedFn = fn
			res := r.p.Upsert(context.Background(), []spi.Document{doc("a"), doc("b")})
			if got := statuses(res); got != "a:failed/embedder_unavailable b:failed/embedder_unavailable" {
				t.Fatalf("results = %s", got)
			}
			if len(r.vec.ids()) != 0 {
				t.Fatal("bad vectors were written")
			}
		})
	}
}

func TestEmbedderRejectsOneTextOfABatch(t *testing.T) {
	r := newRig(t, nil)
	r.emb.EmbedFn = func(_ context.Context, texts []string) ([][]float32, error) {
		for _, t := range texts {
			if strings.Contains(t, "poison") {
				return nil, fmt.Errorf("embedder: %w: input too long", spi.ErrInvalidQuery)
			}
		}
		return vectors(4, texts), nil
	}
	p := doc("p")
	p.Text = "poison"
	res := r.p.Upsert(context.Background(), []spi.Document{doc("a"), p, doc("b")})
	if got := statuses(res); got != "a:ok p:failed/embedder_rejected b:ok" {
		t.Fatalf("results = %s", got)
	}
}

func TestRecordStoreFailure(t *testing.T) {
	r := newRig(t, nil)
	r.vec.setErr(fmt.Errorf("vector: %w: connection refused", spi.ErrUnavailable))
	res := r.p.Upsert(context.Background(), []spi.Document{doc("a"), doc("b")})
	if got := statuses(res); got != "a:failed/store_unavailable b:failed/store_unavailable" {
		t.Fatalf("results = %s", got)
	}
	want := map[string]string{"vector": "failed", "keyword": "skipped", "graph": "skipped"}
	if fmt.Sprint(res[0].Stores) != fmt.Sprint(want) {
		t.Fatalf("stores = %v, want %v", res[0].Stores, want)
	}
	if len(r.kw.ids())+len(r.graph.ids()) != 0 {
		t.Fatal("derived stores were written although the record failed")
	}
	if len(r.p.Pending()) != 0 {
		t.Fatal("a record failure must not queue repairs")
	}
	// Results reach API clients: the backend's own text stays in the log.
	if res[0].Error != "vector: unavailable" {
		t.Fatalf("error = %q, want the fixed phrase without the backend's text", res[0].Error)
	}
}

func TestRecordStorePartialBatch(t *testing.T) {
	r := newRig(t, nil)
	r.vec.setFail(map[string]error{
		"b": fmt.Errorf("vector: %w: duplicate key", spi.ErrInvalidQuery),
		"c": errors.New("disk full"),
	})
	res := r.p.Upsert(context.Background(), []spi.Document{doc("a"), doc("b"), doc("c")})
	if got := statuses(res); got != "a:ok b:failed/store_rejected c:failed/store_failed" {
		t.Fatalf("results = %s", got)
	}
	// A rejection keeps its reason; any other failure hides the backend's.
	if res[1].Error != "vector rejected the document: spi: invalid query: duplicate key" || res[2].Error != "vector: write failed (details in the server log)" {
		t.Fatalf("errors = %q, %q", res[1].Error, res[2].Error)
	}
	if got := strings.Join(r.kw.ids(), ","); got != "a" {
		t.Fatalf("keyword store has %q, want only the accepted doc", got)
	}
}

func TestDerivedFailureIsPartialAndRepaired(t *testing.T) {
	r := newRig(t, nil)
	r.kw.setErr(fmt.Errorf("keyword: %w: index closed", spi.ErrUnavailable))
	res := r.p.Upsert(context.Background(), []spi.Document{doc("a"), doc("b")})
	if got := statuses(res); got != "a:partial/derived_store_failed b:partial/derived_store_failed" {
		t.Fatalf("results = %s", got)
	}
	want := map[string]string{"vector": "ok", "keyword": "failed", "graph": "ok"}
	if fmt.Sprint(res[0].Stores) != fmt.Sprint(want) {
		t.Fatalf("stores = %v", res[0].Stores)
	}
	if res[0].Error != "keyword: unavailable (queued for repair)" {
		t.Fatalf("error = %q, want the store named without its own text", res[0].Error)
	}
	if got := r.p.Pending(); got["keyword"].Queued != 2 || len(got) != 1 {
		t.Fatalf("Pending = %v", got)
	}

	// Still down: nothing repaired, the error names the store.
	rr, err := r.p.Repair(context.Background())
	if err == nil || !strings.Contains(err.Error(), "keyword") || !errors.Is(err, spi.ErrUnavailable) {
		t.Fatalf("Repair while down: err = %v", err)
	}
	if rr.Repaired != 0 || rr.Remaining != 2 {
		t.Fatalf("Repair while down = %+v", rr)
	}

	r.kw.setErr(nil)
	rr, err = r.p.Repair(context.Background())
	if err != nil || rr.Repaired != 2 || rr.Remaining != 0 {
		t.Fatalf("Repair after recovery = %+v, %v", rr, err)
	}
	if got := strings.Join(r.kw.ids(), ","); got != "a,b" {
		t.Fatalf("keyword store after repair has %q", got)
	}
	if d, _ := r.kw.get("a"); len(d.Vector) != 4 || d.UpdatedAt.IsZero() {
		t.Fatalf("repaired doc lost its vector or timestamp: %+v", d)
	}
	if len(r.p.Pending()) != 0 {
		t.Fatalf("Pending after repair = %v", r.p.Pending())
	}
}

func TestDerivedPartialBatchQueuesOnlyFailed(t *testing.T) {
	r := newRig(t, nil)
	r.graph.setFail(map[string]error{"b": fmt.Errorf("graph: %w", spi.ErrUnavailable)})
	res := r.p.Upsert(context.Background(), []spi.Document{doc("a"), doc("b")})
	if got := statuses(res); got != "a:ok b:partial/derived_store_failed" {
		t.Fatalf("results = %s", got)
	}
	if got := r.p.Pending(); got["graph"].Queued != 1 {
		t.Fatalf("Pending = %v", got)
	}
}

func TestRepairNeverOverwritesNewerVersion(t *testing.T) {
	r := newRig(t, nil)
	r.kw.setErr(fmt.Errorf("%w", spi.ErrUnavailable))
	v1 := doc("a")
	v1.Text = "version one"
	r.p.Upsert(context.Background(), []spi.Document{v1})
	r.kw.setErr(nil)
	v2 := doc("a")
	v2.Text = "version two"
	if got := statuses(r.p.Upsert(context.Background(), []spi.Document{v2})); got != "a:ok" {
		t.Fatalf("second upsert = %s", got)
	}
	if len(r.p.Pending()) != 0 {
		t.Fatalf("a successful newer write must clear the queued older one: %v", r.p.Pending())
	}
	if _, err := r.p.Repair(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d, _ := r.kw.get("a"); d.Text != "version two" {
		t.Fatalf("keyword store has %q after repair", d.Text)
	}
}

func TestRepairQueueOverflowAndRebuildDerived(t *testing.T) {
	r := newRig(t, func(c *ingest.Config) { c.MaxRepairQueue = 2 })
	r.graph.setErr(fmt.Errorf("%w", spi.ErrUnavailable))
	r.p.Upsert(context.Background(), []spi.Document{doc("a"), doc("b"), doc("c")})
	if got := r.p.Pending()["graph"]; got.Queued != 2 || got.Dropped != 1 {
		t.Fatalf("Pending = %+v, want 2 queued 1 dropped", got)
	}
	r.graph.setErr(nil)
	n, err := r.p.RebuildDerived(context.Background(), "graph")
	if err != nil || n != 3 {
		t.Fatalf("RebuildDerived = %d, %v", n, err)
	}
	if got := strings.Join(r.graph.ids(), ","); got != "a,b,c" {
		t.Fatalf("graph after rebuild has %q", got)
	}
	if len(r.p.Pending()) != 0 {
		t.Fatalf("Pending after rebuild = %v", r.p.Pending())
	}
	if _, err := r.p.RebuildDerived(context.Background(), "nope"); !errors.Is(err, ingest.ErrConfig) {
		t.Fatalf("unknown store: %v", err)
	}
}

func TestRebuildDerivedNeedsScanner(t *testing.T) {
	kw := newStore()
	p, err := ingest.New(ingest.Config{
		Record:  struct{ spi.Indexer }{newStore()}, // hides Scan
		Derived: []ingest.NamedIndexer{{Name: "keyword", Indexer: kw}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.RebuildDerived(context.Background(), "keyword"); !errors.Is(err, ingest.ErrNoScanner) {
		t.Fatalf("err = %v, want ErrNoScanner", err)
	}
}

func TestRebuild(t *testing.T) {
	src, dst := newStore(), newStore()
	for i := range 5 {
		d := doc(fmt.Sprint("d", i))
		src.docs[d.ID] = d
	}
	n, err := ingest.Rebuild(context.Background(), src, dst, 2)
	if err != nil || n != 5 {
		t.Fatalf("Rebuild = %d, %v", n, err)
	}
	if dst.upserts != 3 {
		t.Fatalf("dst saw %d upserts, want 3 batches of at most 2", dst.upserts)
	}
	if got := strings.Join(dst.ids(), ","); got != "d0,d1,d2,d3,d4" {
		t.Fatalf("dst has %q", got)
	}

	bad := newStore()
	bad.setErr(fmt.Errorf("%w", spi.ErrUnavailable))
	if _, err := ingest.Rebuild(context.Background(), src, bad, 2); !errors.Is(err, spi.ErrUnavailable) || !strings.Contains(err.Error(), "write") {
		t.Fatalf("write failure: %v", err)
	}
	src.setErr(errors.New("scan broke"))
	if _, err := ingest.Rebuild(context.Background(), src, newStore(), 2); err == nil || !strings.Contains(err.Error(), "scan") {
		t.Fatalf("scan failure: %v", err)
	}
}

func TestDelete(t *testing.T) {
	r := newRig(t, nil)
	r.p.Upsert(context.Background(), []spi.Document{doc("a"), doc("b"), doc("c")})

	res := r.p.Delete(context.Background(), []string{"a", "", "a"})
	if got := statuses(res); got != "a:ok :failed/invalid_id a:ok" {
		t.Fatalf("results = %s", got)
	}
	for _, s := range []*memStore{r.vec, r.kw, r.graph} {
		if got := strings.Join(s.ids(), ","); got != "b,c" {
			t.Fatalf("after delete a store has %q", got)
		}
	}

	// Record failure: nothing else is touched.
	r.vec.setErr(fmt.Errorf("%w", spi.ErrUnavailable))
	res = r.p.Delete(context.Background(), []string{"b"})
	if got := statuses(res); got != "b:failed/store_unavailable" || res[0].Stores["keyword"] != "skipped" {
		t.Fatalf("results = %s %v", got, res[0].Stores)
	}
	if got := strings.Join(r.kw.ids(), ","); got != "b,c" {
		t.Fatalf("keyword lost a doc the record still has: %q", got)
	}
	r.vec.setErr(nil)

	// Derived failure: partial, and the delete is replayed by Repair.
	r.kw.setErr(fmt.Errorf("%w", spi.ErrUnavailable))
	res = r.p.Delete(context.Background(), []string{"b"})
	if got := statuses(res); got != "b:partial/derived_store_failed" || res[0].Stores["keyword"] != "failed" || res[0].Stores["graph"] != "ok" {
		t.Fatalf("results = %s %v", got, res[0].Stores)
	}
	r.kw.setErr(nil)
	if rr, err := r.p.Repair(context.Background()); err != nil || rr.Repaired != 1 {
		t.Fatalf("Repair = %+v, %v", rr, err)
	}
	if got := strings.Join(r.kw.ids(), ","); got != "c" {
		t.Fatalf("keyword after repaired delete has %q", got)
	}
}

func TestKeywordOnlyDeployment(t *testing.T) {
	kw, graph := newStore(), newStore()
	p, err := ingest.New(ingest.Config{Derived: []ingest.NamedIndexer{{Name: "keyword", Indexer: kw}, {Name: "graph", Indexer: graph}}})
	if err != nil {
		t.Fatal(err)
	}
	if p.RecordName() != "keyword" || p.Dimension() != 0 {
		t.Fatalf("record = %q, dim = %d", p.RecordName(), p.Dimension())
	}
	kw.setErr(fmt.Errorf("%w", spi.ErrUnavailable))
	withVec := doc("v")
	withVec.Vector = []float32{1}
	res := p.Upsert(context.Background(), []spi.Document{doc("a"), withVec})
	if got := statuses(res); got != "a:failed/store_unavailable v:failed/invalid_vector" {
		t.Fatalf("results = %s", got)
	}
	kw.setErr(nil)
	res = p.Upsert(context.Background(), []spi.Document{doc("a")})
	if got := statuses(res); got != "a:ok" || len(graph.ids()) != 1 {
		t.Fatalf("results = %s, graph %v", got, graph.ids())
	}
}

func TestCanceledContext(t *testing.T) {
	r := newRig(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.emb.EmbedFn = func(ctx context.Context, texts []string) ([][]float32, error) {
		return nil, ctx.Err()
	}
	withVec := doc("v")
	withVec.Vector = []float32{1, 0, 0, 0}
	res := r.p.Upsert(ctx, []spi.Document{doc("a"), withVec})
	if got := statuses(res); got != "a:failed/canceled v:failed/canceled" {
		t.Fatalf("results = %s", got)
	}
}

func TestExtractor(t *testing.T) {
	kp, err := ingest.NewKeyphraseExtractor(ingest.KeyphraseConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, func(c *ingest.Config) { c.Extractor = kp })
	given := spi.Document{ID: "g", Text: "boundary layer flow", Entities: []string{"Kept"}}
	bare := spi.Document{ID: "b", Title: "Boundary layers on a flat plate", Text: "The boundary layer on a flat plate is studied."}
	r.p.Upsert(context.Background(), []spi.Document{given, bare})
	g, _ := r.graph.get("g")
	b, _ := r.graph.get("b")
	if fmt.Sprint(g.Entities) != "[Kept]" {
		t.Fatalf("given entities replaced: %v", g.Entities)
	}
	if !slices.Contains(b.Entities, "boundary layer") || !slices.Contains(b.Entities, "flat plate") {
		t.Fatalf("extracted entities = %q", b.Entities)
	}
}

type failingExtractor struct{}

func (failingExtractor) Extract(context.Context, spi.Document) ([]string, error) {
	return nil, errors.New("model down")
}

func TestExtractorFailureIsNotFatal(t *testing.T) {
	r := newRig(t, func(c *ingest.Config) { c.Extractor = failingExtractor{} })
	if got := statuses(r.p.Upsert(context.Background(), []spi.Document{doc("a")})); got != "a:ok" {
		t.Fatalf("results = %s", got)
	}
}

func TestConfigValidate(t *testing.T) {
	s := newStore()
	cases := map[string]ingest.Config{
		"no store":        {},
		"unnamed derived": {Record: s, Derived: []ingest.NamedIndexer{{Indexer: s}}},
		"nil derived":     {Record: s, Derived: []ingest.NamedIndexer{{Name: "k"}}},
		"duplicate name":  {Record: s, Derived: []ingest.NamedIndexer{{Name: "vector", Indexer: s}}},
		"negative batch":  {Record: s, BatchSize: -1},
		"negative queue":  {Record: s, MaxRepairQueue: -1},
		"negative limit":  {Record: s, Limits: ingest.Limits{MaxTextBytes: -1}},
		"dim vs embedder": {Record: s, Embedder: &fakeEmbedder{dim: 4}, Dimension: 8},
		"store dimension": {Record: dimStore{&memStore{docs: map[string]spi.Document{}, dim: 8}}, Embedder: &fakeEmbedder{dim: 4}},
	}
	for name, c := range cases {
		if err := c.Validate(); !errors.Is(err, ingest.ErrConfig) {
			t.Errorf("%s: Validate = %v, want ErrConfig", name, err)
		}
		if _, err := ingest.New(c); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	err := ingest.Config{Record: dimStore{&memStore{dim: 8}}, Embedder: &fakeEmbedder{dim: 4}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "8") || !strings.Contains(err.Error(), "4") {
		t.Fatalf("dimension mismatch error must name both dimensions: %v", err)
	}
	if err := (ingest.Config{Record: dimStore{&memStore{dim: 4}}, Embedder: &fakeEmbedder{dim: 4}}).Validate(); err != nil {
		t.Fatalf("matching dimensions: %v", err)
	}
}

func TestConcurrentUpsertsAndRepair(t *testing.T) {
	r := newRig(t, func(c *ingest.Config) { c.BatchSize = 3 })
	r.kw.setFail(map[string]error{"w0-1": fmt.Errorf("%w", spi.ErrUnavailable)})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 10 {
				d := doc(fmt.Sprintf("w%d-%d", w, i))
				r.p.Upsert(context.Background(), []spi.Document{d})
				if i%3 == 0 {
					_, _ = r.p.Repair(context.Background())
				}
			}
		})
	}
	wg.Wait()
	if n := len(r.vec.ids()); n != 40 {
		t.Fatalf("record has %d docs, want 40", n)
	}
	if got := r.p.Pending()["keyword"].Queued; got != 1 {
		t.Fatalf("keyword queue = %d, want the one failing doc", got)
	}
	r.kw.setFail(nil)
	if rr, err := r.p.Repair(context.Background()); err != nil || rr.Remaining != 0 {
		t.Fatalf("final repair = %+v, %v", rr, err)
	}
	if n := len(r.kw.ids()); n != 40 {
		t.Fatalf("keyword has %d docs after repair, want 40", n)
	}
}
