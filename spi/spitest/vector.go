package spitest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragd/ragd/spi"
)

// VectorStore is what the vector contract exercises: a retrieval backend
// that is also its own write side.
type VectorStore interface {
	spi.VectorRetrievalBackend
	spi.Indexer
}

// Distance names shared by every vector store (and rag.yaml).
const (
	DistanceCosine       = "cosine"
	DistanceL2           = "l2"
	DistanceInnerProduct = "inner_product"
)

// VectorOptions is what the suite asks a harness to open.
type VectorOptions struct {
	Dimension int
	Distance  string // DistanceCosine, DistanceL2 or DistanceInnerProduct
}

// VectorHarness opens stores for TestVectorBackend.
type VectorHarness struct {
	// Open returns a new, empty store and registers its cleanup (Close,
	// dropping data) with t.
	Open func(t *testing.T, opts VectorOptions) VectorStore
	// Reopen closes s and opens the same data again with the same options,
	// as after a process restart. Nil skips the restart test.
	Reopen func(t *testing.T, s VectorStore) VectorStore
	// Approximate is true for stores whose index may miss true neighbours
	// (HNSW). Ranking checks on the random corpus then require a recall of at
	// least MinRecall instead of the exact top k; hand-made cases stay exact.
	Approximate bool
	// MinRecall is the mean recall@k an approximate store must reach on the
	// random corpus; 0.9 when zero.
	MinRecall float64
}

// The contract's score rules, computed in float64 from the raw vectors.
// cosine: cosine similarity; l2: 1/(1+euclidean distance); inner_product:
// the inner product.
func refScore(distance string, a, b []float32) float64 {
	var dot, na, nb, sq float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
		sq += (x - y) * (x - y)
	}
	switch distance {
	case DistanceL2:
		return 1 / (1 + math.Sqrt(sq))
	case DistanceInnerProduct:
		return dot
	default:
		return dot / math.Sqrt(na*nb)
	}
}

// scoreTol is the tolerance for comparing a store's scores with refScore:
// stores compute in float32.
func scoreTol(want float64) float64 { return 1e-4 * max(1, math.Abs(want)) }

// TestVectorBackend runs the vector store contract against h. Every subtest
// opens its own store.
func TestVectorBackend(t *testing.T, h VectorHarness) {
	if h.MinRecall == 0 {
		h.MinRecall = 0.9
	}
	s := &vectorSuite{h: h}
	t.Run("Basics", s.testBasics)
	t.Run("HandMadeRanking", s.testHandMade)
	t.Run("Ties", s.testTies)
	t.Run("Corpus", s.testCorpus)
	t.Run("Hydrate", s.testHydrate)
	t.Run("UpsertReplaces", s.testUpsertReplaces)
	t.Run("Delete", s.testDelete)
	t.Run("InvalidInput", s.testInvalid)
	t.Run("Cancelled", s.testCancelled)
	t.Run("Scan", s.testScan)
	t.Run("Concurrent", s.testConcurrent)
	t.Run("WriteWhileSearch", s.testWriteWhileSearch)
	t.Run("TenantScoresOwnDocuments", s.testTenantScores)
	t.Run("Restart", s.testRestart)
}

type vectorSuite struct{ h VectorHarness }

func (s *vectorSuite) open(t *testing.T, dim int, distance string) VectorStore {
	t.Helper()
	st := s.h.Open(t, VectorOptions{Dimension: dim, Distance: distance})
	if st == nil {
		t.Fatal("harness Open returned nil")
	}
	return st
}

func upsert(t *testing.T, st VectorStore, docs []spi.Document) {
	t.Helper()
	if err := st.Upsert(context.Background(), docs); err != nil {
		t.Fatalf("Upsert(%d docs): %v", len(docs), err)
	}
}

func retrieve(t *testing.T, st VectorStore, req spi.VectorRequest) []spi.Ref {
	t.Helper()
	refs, err := st.Retrieve(context.Background(), req)
	if err != nil {
		t.Fatalf("Retrieve(k=%d tenant=%q filter=%v): %v", req.K, req.Tenant, req.Filter, err)
	}
	for _, r := range refs {
		if r.Source != spi.SourceVector {
			t.Fatalf("ref %s has Source %q, want %q", r.ID, r.Source, spi.SourceVector)
		}
	}
	return refs
}

func pad(dim int, xs ...float32) []float32 {
	v := make([]float32, dim)
	copy(v, xs)
	return v
}

// checkOrder asserts refs are sorted by descending score, ties by id.
func checkOrder(t *testing.T, refs []spi.Ref) {
	t.Helper()
	for i := 1; i < len(refs); i++ {
		a, b := refs[i-1], refs[i]
		if a.Score < b.Score || (a.Score == b.Score && a.ID >= b.ID) {
			t.Fatalf("refs out of order at %d: %+v before %+v", i, a, b)
		}
	}
}

