package spitest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragd/ragd/spi"
)

// KeywordStore is what the keyword contract exercises: a keyword source
// that the change log fills.
type KeywordStore interface {
	spi.KeywordRetrievalBackend
	spi.ChangeApplier
}

// KeywordOptions configure a store the suite opens; zero fields take the
// backend's defaults.
type KeywordOptions struct {
	TitleBoost float64
	MaxK       int
	MaxTerms   int
}

// KeywordHarness opens fresh, empty keyword stores for the suite. Open
// registers the store's cleanup with t.
type KeywordHarness struct {
	Open func(t *testing.T, o KeywordOptions) KeywordStore
	// NoBodies: the store keeps no title and text (a derived index whose
	// record hydrates, such as bleve's lean index), so its Hydrate must
	// wrap spi.ErrUnsupported; the suite checks through searches what it
	// would otherwise check through hydration.
	NoBodies bool
}

// RunKeyword runs the keyword contract: the answers the bleve backend and
// a server backend must both give (ordering, ties, stemming and stop
// words, filters, tenants, nothing to search, bounds, hydration, applies
// replayed or out of order, searches while writes apply). Documents
// arrive through ApplyChanges, as in ragd.
func RunKeyword(t *testing.T, h KeywordHarness) {
	s := &keywordSuite{h: h}
	t.Run("Ranking", s.testRanking)
	t.Run("TitleBoost", s.testTitleBoost)
	t.Run("NothingToSearch", s.testNothing)
	t.Run("Filters", s.testFilters)
	t.Run("TenantIsolation", s.testTenantIsolation)
	t.Run("TenantScoresOwnDocuments", s.testTenantScores)
	t.Run("SingleTenantScoresUnchanged", s.testSingleTenant)
	t.Run("Invalid", s.testInvalid)
	t.Run("TermLimit", s.testTermLimit)
	t.Run("Hydrate", s.testHydrate)
	t.Run("ApplyIdempotent", s.testApplyIdempotent)
	t.Run("OlderApplyIgnored", s.testOlderIgnored)
	t.Run("Context", s.testContext)
	t.Run("WriteWhileSearch", s.testWriteWhileSearch)
}

type keywordSuite struct{ h KeywordHarness }

// kwStore is one opened store with its log and next sequence.
type kwStore struct {
	KeywordStore
	log string
	seq uint64
}

func (s *keywordSuite) open(t *testing.T, o KeywordOptions) *kwStore {
	t.Helper()
	st := s.h.Open(t, o)
	if st == nil {
		t.Fatal("harness Open returned nil")
	}
	return &kwStore{KeywordStore: st, log: fmt.Sprintf("kw-log-%d", time.Now().UnixNano())}
}

// put applies docs as upserts, one new version each.
func (k *kwStore) put(t *testing.T, docs ...spi.Document) {
	t.Helper()
	cs := make([]spi.Change, len(docs))
	for i := range docs {
		k.seq++
		d := docs[i]
		cs[i] = spi.Change{Seq: k.seq, Op: spi.OpUpsert, ID: d.ID, Doc: &d, Version: k.seq, At: time.Now()}
	}
	k.apply(t, cs...)
}

// del applies deletes of ids, one new version each.
func (k *kwStore) del(t *testing.T, ids ...string) {
	t.Helper()
	cs := make([]spi.Change, len(ids))
	for i, id := range ids {
		k.seq++
		cs[i] = spi.Change{Seq: k.seq, Op: spi.OpDelete, ID: id, Version: k.seq, At: time.Now()}
	}
	k.apply(t, cs...)
}

func (k *kwStore) apply(t *testing.T, cs ...spi.Change) {
	t.Helper()
	for len(cs) > 0 {
		n := min(len(cs), 200)
		if err := k.ApplyChanges(context.Background(), k.log, cs[:n], cs[n-1].Seq); err != nil {
			t.Fatalf("ApplyChanges: %v", err)
		}
		cs = cs[n:]
	}
}

