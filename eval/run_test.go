package eval_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/eval"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// fakeSearcher answers from fixed rankings per mode (recognised by which
// sources the query enables) and query text.
type fakeSearcher struct {
	mu      sync.Mutex
	queries []retriever.Query
	rank    map[string]map[string][]string // mode → query text → ids
	fail    map[string]bool                // query text → error
	partial map[string]bool
	clock   *fakeClock
	cost    map[string]time.Duration // query text → simulated latency
}

func modeOf(q retriever.Query) string {
	if q.Sources == nil {
		return "hybrid"
	}
	for _, s := range []string{spi.SourceKeyword, spi.SourceVector, spi.SourceGraph} {
		if o := q.Sources[s]; o.Enabled != nil && *o.Enabled {
			return s
		}
	}
	return "?"
}

func (f *fakeSearcher) Retrieve(ctx context.Context, q retriever.Query) (*retriever.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	if f.clock != nil {
		f.clock.advance(f.cost[q.Text])
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if f.fail[q.Text] {
		return nil, fmt.Errorf("retriever: %w", retriever.ErrNotEnoughSources)
	}
	res := &retriever.Result{Partial: f.partial[q.Text]}
	for i, id := range f.rank[modeOf(q)][q.Text] {
		res.Hits = append(res.Hits, retriever.Hit{ID: id, Rank: i + 1, Score: 1 / float64(i+1)})
	}
	return res, nil
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func tinyDataset() *eval.Dataset {
	return &eval.Dataset{
		Name:    "tiny",
		Corpus:  []spi.Document{{ID: "a", Text: "x"}, {ID: "b", Text: "y"}, {ID: "c", Text: "z"}},
		Queries: []eval.Query{{ID: "1", Text: "one"}, {ID: "2", Text: "two"}},
		Qrels: map[string]eval.Judgments{
			"1": {"a": 1},
			"2": {"b": 2, "c": 1},
		},
	}
}

func TestRunScoresAndLatency(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	s := &fakeSearcher{
		rank: map[string]map[string][]string{
			"keyword": {"one": {"a"}, "two": {"x", "b"}},
			"vector":  {"one": {"x", "y", "a"}, "two": {"c", "b"}},
			"hybrid":  {"one": {"a"}, "two": {"b", "c"}},
		},
		fail:  map[string]bool{},
		clock: clock,
		cost:  map[string]time.Duration{"one": 10 * time.Millisecond, "two": 30 * time.Millisecond},
	}
	rep, err := eval.Run(context.Background(), tinyDataset(), s,
		[]eval.Mode{eval.KeywordMode(), eval.VectorMode(), eval.HybridMode()},
		eval.Options{Now: clock.now, Warmup: -1, KeepRuns: true})
	if err != nil {
		t.Fatal(err)
	}
	l3 := math.Log2(3)
	idcg2 := 2 + 1/l3
	want := map[string][3]float64{
		// query 1: a at rank 1 → 1, 1, 1. query 2: b at 2 → 2/log2(3) / idcg.
		"keyword": {(1 + (2/l3)/idcg2) / 2, (1 + 0.5) / 2, (1 + 0.5) / 2},
		// query 1: a at rank 3 → 1/log2(4) = 0.5, RR 1/3. query 2: c, b.
		"vector": {(0.5 + (1+2/l3)/idcg2) / 2, (1 + 1) / 2, (1.0/3 + 1) / 2},
		"hybrid": {1, 1, 1},
	}
	for _, m := range rep.Modes {
		w := want[m.Mode]
		if !near(m.NDCG10, w[0]) || !near(m.Recall100, w[1]) || !near(m.MRR10, w[2]) {
			t.Errorf("%s: nDCG %.6f R %.6f MRR %.6f, want %.6f %.6f %.6f", m.Mode, m.NDCG10, m.Recall100, m.MRR10, w[0], w[1], w[2])
		}
		if m.P50 != 10*time.Millisecond || m.P95 != 30*time.Millisecond || m.P99 != 30*time.Millisecond {
			t.Errorf("%s: latency p50 %v p95 %v p99 %v", m.Mode, m.P50, m.P95, m.P99)
		}
		if m.Queries != 2 || m.Failed != 0 {
			t.Errorf("%s: queries %d failed %d", m.Mode, m.Queries, m.Failed)
		}
	}
	if got := rep.Mode("vector").Runs["1"]; fmt.Sprint(got) != "[x y a]" {
		t.Errorf("kept run = %v", got)
	}
	// Every query asks for 100 hits in a window of 100, with the mode's sources.
	for _, q := range s.queries {
		if q.Limit != 100 || q.Window != 100 || q.Explain {
			t.Fatalf("query = %+v", q)
		}
	}
	if m := modeOf(s.queries[0]); m != "keyword" {
		t.Fatalf("first query ran as %s", m)
	}
	kw := s.queries[0].Sources
	if *kw[spi.SourceKeyword].Enabled != true || *kw[spi.SourceVector].Enabled || *kw[spi.SourceGraphExpand].Enabled {
		t.Fatalf("keyword mode sources = %+v", kw)
	}
	if s.queries[len(s.queries)-1].Sources != nil {
		t.Fatal("hybrid mode must keep the server's source defaults")
	}

	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	table := b.String()
	for _, line := range []string{
		"| mode | nDCG@10 | Recall@100 | MRR@10 | p50 ms | p95 ms | p99 ms | queries |",
		fmt.Sprintf("| keyword | %.4f | 0.7500 | 0.7500 | 10.0 | 30.0 | 30.0 | 2 |", want["keyword"][0]),
		"| hybrid | 1.0000 | 1.0000 | 1.0000 | 10.0 | 30.0 | 30.0 | 2 |",
	} {
		if !strings.Contains(table, line) {
			t.Errorf("table lacks %q:\n%s", line, table)
		}
	}
}

func TestRunCountsFailuresAsZero(t *testing.T) {
	s := &fakeSearcher{
		rank:    map[string]map[string][]string{"keyword": {"one": {"a"}, "two": {"b"}}},
		fail:    map[string]bool{"two": true},
		partial: map[string]bool{"one": true},
	}
	rep, err := eval.Run(context.Background(), tinyDataset(), s, []eval.Mode{eval.KeywordMode()}, eval.Options{Warmup: -1})
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Modes[0]
	if m.Failed != 1 || m.Partial != 1 || !near(m.NDCG10, 0.5) || !strings.Contains(m.FirstError, "not enough healthy sources") {
		t.Fatalf("mode report = %+v", m)
	}
	var b bytes.Buffer
	_ = rep.WriteTable(&b)
	if !strings.Contains(b.String(), "keyword: 1 failed (scored 0), 1 partial; first error:") {
		t.Fatalf("table does not report the failure:\n%s", b.String())
	}
}

func TestRunWarmupAndCancel(t *testing.T) {
	s := &fakeSearcher{rank: map[string]map[string][]string{}}
	if _, err := eval.Run(context.Background(), tinyDataset(), s, []eval.Mode{eval.KeywordMode()}, eval.Options{Warmup: 1}); err != nil {
		t.Fatal(err)
	}
	if len(s.queries) != 3 || s.queries[0].Text != "one" {
		t.Fatalf("with one warm-up query, want 3 calls, got %d", len(s.queries))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := eval.Run(ctx, tinyDataset(), s, []eval.Mode{eval.KeywordMode()}, eval.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	if _, err := eval.Run(context.Background(), tinyDataset(), s, nil, eval.Options{}); err == nil {
		t.Fatal("no modes accepted")
	}
	if _, err := eval.Run(context.Background(), &eval.Dataset{}, s, eval.DefaultModes(false), eval.Options{}); !errors.Is(err, eval.ErrDataset) {
		t.Fatalf("empty dataset: %v", err)
	}
}

func TestModes(t *testing.T) {
	names := func(ms []eval.Mode) string {
		var s []string
		for _, m := range ms {
			s = append(s, m.Name)
		}
		return strings.Join(s, ",")
	}
	if got := names(eval.DefaultModes(true)); got != "keyword,vector,graph,hybrid" {
		t.Errorf("DefaultModes(true) = %s", got)
	}
	if got := names(eval.DefaultModes(false)); got != "keyword,vector,hybrid" {
		t.Errorf("DefaultModes(false) = %s", got)
	}
	ms, err := eval.ParseModes("hybrid, Keyword")
	if err != nil || names(ms) != "hybrid,keyword" {
		t.Errorf("ParseModes = %s, %v", names(ms), err)
	}
	if _, err := eval.ParseModes("keyword,bm25"); err == nil {
		t.Error("unknown mode accepted")
	}
	g := eval.GraphMode().Sources
	if !*g[spi.SourceGraph].Enabled || *g[spi.SourceGraphExpand].Enabled || *g[spi.SourceKeyword].Enabled {
		t.Errorf("graph mode sources = %+v", g)
	}
}

// memIndexer is a minimal record store for Ingest.
type memIndexer struct {
	mu   sync.Mutex
	docs map[string]spi.Document
	fail map[string]bool
}

func (m *memIndexer) Upsert(_ context.Context, docs []spi.Document) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	failed := map[string]error{}
	for _, d := range docs {
		if m.fail[d.ID] {
			failed[d.ID] = fmt.Errorf("%w", spi.ErrUnavailable)
			continue
		}
		m.docs[d.ID] = d
	}
	if len(failed) > 0 {
		return &spi.BatchError{Failed: failed}
	}
	return nil
}

func (m *memIndexer) Delete(context.Context, []string) error { return nil }

func TestIngest(t *testing.T) {
	store := &memIndexer{docs: map[string]spi.Document{}}
	p, err := ingest.New(ingest.Config{Record: store, RecordName: "keyword"})
	if err != nil {
		t.Fatal(err)
	}
	var progress []string
	ds := tinyDataset()
	ds.Corpus = append(ds.Corpus, spi.Document{ID: "empty"})
	st, err := eval.Ingest(context.Background(), ds, p, eval.IngestOptions{
		Batch:    2,
		Progress: func(done, total int) { progress = append(progress, fmt.Sprintf("%d/%d", done, total)) },
	})
	if err != nil || st.OK != 3 || st.Skipped != 1 || len(store.docs) != 3 {
		t.Fatalf("Ingest = %+v, %v; store has %d", st, err, len(store.docs))
	}
	if fmt.Sprint(progress) != "[3/4 4/4]" {
		t.Fatalf("progress = %v", progress)
	}
	store.fail = map[string]bool{"b": true}
	st, err = eval.Ingest(context.Background(), tinyDataset(), p, eval.IngestOptions{})
	if !errors.Is(err, eval.ErrIngest) || st.Failed != 1 || st.OK != 2 || !strings.HasPrefix(st.FirstError, "b: store_unavailable") {
		t.Fatalf("Ingest with a failing doc = %+v, %v", st, err)
	}
}

// queryEmbedder counts the texts it embeds; err fails every call.
type queryEmbedder struct {
	mu    sync.Mutex
	calls [][]string
	err   error
}

func (e *queryEmbedder) Dimension() int { return 2 }

func (e *queryEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, texts)
	if e.err != nil {
		return nil, e.err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), 1}
	}
	return out, nil
}