func (s *vectorSuite) testBasics(t *testing.T) {
	st := s.open(t, 8, DistanceCosine)
	if d, ok := st.(spi.Dimensioner); ok && d.Dimension() != 8 {
		t.Errorf("Dimension() = %d, want 8", d.Dimension())
	}
	if h := st.Health(context.Background()); h.Status != spi.StatusUp {
		t.Errorf("Health = %+v, want up", h)
	}
	refs := retrieve(t, st, spi.VectorRequest{Vector: pad(8, 1), K: 5})
	if len(refs) != 0 {
		t.Errorf("empty store returned %v", refs)
	}
	docs, missing, err := st.Hydrate(context.Background(), []string{"nope"})
	if err != nil || len(docs) != 0 || !slices.Equal(missing, []string{"nope"}) {
		t.Errorf("Hydrate on empty store = %v, %v, %v", docs, missing, err)
	}
	if err := st.Upsert(context.Background(), nil); err != nil {
		t.Errorf("Upsert(nil) = %v", err)
	}
	if err := st.Delete(context.Background(), nil); err != nil {
		t.Errorf("Delete(nil) = %v", err)
	}
}

// testHandMade checks rank and score for each distance on vectors whose
// order differs between distances.
func (s *vectorSuite) testHandMade(t *testing.T) {
	const dim = 4
	vecs := map[string][]float32{
		"a": pad(dim, 1, 0),     // same direction, same length as q
		"b": pad(dim, 10, 1),    // nearly same direction, long
		"c": pad(dim, 0.5, 0.5), // 45 degrees, short
		"d": pad(dim, -1, 0),    // opposite
		"e": pad(dim, 0, 1),     // orthogonal
	}
	q := pad(dim, 1, 0)
	want := map[string][]string{
		DistanceCosine:       {"a", "b", "c", "e", "d"},
		DistanceL2:           {"a", "c", "e", "d", "b"},
		DistanceInnerProduct: {"b", "a", "c", "e", "d"},
	}
	for _, dist := range []string{DistanceCosine, DistanceL2, DistanceInnerProduct} {
		t.Run(dist, func(t *testing.T) {
			st := s.open(t, dim, dist)
			var docs []spi.Document
			for id, v := range vecs {
				docs = append(docs, spi.Document{ID: id, Vector: v})
			}
			upsert(t, st, docs)
			refs := retrieve(t, st, spi.VectorRequest{Vector: q, K: 10})
			if got := IDs(refs); !slices.Equal(got, want[dist]) {
				t.Fatalf("order = %v, want %v", got, want[dist])
			}
			for _, r := range refs {
				if w := refScore(dist, q, vecs[r.ID]); math.Abs(r.Score-w) > scoreTol(w) {
					t.Errorf("score of %s = %v, want %v", r.ID, r.Score, w)
				}
			}
			top := retrieve(t, st, spi.VectorRequest{Vector: q, K: 2})
			if got := IDs(top); !slices.Equal(got, want[dist][:2]) {
				t.Errorf("k=2 returned %v, want %v", got, want[dist][:2])
			}
		})
	}
}

func (s *vectorSuite) testTies(t *testing.T) {
	const dim = 4
	st := s.open(t, dim, DistanceCosine)
	same := pad(dim, 1, 2, 3, 4)
	upsert(t, st, []spi.Document{
		{ID: "t2", Vector: same}, {ID: "t0", Vector: same}, {ID: "t1", Vector: same},
		{ID: "far", Vector: pad(dim, -1, -2, -3, -4)},
	})
	refs := retrieve(t, st, spi.VectorRequest{Vector: same, K: 2})
	if got := IDs(refs); !slices.Equal(got, []string{"t0", "t1"}) {
		t.Fatalf("tied docs returned %v, want [t0 t1] (ties by ascending id)", got)
	}
	if refs[0].Score != refs[1].Score {
		t.Errorf("identical vectors scored differently: %v", refs)
	}
	all := retrieve(t, st, spi.VectorRequest{Vector: same, K: 10})
	if got := IDs(all); !slices.Equal(got, []string{"t0", "t1", "t2", "far"}) {
		t.Errorf("order = %v, want [t0 t1 t2 far]", got)
	}
}

// corpus is a deterministic random collection with tenants and metadata.
type corpus struct {
	dim  int
	docs []spi.Document
	byID map[string]spi.Document
}

var (
	langs = []string{"en", "de", "fr"}
	kinds = []string{"paper", "note", "book"}
)