func (k *kwStore) search(t *testing.T, req spi.KeywordRequest) []spi.Ref {
	t.Helper()
	if req.K == 0 {
		req.K = 10
	}
	refs, err := k.Retrieve(context.Background(), req)
	if err != nil {
		t.Fatalf("Retrieve(%q tenant %q filter %v): %v", req.Text, req.Tenant, req.Filter, err)
	}
	CheckOrder(t, refs, spi.SourceKeyword)
	return refs
}

// KeywordFiller returns n documents over Greek letter words, spread over
// tenants t0..t2, with metadata kind k0..k3: the background the contract's
// hand-made documents sit among.
func KeywordFiller(n int) []spi.Document {
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega")
	docs := make([]spi.Document, n)
	for i := range docs {
		var text []string
		for j := 0; j < 20+i%15; j++ {
			text = append(text, words[(i*7+j*j)%len(words)])
		}
		docs[i] = spi.Document{
			ID:       fmt.Sprintf("f%04d", i),
			Tenant:   fmt.Sprintf("t%d", i%3),
			Title:    words[i%len(words)] + " " + words[(i+5)%len(words)],
			Text:     strings.Join(text, " "),
			Metadata: spi.Strings(map[string]string{"kind": fmt.Sprintf("k%d", i%4)}),
		}
	}
	return docs
}

// KeywordHandMade are the documents the contract's ranking, filter and
// term-limit cases are about; they sit among KeywordFiller documents,
// whose words they do not use.
func KeywordHandMade() []spi.Document {
	return []spi.Document{
		{ID: "run", Tenant: "t0", Title: "morning notes", Text: "we run along the river every day"},
		{ID: "walk", Tenant: "t0", Title: "evening notes", Text: "we walk along the river every day"},
		{ID: "tb-title", Tenant: "t0", Title: "compressor", Text: "notes on machines and parts"},
		{ID: "tb-text", Tenant: "t0", Title: "notes", Text: "compressor on machines and parts"},
		{ID: "tie-b", Tenant: "t0", Title: "identical", Text: "propeller slipstream measurements"},
		{ID: "tie-a", Tenant: "t0", Title: "identical", Text: "propeller slipstream measurements"},
		{ID: "stop", Tenant: "t0", Title: "the the", Text: "the of and the of and to be or not to be"},
		{ID: "w-en", Tenant: "t1", Title: "widget", Text: "widget manual", Metadata: spi.Strings(map[string]string{"lang": "en", "year": "2024-01-01"})},
		{ID: "w-de", Tenant: "t1", Title: "widget", Text: "widget handbuch", Metadata: spi.Strings(map[string]string{"lang": "de", "year": "2023"})},
		{ID: "w-fr", Tenant: "t1", Title: "widget", Text: "widget manuel", Metadata: spi.Strings(map[string]string{"lang": "fr", "a.b": "dotted", "2:x": "y"})},
		{ID: "w-none", Tenant: "t1", Title: "widget", Text: "widget"},
	}
}

func (s *keywordSuite) ranked(t *testing.T, o KeywordOptions) *kwStore {
	t.Helper()
	k := s.open(t, o)
	k.put(t, append(KeywordFiller(300), KeywordHandMade()...)...)
	return k
}