// TestQueriesAreEmbeddedOnceUpFront: with Options.QueryEmbedder, every
// query text is embedded once before the modes run (not by the retriever
// under the server's deadline, once per mode), the modes that use the
// vector source get the vectors, and a failing embedder fails the run
// rather than scoring queries 0.
func TestQueriesAreEmbeddedOnceUpFront(t *testing.T) {
	s := &fakeSearcher{rank: map[string]map[string][]string{}, fail: map[string]bool{}}
	e := &queryEmbedder{}
	modes := []eval.Mode{eval.KeywordMode(), eval.VectorMode(), eval.HybridMode()}
	rep, err := eval.Run(context.Background(), tinyDataset(), s, modes, eval.Options{Warmup: -1, QueryEmbedder: e})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(e.calls) != "[[one two]]" {
		t.Fatalf("embedder calls = %v, want one call with both texts", e.calls)
	}
	for _, q := range s.queries {
		withVector := modeOf(q) != "keyword"
		if (len(q.Vector) > 0) != withVector {
			t.Fatalf("%s query %q carries vector %v", modeOf(q), q.Text, q.Vector)
		}
		if withVector && q.Vector[0] != float32(len(q.Text)) {
			t.Fatalf("query %q got another query's vector %v", q.Text, q.Vector)
		}
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil || !strings.Contains(b.String(), "query embedding: 2 texts") {
		t.Fatalf("table lacks the query embedding line (%v):\n%s", err, b.String())
	}

	e = &queryEmbedder{}
	if _, err := eval.Run(context.Background(), tinyDataset(), s, modes[:1], eval.Options{Warmup: -1, QueryEmbedder: e}); err != nil || len(e.calls) != 0 {
		t.Fatalf("keyword only: %v, %d embedder calls; want none", err, len(e.calls))
	}
	e = &queryEmbedder{err: errors.New("fake: model crashed")}
	if _, err := eval.Run(context.Background(), tinyDataset(), s, modes, eval.Options{Warmup: -1, QueryEmbedder: e}); err == nil || !strings.Contains(err.Error(), "embedding the queries") {
		t.Fatalf("failing embedder: err = %v", err)
	}
}