func randVec(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func newCorpus(n, dim int, seed uint64) *corpus {
	r := rand.New(rand.NewPCG(seed, 42))
	c := &corpus{dim: dim, byID: map[string]spi.Document{}}
	base := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	for i := range n {
		d := spi.Document{
			ID:     fmt.Sprintf("doc-%04d", i),
			Tenant: fmt.Sprintf("t%d", i%3),
			Title:  fmt.Sprintf("title %d", i),
			Text:   fmt.Sprintf("text of document %d with ünïcode", i),
			Metadata: spi.Strings(map[string]string{
				"lang": langs[r.IntN(len(langs))],
				"kind": kinds[r.IntN(len(kinds))],
			}),
			Vector: randVec(r, dim),
		}
		if i%20 == 7 {
			d.Metadata["rare"] = spi.String("yes") // 5%
		}
		d.Metadata = TypedMetadata(r, i, d.Metadata)
		if i%2 == 0 {
			d.Entities = []string{"entity " + fmt.Sprint(i%7), "entity x"}
			d.Links = []string{fmt.Sprintf("doc-%04d", (i+1)%n)}
			d.UpdatedAt = base.Add(time.Duration(i) * time.Hour)
		}
		c.docs = append(c.docs, d)
		c.byID[d.ID] = d
	}
	return c
}

func (c *corpus) load(t *testing.T, st VectorStore) {
	t.Helper()
	// A small batch and larger ones, so stores with size-dependent write
	// paths exercise both.
	upsert(t, st, c.docs[:10])
	for i := 10; i < len(c.docs); i += 100 {
		upsert(t, st, c.docs[i:min(i+100, len(c.docs))])
	}
}

// expected is the exact answer: the k best matching docs by refScore.
func (c *corpus) expected(distance string, req spi.VectorRequest) []spi.Ref {
	var refs []spi.Ref
	for _, d := range c.docs {
		if req.Tenant != "" && d.Tenant != req.Tenant {
			continue
		}
		if !req.Filter.Match(d.Metadata) {
			continue
		}
		refs = append(refs, spi.Ref{ID: d.ID, Score: refScore(distance, req.Vector, d.Vector), Source: spi.SourceVector})
	}
	sortRefs(refs)
	if len(refs) > req.K {
		refs = refs[:req.K]
	}
	return refs
}

// sortRefs orders refs by descending score, then ascending id: the order
// every vector backend must return.
func sortRefs(refs []spi.Ref) {
	slices.SortFunc(refs, func(a, b spi.Ref) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// check compares got with the exact answer and returns the recall. Every
// returned doc must satisfy tenant and filter, carry its true score and be
// in order. An exact store must return as many refs as the exact answer and
// miss no doc that beats its last one by more than the float tolerance.
func (s *vectorSuite) check(t *testing.T, c *corpus, distance string, req spi.VectorRequest, got []spi.Ref) float64 {
	t.Helper()
	want := c.expected(distance, req)
	checkOrder(t, got)
	if len(got) > req.K {
		t.Fatalf("returned %d refs for k=%d", len(got), req.K)
	}
	seen := map[string]bool{}
	for _, r := range got {
		d, ok := c.byID[r.ID]
		if !ok {
			t.Fatalf("unknown id %q returned", r.ID)
		}
		if seen[r.ID] {
			t.Fatalf("id %q returned twice", r.ID)
		}
		seen[r.ID] = true
		if req.Tenant != "" && d.Tenant != req.Tenant {
			t.Fatalf("id %q of tenant %q returned for tenant %q", r.ID, d.Tenant, req.Tenant)
		}
		if !req.Filter.Match(d.Metadata) {
			t.Fatalf("id %q with metadata %v returned for filter %v", r.ID, d.Metadata, req.Filter)
		}
		if w := refScore(distance, req.Vector, d.Vector); math.Abs(r.Score-w) > scoreTol(w) {
			t.Fatalf("score of %q = %v, want %v", r.ID, r.Score, w)
		}
	}
	if len(want) == 0 {
		if len(got) != 0 {
			t.Fatalf("returned %v, want nothing", IDs(got))
		}
		return 1
	}
	hits := 0
	for _, w := range want {
		if seen[w.ID] {
			hits++
		}
	}
	recall := float64(hits) / float64(len(want))
	if s.h.Approximate {
		return recall
	}
	if len(got) != len(want) {
		t.Fatalf("returned %d refs, want %d: %v", len(got), len(want), IDs(got))
	}
	last := got[len(got)-1].Score
	for _, w := range want {
		if !seen[w.ID] && w.Score > last+scoreTol(w.Score) {
			t.Fatalf("missed %q (score %v) while returning %q (score %v)", w.ID, w.Score, got[len(got)-1].ID, last)
		}
	}
	return recall
}

func (s *vectorSuite) testCorpus(t *testing.T) {
	for _, dist := range []string{DistanceCosine, DistanceL2, DistanceInnerProduct} {
		t.Run(dist, func(t *testing.T) { s.testCorpusDistance(t, dist) })
	}
}

func (s *vectorSuite) testCorpusDistance(t *testing.T, dist string) {
	const n, dim = 300, 16
	c := newCorpus(n, dim, 1)
	st := s.open(t, dim, dist)
	c.load(t, st)
	r := rand.New(rand.NewPCG(2, 42))

	var recalls []float64
	run := func(name string, req spi.VectorRequest, minLen int) {
		t.Helper()
		got := retrieve(t, st, req)
		if len(got) < minLen {
			t.Fatalf("%s: returned %d refs, want at least %d", name, len(got), minLen)
		}
		recalls = append(recalls, s.check(t, c, dist, req, got))
	}
	for i := range 10 {
		q := randVec(r, dim)
		run("plain", spi.VectorRequest{Vector: q, K: 10}, 10)
		run("k=1", spi.VectorRequest{Vector: q, K: 1}, 1)
		run("k=50", spi.VectorRequest{Vector: q, K: 50}, 45)
		run("or filter", spi.VectorRequest{Vector: q, K: 10, Filter: spi.StringFilter(map[string][]string{"lang": {"en", "de"}})}, 10)
		run("and filter", spi.VectorRequest{Vector: q, K: 10, Filter: spi.StringFilter(map[string][]string{"lang": {"en"}, "kind": {"paper", "book"}})}, 10)
		// 15 of 300 documents carry rare=yes: the filtered query must still fill k.
		run("rare filter", spi.VectorRequest{Vector: q, K: 10, Filter: spi.StringFilter(map[string][]string{"rare": {"yes"}})}, 10)
		tenant := fmt.Sprintf("t%d", i%3)
		run("tenant", spi.VectorRequest{Vector: q, K: 10, Tenant: tenant}, 10)
		run("tenant+filter", spi.VectorRequest{Vector: q, K: 5, Tenant: tenant, Filter: spi.StringFilter(map[string][]string{"kind": {"note"}})}, 5)
	}
	q := randVec(r, dim)
	if got := retrieve(t, st, spi.VectorRequest{Vector: q, K: 10, Filter: spi.StringFilter(map[string][]string{"absent": {"x"}})}); len(got) != 0 {
		t.Errorf("filter on an absent key returned %v", IDs(got))
	}
	if got := retrieve(t, st, spi.VectorRequest{Vector: q, K: 10, Filter: spi.StringFilter(map[string][]string{"lang": {"xx"}})}); len(got) != 0 {
		t.Errorf("filter on an absent value returned %v", IDs(got))
	}
	if got := retrieve(t, st, spi.VectorRequest{Vector: q, K: 10, Tenant: "nobody"}); len(got) != 0 {
		t.Errorf("unknown tenant returned %v", IDs(got))
	}
	// Typed filters: selective (about 5 %), half the corpus, ranges over
	// numbers and times, and random expressions, each checked against
	// spi.Filter.Match by brute force (check).
	for range 5 {
		q := randVec(r, dim)
		run("5% range", spi.VectorRequest{Vector: q, K: 10, Filter: spi.And(spi.Gte("page", spi.Int(10)), spi.Lt("page", spi.Float(12.5)))}, 0)
		run("50% bool", spi.VectorRequest{Vector: q, K: 10, Filter: spi.Eq("public", spi.Bool(true))}, 0)
		run("time range", spi.VectorRequest{Vector: q, K: 10, Filter: spi.Lt("published", spi.MustTime(typedBase.Add(30*time.Hour)))}, 0)
		run("list item", spi.VectorRequest{Vector: q, K: 10, Filter: spi.Eq("tags", spi.String("a"))}, 0)
		run("ne", spi.VectorRequest{Vector: q, K: 10, Filter: spi.Ne("page", spi.Int(3))}, 0)
	}
	for range 60 {
		q := randVec(r, dim)
		f := RandomFilter(r)
		raw, _ := json.Marshal(f)
		run(fmt.Sprintf("random filter %s", raw), spi.VectorRequest{Vector: q, K: 10, Filter: f}, 0)
	}
	// k beyond the tenant's size returns exactly its documents.
	big := spi.VectorRequest{Vector: q, K: 500, Tenant: "t1"}
	recalls = append(recalls, s.check(t, c, dist, big, retrieve(t, st, big)))
	mean := 0.0
	for _, x := range recalls {
		mean += x
	}
	mean /= float64(len(recalls))
	t.Logf("%s: mean recall %.4f over %d queries", dist, mean, len(recalls))
	if mean < s.h.MinRecall {
		t.Errorf("mean recall %.4f below %.2f", mean, s.h.MinRecall)
	}
}

func (s *vectorSuite) testHydrate(t *testing.T) {
	const dim = 8
	c := newCorpus(40, dim, 3)
	st := s.open(t, dim, DistanceCosine)
	before := time.Now().Add(-time.Minute)
	c.load(t, st)
	req := []string{"doc-0005", "missing-1", "doc-0002", "doc-0005", "doc-0010", "missing-2"}
	docs, missing, err := st.Hydrate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := docIDs(docs); !slices.Equal(got, []string{"doc-0005", "doc-0002", "doc-0010"}) {
		t.Fatalf("Hydrate order = %v, want [doc-0005 doc-0002 doc-0010]", got)
	}
	if !slices.Equal(missing, []string{"missing-1", "missing-2"}) {
		t.Fatalf("missing = %v, want [missing-1 missing-2]", missing)
	}
	for _, d := range docs {
		want := c.byID[d.ID]
		if want.UpdatedAt.IsZero() {
			if d.UpdatedAt.Before(before) || d.UpdatedAt.After(time.Now().Add(time.Minute)) {
				t.Errorf("%s: UpdatedAt %v not stamped at write time", d.ID, d.UpdatedAt)
			}
			want.UpdatedAt = d.UpdatedAt
		}
		sameDoc(t, d, want)
	}
	// Ids no document can have are simply missing.
	docs, missing, err = st.Hydrate(context.Background(), []string{"a\x00b", "doc-0002", "\xff"})
	if err != nil || !slices.Equal(docIDs(docs), []string{"doc-0002"}) || !slices.Equal(missing, []string{"a\x00b", "\xff"}) {
		t.Errorf("Hydrate with unstorable ids = %v, %q, %v", docIDs(docs), missing, err)
	}
	if err := st.Delete(context.Background(), []string{"a\x00b", "\xff", ""}); err != nil {
		t.Errorf("Delete with unstorable ids: %v", err)
	}
	docs, missing, err = st.Hydrate(context.Background(), nil)
	if err != nil || len(docs) != 0 || len(missing) != 0 {
		t.Errorf("Hydrate(nil) = %v, %v, %v", docs, missing, err)
	}
}

func docIDs(docs []spi.Document) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.ID
	}
	return out
}

// sameDoc compares a stored document with what was written. Times are
// compared to the microsecond (PostgreSQL's precision).
func sameDoc(t *testing.T, got, want spi.Document) {
	t.Helper()
	if got.ID != want.ID || got.Tenant != want.Tenant || got.Title != want.Title || got.Text != want.Text {
		t.Errorf("%s: got tenant/title/text %q/%q/%q, want %q/%q/%q", want.ID, got.Tenant, got.Title, got.Text, want.Tenant, want.Title, want.Text)
	}
	if !got.Metadata.Equal(want.Metadata) {
		t.Errorf("%s: metadata %v, want %v", want.ID, got.Metadata, want.Metadata)
	}
	if !slices.Equal(got.Vector, want.Vector) {
		t.Errorf("%s: vector changed in storage", want.ID)
	}
	if !slices.Equal(got.Entities, want.Entities) || !slices.Equal(got.Links, want.Links) {
		t.Errorf("%s: entities/links %v/%v, want %v/%v", want.ID, got.Entities, got.Links, want.Entities, want.Links)
	}
	if !got.UpdatedAt.Equal(want.UpdatedAt.Truncate(time.Microsecond)) {
		t.Errorf("%s: UpdatedAt %v, want %v", want.ID, got.UpdatedAt, want.UpdatedAt.Truncate(time.Microsecond))
	}
}

func (s *vectorSuite) testUpsertReplaces(t *testing.T) {
	const dim = 8
	c := newCorpus(100, dim, 4)
	st := s.open(t, dim, DistanceCosine)
	c.load(t, st)
	target := c.docs[17]
	q := pad(dim, 0, 0, 0, 0, 0, 0, 0, 1)
	repl := spi.Document{ID: target.ID, Tenant: "t9", Title: "replaced", Vector: q,
		Metadata: spi.Strings(map[string]string{"lang": "la"})}
	upsert(t, st, []spi.Document{repl})

	refs := retrieve(t, st, spi.VectorRequest{Vector: q, K: 1})
	if len(refs) != 1 || refs[0].ID != target.ID || math.Abs(refs[0].Score-1) > 1e-4 {
		t.Fatalf("after replace, nearest to the new vector = %+v, want %s with score 1", refs, target.ID)
	}
	if got := retrieve(t, st, spi.VectorRequest{Vector: q, K: 5, Filter: spi.StringFilter(map[string][]string{"lang": {"la"}}), Tenant: "t9"}); !slices.Equal(IDs(got), []string{target.ID}) {
		t.Errorf("new tenant+metadata filter returned %v", IDs(got))
	}
	if got := retrieve(t, st, spi.VectorRequest{Vector: target.Vector, K: 100, Tenant: target.Tenant}); slices.Contains(IDs(got), target.ID) {
		t.Errorf("replaced doc still found under its old tenant")
	}
	all := retrieve(t, st, spi.VectorRequest{Vector: q, K: 1000})
	if len(all) != len(c.docs) {
		t.Errorf("store holds %d docs after a replace, want %d", len(all), len(c.docs))
	}
	docs, _, err := st.Hydrate(context.Background(), []string{target.ID})
	if err != nil || len(docs) != 1 {
		t.Fatalf("Hydrate = %v, %v", docs, err)
	}
	if docs[0].Title != "replaced" || docs[0].Text != "" || len(docs[0].Entities) != 0 || !slices.Equal(docs[0].Vector, q) {
		t.Errorf("replaced doc = %+v, want every field replaced", docs[0])
	}

	// Repeated ids in one call: the last one wins.
	upsert(t, st, []spi.Document{
		{ID: "dup", Title: "first", Vector: pad(dim, 1)},
		{ID: "dup", Title: "second", Vector: pad(dim, 0, 1)},
	})
	docs, _, err = st.Hydrate(context.Background(), []string{"dup"})
	if err != nil || len(docs) != 1 || docs[0].Title != "second" {
		t.Fatalf("repeated id in one Upsert: got %+v, %v; want the last", docs, err)
	}
}

func (s *vectorSuite) testDelete(t *testing.T) {
	const dim = 8
	c := newCorpus(60, dim, 5)
	st := s.open(t, dim, DistanceCosine)
	c.load(t, st)
	gone := []string{"doc-0003", "doc-0010", "doc-0059", "never-existed"}
	if err := st.Delete(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	for _, d := range c.docs[:5] {
		for _, r := range retrieve(t, st, spi.VectorRequest{Vector: d.Vector, K: 100}) {
			if slices.Contains(gone, r.ID) {
				t.Fatalf("deleted %s still retrieved", r.ID)
			}
		}
	}
	all := retrieve(t, st, spi.VectorRequest{Vector: c.docs[0].Vector, K: 100})
	if len(all) != len(c.docs)-3 {
		t.Errorf("%d docs left, want %d", len(all), len(c.docs)-3)
	}
	docs, missing, err := st.Hydrate(context.Background(), []string{"doc-0003", "doc-0004"})
	if err != nil || !slices.Equal(docIDs(docs), []string{"doc-0004"}) || !slices.Equal(missing, []string{"doc-0003"}) {
		t.Errorf("Hydrate after delete = %v, %v, %v", docIDs(docs), missing, err)
	}
	// Deleted ids can be written again.
	upsert(t, st, []spi.Document{{ID: "doc-0003", Vector: c.docs[3].Vector}})
	if got := retrieve(t, st, spi.VectorRequest{Vector: c.docs[3].Vector, K: 1}); !slices.Equal(IDs(got), []string{"doc-0003"}) {
		t.Errorf("re-inserted doc not found: %v", IDs(got))
	}
}

func (s *vectorSuite) testInvalid(t *testing.T) {
	const dim = 4
	st := s.open(t, dim, DistanceCosine)
	good := pad(dim, 1, 2, 3, 4)
	upsert(t, st, []spi.Document{{ID: "ok", Vector: good}})
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	queries := map[string]spi.VectorRequest{
		"short vector":   {Vector: good[:3], K: 5},
		"long vector":    {Vector: pad(dim+1, 1), K: 5},
		"nil vector":     {K: 5},
		"NaN":            {Vector: []float32{1, nan, 0, 0}, K: 5},
		"Inf":            {Vector: []float32{1, 0, inf, 0}, K: 5},
		"zero vector":    {Vector: make([]float32, dim), K: 5},
		"k=0":            {Vector: good, K: 0},
		"k<0":            {Vector: good, K: -1},
		"k absurd":       {Vector: good, K: 1 << 40},
		"empty key":      {Vector: good, K: 5, Filter: spi.StringFilter(map[string][]string{"": {"x"}})},
		"key, no values": {Vector: good, K: 5, Filter: spi.StringFilter(map[string][]string{"lang": {}})},
	}
	for name, req := range queries {
		if _, err := st.Retrieve(context.Background(), req); !errors.Is(err, spi.ErrInvalidQuery) {
			t.Errorf("Retrieve with %s: err = %v, want ErrInvalidQuery", name, err)
		} else if errors.Is(err, spi.ErrUnavailable) {
			t.Errorf("Retrieve with %s: invalid query also reported as unavailable: %v", name, err)
		}
	}
	bad := map[string]spi.Document{
		"empty id":    {Vector: good},
		"short":       {ID: "x", Vector: good[:2]},
		"no vector":   {ID: "x"},
		"NaN":         {ID: "x", Vector: []float32{nan, 1, 1, 1}},
		"Inf":         {ID: "x", Vector: []float32{1, 1, 1, inf}},
		"zero vector": {ID: "x", Vector: make([]float32, dim)},
		"NUL in text": {ID: "x", Vector: good, Text: "a\x00b"},
		"bad UTF-8":   {ID: "x", Vector: good, Title: "\xff\xfe"},
	}
	for name, d := range bad {
		// The valid document in the same call must not be written either.
		err := st.Upsert(context.Background(), []spi.Document{{ID: "y-" + name, Vector: good}, d})
		if !errors.Is(err, spi.ErrInvalidQuery) {
			t.Errorf("Upsert with %s: err = %v, want ErrInvalidQuery", name, err)
		}
	}
	refs := retrieve(t, st, spi.VectorRequest{Vector: good, K: 50})
	if !slices.Equal(IDs(refs), []string{"ok"}) {
		t.Errorf("rejected batches left documents behind: %v", IDs(refs))
	}
}

func (s *vectorSuite) testCancelled(t *testing.T) {
	const dim = 4
	st := s.open(t, dim, DistanceCosine)
	v := pad(dim, 1, 1)
	upsert(t, st, []spi.Document{{ID: "a", Vector: v}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: err = %v, want context.Canceled", op, err)
		}
		if errors.Is(err, spi.ErrUnavailable) {
			t.Errorf("%s: the caller's cancellation must not be reported as ErrUnavailable: %v", op, err)
		}
	}
	_, err := st.Retrieve(ctx, spi.VectorRequest{Vector: v, K: 1})
	check("Retrieve", err)
	_, _, err = st.Hydrate(ctx, []string{"a"})
	check("Hydrate", err)
	check("Upsert", st.Upsert(ctx, []spi.Document{{ID: "b", Vector: v}}))
	check("Delete", st.Delete(ctx, []string{"a"}))
	if sc, ok := st.(spi.Scanner); ok {
		check("Scan", sc.Scan(ctx, func(spi.Document) error { return nil }))
	}
	refs := retrieve(t, st, spi.VectorRequest{Vector: v, K: 10})
	if !slices.Equal(IDs(refs), []string{"a"}) {
		t.Errorf("cancelled writes took effect: %v", IDs(refs))
	}
}

func (s *vectorSuite) testScan(t *testing.T) {
	const dim = 8
	c := newCorpus(1234, dim, 6)
	st := s.open(t, dim, DistanceCosine)
	sc, ok := st.(spi.Scanner)
	if !ok {
		t.Skip("store does not implement spi.Scanner")
	}
	c.load(t, st)
	upsert(t, st, []spi.Document{{ID: "Z-upper", Vector: pad(dim, 1)}, {ID: "a-lower", Vector: pad(dim, 1)}})
	var got []string
	err := sc.Scan(context.Background(), func(d spi.Document) error {
		if want, ok := c.byID[d.ID]; ok {
			if want.UpdatedAt.IsZero() {
				want.UpdatedAt = d.UpdatedAt
			}
			sameDoc(t, d, want)
		}
		got = append(got, d.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := append(docIDs(c.docs), "Z-upper", "a-lower")
	slices.Sort(want) // byte order: "Z-upper" < "a-lower" < "doc-..."
	if !slices.Equal(got, want) {
		t.Fatalf("Scan visited %d ids (first %v), want %d in byte order", len(got), got[:min(3, len(got))], len(want))
	}
	stop := errors.New("stop here")
	visits := 0
	err = sc.Scan(context.Background(), func(spi.Document) error {
		visits++
		if visits == 600 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || visits != 600 {
		t.Errorf("Scan after fn error: err = %v, visits = %d; want the fn's error after 600", err, visits)
	}
}

func (s *vectorSuite) testConcurrent(t *testing.T) {
	const dim = 8
	c := newCorpus(400, dim, 7)
	st := s.open(t, dim, DistanceCosine)
	upsert(t, st, c.docs[:100])
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				d := c.docs[(w*25+i)%100]
				refs, err := st.Retrieve(context.Background(), spi.VectorRequest{Vector: d.Vector, K: 5, Tenant: d.Tenant})
				if err != nil {
					errs <- err
					return
				}
				if len(refs) == 0 || refs[0].ID != d.ID {
					errs <- fmt.Errorf("query by %s's own vector returned %v", d.ID, IDs(refs))
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 100; i < len(c.docs); i += 30 {
			if err := st.Upsert(context.Background(), c.docs[i:min(i+30, len(c.docs))]); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := retrieve(t, st, spi.VectorRequest{Vector: c.docs[0].Vector, K: 1000}); len(got) != len(c.docs) {
		t.Errorf("after concurrent writes the store holds %d docs, want %d", len(got), len(c.docs))
	}
}

// testWriteWhileSearch: every answer given while writes commit is the
// answer of one state of the store, never an empty or a mixed one.
// Document b stays throughout; a is moved near the query, away from it,
// and deleted, in a loop, while readers ask for the nearest one and two,
// without and with a metadata filter both documents match (a is written
// first, so deleting it moves b in stores that fill the hole, and the
// filter's bookkeeping moves with it).
func (s *vectorSuite) testWriteWhileSearch(t *testing.T) {
	const dim = 8
	st := s.open(t, dim, DistanceCosine)
	q := pad(dim, 1)
	md := func() spi.Metadata { return spi.Metadata{"lang": spi.String("en")} }
	b := spi.Document{ID: "b", Tenant: "w", Vector: pad(dim, 0.6, 0.8), Metadata: md()}
	near := pad(dim, 1, 0.05)
	far := pad(dim, 0, 0, 1)
	upsert(t, st, []spi.Document{{ID: "a", Tenant: "w", Vector: near, Metadata: md()}})
	upsert(t, st, []spi.Document{b})
	// The answers of the three states of a, for k = 1 and k = 2.
	ref := func(id string, v []float32) spi.Ref {
		return spi.Ref{ID: id, Score: refScore(DistanceCosine, q, v), Source: spi.SourceVector}
	}
	valid := map[int][][]spi.Ref{
		1: {{ref("a", near)}, {ref("b", b.Vector)}},
		2: {{ref("a", near), ref("b", b.Vector)}, {ref("b", b.Vector), ref("a", far)}, {ref("b", b.Vector)}},
	}
	matches := func(got, want []spi.Ref) bool {
		if len(got) != len(want) {
			return false
		}
		for i := range got {
			if got[i].ID != want[i].ID || math.Abs(got[i].Score-want[i].Score) > scoreTol(want[i].Score) {
				return false
			}
		}
		return true
	}
	ctx := context.Background()
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	answers := make([]int, 4)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := r%2 + 1
			req := spi.VectorRequest{Vector: q, K: k, Tenant: "w"}
			if r >= 2 {
				req.Filter = spi.StringFilter(map[string][]string{"lang": {"en"}})
			}
			for !done.Load() {
				refs, err := st.Retrieve(ctx, req)
				if err != nil {
					errs <- err
					return
				}
				answers[r]++
				if !slices.ContainsFunc(valid[k], func(want []spi.Ref) bool { return matches(refs, want) }) {
					errs <- fmt.Errorf("k=%d (filter %v) answered %+v while a was written: the answer of no state", k, req.Filter, refs)
					return
				}
			}
		}()
	}
	for i := range 150 {
		var err error
		switch i % 3 {
		case 0:
			err = st.Upsert(ctx, []spi.Document{{ID: "a", Tenant: "w", Vector: far, Metadata: md()}})
		case 1:
			err = st.Delete(ctx, []string{"a"})
		case 2:
			err = st.Upsert(ctx, []spi.Document{{ID: "a", Tenant: "w", Vector: near, Metadata: md()}})
		}
		if err != nil {
			t.Error(err)
			break
		}
		if len(errs) > 0 {
			break
		}
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d answers with k=1 and %d with k=2, %d and %d of them filtered, during 150 writes",
		answers[0]+answers[2], answers[1]+answers[3], answers[2], answers[3])
}

// testTenantScores: a tenant's answer, scores included, depends on its own
// documents only: another tenant's writes near the query change nothing.
func (s *vectorSuite) testTenantScores(t *testing.T) {
	const dim = 8
	c := newCorpus(60, dim, 11)
	st := s.open(t, dim, DistanceCosine)
	for i := range c.docs {
		c.docs[i].Tenant = "mine"
	}
	upsert(t, st, c.docs)
	q := c.docs[7].Vector
	req := spi.VectorRequest{Vector: q, K: 10, Tenant: "mine"}
	before := retrieve(t, st, req)
	var theirs []spi.Document
	for i := range 40 {
		v := slices.Clone(q)
		v[i%dim] += 0.01
		theirs = append(theirs, spi.Document{ID: fmt.Sprintf("theirs-%02d", i), Tenant: "theirs", Vector: v})
	}
	upsert(t, st, theirs)
	if after := retrieve(t, st, req); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("after another tenant's writes near the query: %v, before %v", after, before)
	}
}

func (s *vectorSuite) testRestart(t *testing.T) {
	if s.h.Reopen == nil {
		t.Skip("harness has no Reopen")
	}
	const dim = 8
	c := newCorpus(150, dim, 8)
	st := s.open(t, dim, DistanceCosine)
	c.load(t, st)
	if err := st.Delete(context.Background(), []string{"doc-0001"}); err != nil {
		t.Fatal(err)
	}
	q := c.docs[42].Vector
	before := retrieve(t, st, spi.VectorRequest{Vector: q, K: 10, Filter: spi.StringFilter(map[string][]string{"lang": {"en", "fr"}})})
	st = s.h.Reopen(t, st)
	after := retrieve(t, st, spi.VectorRequest{Vector: q, K: 10, Filter: spi.StringFilter(map[string][]string{"lang": {"en", "fr"}})})
	if !slices.Equal(IDs(before), IDs(after)) {
		t.Errorf("after reopen: %v, before: %v", IDs(after), IDs(before))
	}
	docs, missing, err := st.Hydrate(context.Background(), []string{"doc-0042", "doc-0001"})
	if err != nil || len(docs) != 1 || !slices.Equal(missing, []string{"doc-0001"}) {
		t.Fatalf("Hydrate after reopen = %v, %v, %v", docIDs(docs), missing, err)
	}
	sameDoc(t, docs[0], c.byID["doc-0042"])
	if all := retrieve(t, st, spi.VectorRequest{Vector: q, K: 1000}); len(all) != len(c.docs)-1 {
		t.Errorf("after reopen the store holds %d docs, want %d", len(all), len(c.docs)-1)
	}
	// The reopened store accepts writes.
	upsert(t, st, []spi.Document{{ID: "new", Vector: pad(dim, 1)}})
}