func (s *keywordSuite) testRanking(t *testing.T) {
	k := s.ranked(t, KeywordOptions{})
	tests := []struct {
		name, text string
		k          int
		want       []string
	}{
		{"stemming", "running", 10, []string{"run"}},
		{"stemming plural", "runs", 10, []string{"run"}},
		{"possessive", "river's", 10, []string{"run", "walk"}},
		{"stop words ignored", "the river and the", 10, []string{"run", "walk"}},
		{"tie by id", "slipstream", 10, []string{"tie-a", "tie-b"}},
		{"tie at the cut", "slipstream", 1, []string{"tie-a"}},
		{"more terms", "walk river", 10, []string{"walk", "run"}},
		{"case", "RIVER Walk", 10, []string{"walk", "run"}},
		{"query syntax is plain words", `walk:(river AND "`, 10, []string{"walk", "run"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			WantIDs(t, k.search(t, spi.KeywordRequest{Text: tt.text, K: tt.k}), tt.want...)
		})
	}
	t.Run("tied scores are equal", func(t *testing.T) {
		refs := k.search(t, spi.KeywordRequest{Text: "slipstream"})
		if len(refs) != 2 || refs[0].Score != refs[1].Score || refs[0].Score <= 0 {
			t.Fatalf("identical documents scored %v", refs)
		}
	})
	t.Run("a repeated query word counts again", func(t *testing.T) {
		once := k.search(t, spi.KeywordRequest{Text: "walk river"})
		twice := k.search(t, spi.KeywordRequest{Text: "walk walk river"})
		if len(once) != 2 || len(twice) != 2 || twice[0].Score <= once[0].Score || twice[1].Score != once[1].Score {
			t.Fatalf("walk river %v, walk walk river %v: want walk's score up, run's the same", once, twice)
		}
	})
}

func (s *keywordSuite) testTitleBoost(t *testing.T) {
	for _, tc := range []struct {
		boost float64
		want  []string
	}{{3, []string{"tb-title", "tb-text"}}, {0.2, []string{"tb-text", "tb-title"}}} {
		k := s.open(t, KeywordOptions{TitleBoost: tc.boost})
		k.put(t, append(KeywordFiller(30), KeywordHandMade()...)...)
		WantIDs(t, k.search(t, spi.KeywordRequest{Text: "compressor"}), tc.want...)
	}
}

func (s *keywordSuite) testNothing(t *testing.T) {
	k := s.ranked(t, KeywordOptions{})
	for _, text := range []string{"", "   ", "\t\n", "the of and", "to be or not to be", "?!.,;", "{[( )]}"} {
		refs, err := k.Retrieve(context.Background(), spi.KeywordRequest{Text: text, K: 10})
		if !errors.Is(err, spi.ErrNothingToSearch) || len(refs) != 0 {
			t.Errorf("Retrieve(%q) = %v, %v; want no refs, ErrNothingToSearch", text, refs, err)
		}
	}
}

func (s *keywordSuite) testFilters(t *testing.T) {
	k := s.ranked(t, KeywordOptions{})
	tests := []struct {
		name   string
		tenant string
		filter spi.Filter
		want   []string
	}{
		{"no filter", "", spi.Filter{}, []string{"w-de", "w-en", "w-fr", "w-none"}},
		{"one key, two values", "", spi.StringFilter(map[string][]string{"lang": {"en", "de"}}), []string{"w-de", "w-en"}},
		{"two keys AND", "", spi.StringFilter(map[string][]string{"lang": {"en", "de"}, "year": {"2024-01-01"}}), []string{"w-en"}},
		{"date-like value is a plain string", "", spi.StringFilter(map[string][]string{"year": {"2023"}}), []string{"w-de"}},
		{"values are exact", "", spi.StringFilter(map[string][]string{"lang": {"EN", "e"}}), nil},
		{"unknown key", "", spi.StringFilter(map[string][]string{"colour": {"red"}}), nil},
		{"dotted key", "", spi.StringFilter(map[string][]string{"a.b": {"dotted"}}), []string{"w-fr"}},
		{"key and value cannot be mixed up", "", spi.StringFilter(map[string][]string{"2": {"x=y"}}), nil},
		{"tenant and filter", "t1", spi.StringFilter(map[string][]string{"lang": {"fr"}}), []string{"w-fr"}},
		{"other tenant", "t0", spi.StringFilter(map[string][]string{"lang": {"fr"}}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := IDs(k.search(t, spi.KeywordRequest{Text: "widget", Tenant: tt.tenant, Filter: tt.filter}))
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("ids = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("filters do not change scores", func(t *testing.T) {
		for _, tenant := range []string{"", "t1"} {
			all := k.search(t, spi.KeywordRequest{Text: "widget manual", Tenant: tenant})
			one := k.search(t, spi.KeywordRequest{Text: "widget manual", Tenant: tenant, Filter: spi.StringFilter(map[string][]string{"lang": {"en"}})})
			if len(one) != 1 || all[0].ID != "w-en" || one[0] != all[0] {
				t.Fatalf("tenant %q: filtered %v, unfiltered top %v", tenant, one, all[0])
			}
		}
	})
}

func (s *keywordSuite) testTenantIsolation(t *testing.T) {
	k := s.open(t, KeywordOptions{})
	docs := KeywordFiller(60)
	for _, tn := range []string{"t0", "t1", "t2", ""} {
		docs = append(docs, spi.Document{ID: "shared-" + tn, Tenant: tn, Title: "shared secret", Text: "alpha beta secret"})
	}
	k.put(t, docs...)
	tenantOf := map[string]string{}
	for _, d := range docs {
		tenantOf[d.ID] = d.Tenant
	}
	for _, tn := range []string{"t0", "t1", "t2", "nobody"} {
		for _, text := range []string{"secret", "alpha beta gamma", "omega", "tenant:t1 shared secret alpha"} {
			refs := k.search(t, spi.KeywordRequest{Text: text, K: 500, Tenant: tn})
			if tn != "nobody" && len(refs) == 0 {
				t.Fatalf("tenant %s query %q: no results", tn, text)
			}
			for _, r := range refs {
				if !spi.Visible(tn, tenantOf[r.ID]) {
					t.Fatalf("tenant %s query %q returned %s of tenant %q", tn, text, r.ID, tenantOf[r.ID])
				}
			}
		}
	}
	// Unscoped, every tenant's documents are found, the tenantless too.
	if got := IDs(k.search(t, spi.KeywordRequest{Text: "shared secret", K: 10})); len(got) != 4 {
		t.Fatalf("unscoped: %v, want the four shared documents", got)
	}
}

// testTenantScores: another tenant adding documents with the query's word
// (moving its document frequency and the average lengths over all
// tenants) moves nothing of a tenant's answer, scores included.
func (s *keywordSuite) testTenantScores(t *testing.T) {
	k := s.open(t, KeywordOptions{})
	k.put(t,
		spi.Document{ID: "a1", Tenant: "a", Title: "turbine blades", Text: "cooling of turbine blades at high temperature"},
		spi.Document{ID: "a2", Tenant: "a", Title: "wings", Text: "lift and drag of swept wings"},
		spi.Document{ID: "a3", Tenant: "a", Title: "nozzles", Text: "erosion in rocket nozzles"})
	query := spi.KeywordRequest{Text: "turbine cooling", K: 10, Tenant: "a"}
	before := k.search(t, query)
	if len(before) == 0 {
		t.Fatal("no answer")
	}
	for _, n := range []int{1, 50} {
		var theirs []spi.Document
		for i := range n {
			theirs = append(theirs, spi.Document{ID: fmt.Sprintf("b%d-%d", n, i), Tenant: "b", Title: "turbine",
				Text: "a much longer text about turbine turbine cooling and many other words to move the average length"})
		}
		k.put(t, theirs...)
		if after := k.search(t, query); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("after tenant b added %d documents, tenant a's answer moved: %v, was %v", n, after, before)
		}
	}
}

// testSingleTenant: with every document in one tenant, a query for that
// tenant gets the refs, scores included, of a query for every tenant.
func (s *keywordSuite) testSingleTenant(t *testing.T) {
	docs := append(KeywordFiller(100),
		spi.Document{ID: "rep", Title: "alpha alpha", Text: "alpha beta alpha gamma alpha"},
		spi.Document{ID: "long", Title: "a rather long title about beta and delta and more", Text: "beta"})
	for i := range docs {
		docs[i].Tenant = "acme"
	}
	k := s.open(t, KeywordOptions{})
	k.put(t, docs...)
	for _, q := range []string{"alpha", "alpha beta", "beta beta delta", "long title"} {
		all := k.search(t, spi.KeywordRequest{Text: q, K: 100})
		one := k.search(t, spi.KeywordRequest{Text: q, K: 100, Tenant: "acme"})
		if len(all) == 0 || len(all) != len(one) {
			t.Fatalf("%q: tenant acme answered %v, every tenant %v", q, one, all)
		}
		for i := range all {
			if all[i].ID != one[i].ID || !closeScore(all[i].Score, one[i].Score) {
				t.Fatalf("%q: tenant acme answered %v, every tenant %v", q, one, all)
			}
		}
	}
}

// closeScore allows the rounding of a server that sums in float32.
func closeScore(a, b float64) bool {
	d := a - b
	return d < 1e-5*max(1, a) && -d < 1e-5*max(1, a)
}

func (s *keywordSuite) testInvalid(t *testing.T) {
	k := s.open(t, KeywordOptions{MaxK: 50})
	k.put(t, KeywordFiller(5)...)
	for _, req := range []spi.KeywordRequest{
		{Text: "alpha", K: 0},
		{Text: "alpha", K: -1},
		{Text: "alpha", K: 51},
		{Text: "alpha", K: 5, Filter: spi.StringFilter(map[string][]string{"": {"v"}})},
		{Text: "alpha", K: 5, Filter: spi.StringFilter(map[string][]string{"k": {}})},
	} {
		if _, err := k.Retrieve(context.Background(), req); !errors.Is(err, spi.ErrInvalidQuery) {
			t.Errorf("Retrieve(K %d filter %v) err = %v, want ErrInvalidQuery", req.K, req.Filter, err)
		}
	}
	if refs := k.search(t, spi.KeywordRequest{Text: "alpha", K: 50}); len(refs) == 0 {
		t.Fatal("K = MaxK found nothing")
	}
}

func (s *keywordSuite) testTermLimit(t *testing.T) {
	k := s.open(t, KeywordOptions{MaxTerms: 5})
	k.put(t, KeywordHandMade()...)
	// Five terms are fine, six are not; stop words do not count.
	k.search(t, spi.KeywordRequest{Text: "the river walk run compressor widget"})
	if _, err := k.Retrieve(context.Background(), spi.KeywordRequest{Text: "river walk run compressor widget paper", K: 10}); !errors.Is(err, spi.ErrInvalidQuery) {
		t.Fatalf("six terms: err = %v, want ErrInvalidQuery", err)
	}
}

func (s *keywordSuite) testHydrate(t *testing.T) {
	k := s.open(t, KeywordOptions{})
	if s.h.NoBodies {
		k.put(t, spi.Document{ID: "h1", Title: "one", Text: "first text"})
		if _, _, err := k.Hydrate(context.Background(), []string{"h1"}); !errors.Is(err, spi.ErrUnsupported) {
			t.Fatalf("Hydrate of a store without bodies: err = %v, want spi.ErrUnsupported", err)
		}
		return
	}
	at := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	long := strings.Repeat("x", 600) // longer than some stores' own ids
	in := []spi.Document{
		{ID: "h1", Tenant: "ta", Title: "one", Text: "first text", Metadata: spi.Strings(map[string]string{"k": "v", "a.b": "c"}), UpdatedAt: at},
		{ID: "h2", Title: "two", Text: "second text"},
		{ID: long, Tenant: "tb", Title: "long", Text: "a long id"},
		{ID: "~h3", Tenant: "tb", Title: "tilde", Text: "tilde id"},
	}
	k.put(t, in...)
	docs, missing, err := k.Hydrate(context.Background(), []string{"h2", "nope", "h1", long, "h2", "~h3"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(missing, []string{"nope"}) {
		t.Fatalf("missing = %v, want [nope]", missing)
	}
	want := []spi.Document{in[1], in[0], in[2], in[3]}
	if len(docs) != len(want) {
		t.Fatalf("Hydrate returned %d documents, want %d", len(docs), len(want))
	}
	for i, d := range docs {
		w := want[i]
		if d.ID != w.ID || d.Tenant != w.Tenant || d.Title != w.Title || d.Text != w.Text ||
			!d.Metadata.Equal(w.Metadata) || !d.UpdatedAt.Equal(w.UpdatedAt) {
			t.Fatalf("document %d = %+v, want %+v", i, d, w)
		}
	}
	WantIDs(t, k.search(t, spi.KeywordRequest{Text: "long"}), long)
	if docs, missing, err := k.Hydrate(context.Background(), nil); err != nil || len(docs)+len(missing) != 0 {
		t.Fatalf("Hydrate(nil) = %v, %v, %v", docs, missing, err)
	}
}

func (s *keywordSuite) testApplyIdempotent(t *testing.T) {
	k := s.open(t, KeywordOptions{})
	d1 := spi.Document{ID: "i1", Tenant: "t", Title: "engine", Text: "jet engine noise"}
	d2 := spi.Document{ID: "i2", Tenant: "t", Title: "wing", Text: "wing flutter"}
	batch := []spi.Change{
		{Seq: 1, Op: spi.OpUpsert, ID: "i1", Doc: &d1, Version: 1},
		{Seq: 2, Op: spi.OpUpsert, ID: "i2", Doc: &d2, Version: 2},
		{Seq: 3, Op: spi.OpDelete, ID: "i2", Version: 3},
	}
	k.apply(t, batch...)
	first := k.search(t, spi.KeywordRequest{Text: "engine wing"})
	k.apply(t, batch...)
	k.apply(t, batch[1:]...)
	second := k.search(t, spi.KeywordRequest{Text: "engine wing"})
	WantIDs(t, second, "i1")
	if fmt.Sprint(first) != fmt.Sprint(second) {
		t.Fatalf("applying the batch again moved the answer: %v, was %v", second, first)
	}
	if seq, err := k.AppliedSeq(context.Background(), k.log); err != nil || seq != 3 {
		t.Fatalf("AppliedSeq = %d, %v; want 3", seq, err)
	}
}

// testOlderIgnored: a state older than the one held (a replayed or
// reordered apply) changes neither search nor hydration; a tenant move
// leaves nothing behind in the old tenant.
func (s *keywordSuite) testOlderIgnored(t *testing.T) {
	k := s.open(t, KeywordOptions{})
	newer := spi.Document{ID: "o1", Tenant: "t", Title: "new", Text: "hypersonic inlet"}
	older := spi.Document{ID: "o1", Tenant: "t", Title: "old", Text: "subsonic diffuser"}
	k.apply(t, spi.Change{Seq: 5, Op: spi.OpUpsert, ID: "o1", Doc: &newer, Version: 5})
	k.apply(t, spi.Change{Seq: 6, Op: spi.OpUpsert, ID: "o1", Doc: &older, Version: 4})
	if refs := k.search(t, spi.KeywordRequest{Text: "subsonic diffuser"}); len(refs) != 0 {
		t.Fatalf("an older state was applied: %v", refs)
	}
	WantIDs(t, k.search(t, spi.KeywordRequest{Text: "hypersonic", Tenant: "t"}), "o1")
	// Deleted at 7: the entry of 6 applied again (a replay) stays deleted.
	k.apply(t, spi.Change{Seq: 7, Op: spi.OpDelete, ID: "o1", Version: 7})
	k.apply(t, spi.Change{Seq: 6, Op: spi.OpUpsert, ID: "o1", Doc: &older, Version: 6})
	if s.h.NoBodies {
		if refs := k.search(t, spi.KeywordRequest{Text: "subsonic diffuser hypersonic inlet"}); len(refs) != 0 {
			t.Fatalf("a late upsert revived a deleted document: %v", refs)
		}
	} else if docs, _, err := k.Hydrate(context.Background(), []string{"o1"}); err != nil || len(docs) != 0 {
		t.Fatalf("a late upsert revived a deleted document: %v, %v", docs, err)
	}
	// Moved to another tenant at 9: found there only.
	moved := spi.Document{ID: "o1", Tenant: "u", Title: "moved", Text: "hypersonic inlet"}
	k.apply(t, spi.Change{Seq: 9, Op: spi.OpUpsert, ID: "o1", Doc: &moved, Version: 9})
	WantIDs(t, k.search(t, spi.KeywordRequest{Text: "hypersonic", Tenant: "u"}), "o1")
	if refs := k.search(t, spi.KeywordRequest{Text: "hypersonic", Tenant: "t"}); len(refs) != 0 {
		t.Fatalf("the old tenant still finds a moved document: %v", refs)
	}
	WantIDs(t, k.search(t, spi.KeywordRequest{Text: "hypersonic"}), "o1")
}

func (s *keywordSuite) testContext(t *testing.T) {
	k := s.open(t, KeywordOptions{})
	k.put(t, KeywordHandMade()...)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := k.Retrieve(ctx, spi.KeywordRequest{Text: "river", K: 10}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Retrieve err = %v", err)
	}
	cause := errors.New("per-source budget spent")
	dctx, dcancel := context.WithDeadlineCause(context.Background(), time.Now().Add(-time.Second), cause)
	defer dcancel()
	if _, err := k.Retrieve(dctx, spi.KeywordRequest{Text: "river", K: 10}); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, cause) {
		t.Fatalf("expired Retrieve err = %v, want DeadlineExceeded and its cause", err)
	}
	if _, _, err := k.Hydrate(ctx, []string{"run"}); !s.h.NoBodies && !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Hydrate err = %v", err)
	}
	d := spi.Document{ID: "run", Tenant: "t0", Title: "gone", Text: "gone"}
	if err := k.ApplyChanges(ctx, k.log, []spi.Change{{Seq: 1000, Op: spi.OpUpsert, ID: "run", Doc: &d, Version: 1000}}, 1000); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ApplyChanges err = %v", err)
	}
	WantIDs(t, k.search(t, spi.KeywordRequest{Text: "running"}), "run")
}

// testWriteWhileSearch: every answer given while applies go on is the
// answer of one state, never an empty or a mixed one. b holds the query
// word throughout; a holds it twice (ranking first), then not, then is
// deleted, in a loop, while readers ask for the best one and two,
// without and with a filter both match.
func (s *keywordSuite) testWriteWhileSearch(t *testing.T) {
	k := s.open(t, KeywordOptions{})
	md := spi.Metadata{"lang": spi.String("en")}
	k.put(t, KeywordFiller(20)...)
	k.put(t, spi.Document{ID: "a", Tenant: "w", Title: "note", Text: "quasar quasar survey", Metadata: md})
	k.put(t, spi.Document{ID: "b", Tenant: "w", Title: "note", Text: "quasar survey of the sky", Metadata: md})
	valid := map[int][]string{1: {"[a]", "[b]"}, 2: {"[a b]", "[b]"}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var bad atomic.Value
	var answers atomic.Int64
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kk := 1 + r%2
			req := spi.KeywordRequest{Text: "quasar", K: kk, Tenant: "w"}
			if r >= 2 {
				req.Filter = spi.StringFilter(map[string][]string{"lang": {"en"}})
			}
			for ctx.Err() == nil {
				refs, err := k.Retrieve(ctx, req)
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					bad.Store(fmt.Sprintf("Retrieve: %v", err))
					return
				}
				if got := fmt.Sprint(IDs(refs)); !slices.Contains(valid[kk], got) {
					bad.Store(fmt.Sprintf("k=%d filter %v: answer %s is no state's", kk, req.Filter, got))
					return
				}
				answers.Add(1)
			}
		}()
	}
	for range 8 {
		k.put(t, spi.Document{ID: "a", Tenant: "w", Title: "note", Text: "survey", Metadata: md})
		k.del(t, "a")
		k.put(t, spi.Document{ID: "a", Tenant: "w", Title: "note", Text: "quasar quasar survey", Metadata: md})
		if v := bad.Load(); v != nil {
			break
		}
	}
	cancel()
	wg.Wait()
	if v := bad.Load(); v != nil {
		t.Fatal(v)
	}
	if answers.Load() == 0 {
		t.Fatal("no reader answered while the writes applied")
	}
	WantIDs(t, k.search(t, spi.KeywordRequest{Text: "quasar", K: 2, Tenant: "w"}), "a", "b")
}
