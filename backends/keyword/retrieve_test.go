package keyword_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/spi"
)

// handMade are the documents the ranking cases are about; they sit among
// 300 filler documents.
func handMade() []spi.Document {
	return []spi.Document{
		{ID: "run", Tenant: "t0", Title: "morning notes", Text: "we run along the river every day"},
		{ID: "walk", Tenant: "t0", Title: "evening notes", Text: "we walk along the river every day"},
		{ID: "tb-title", Tenant: "t0", Title: "compressor", Text: "notes on machines and parts"},
		{ID: "tb-text", Tenant: "t0", Title: "notes", Text: "compressor on machines and parts"},
		{ID: "tie-b", Tenant: "t0", Title: "identical", Text: "propeller slipstream measurements"},
		{ID: "tie-a", Tenant: "t0", Title: "identical", Text: "propeller slipstream measurements"},
		{ID: "stop", Tenant: "t0", Title: "the the", Text: "the of and the of and to be or not to be"},
		{ID: "special", Tenant: "t0", Title: "paper", Text: "the title of an unbalanced paper about AND gates"},
		{ID: "w-en", Tenant: "t1", Title: "widget", Text: "widget manual", Metadata: spi.Strings(map[string]string{"lang": "en", "year": "2024-01-01"})},
		{ID: "w-de", Tenant: "t1", Title: "widget", Text: "widget handbuch", Metadata: spi.Strings(map[string]string{"lang": "de", "year": "2023"})},
		{ID: "w-fr", Tenant: "t1", Title: "widget", Text: "widget manuel", Metadata: spi.Strings(map[string]string{"lang": "fr"})},
		{ID: "w-none", Tenant: "t1", Title: "widget", Text: "widget"},
	}
}

func rankingBackend(t *testing.T, cfg keyword.Config) *keyword.Backend {
	t.Helper()
	b := mustOpen(t, cfg)
	mustUpsert(t, b, append(filler(300), handMade()...)...)
	return b
}

func TestRetrieveRanking(t *testing.T) {
	b := rankingBackend(t, keyword.Config{BatchSize: 64})
	tests := []struct {
		name, text string
		k          int
		want       []string
	}{
		// Porter stemming: "running" and "runs" reduce to "run".
		{"stemming", "running", 10, []string{"run"}},
		{"stemming plural", "runs", 10, []string{"run"}},
		// Stop words are dropped from the query, so only "river" counts.
		{"stop words ignored", "the river and the", 10, []string{"run", "walk"}},
		// Equal scores are ordered by ascending id, also at the top-k cut.
		{"tie by id", "slipstream", 10, []string{"tie-a", "tie-b"}},
		{"tie at the cut", "slipstream", 1, []string{"tie-a"}},
		// More matching words rank higher.
		{"more terms", "walk river", 10, []string{"walk", "run"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refs := mustRetrieve(t, b, spi.KeywordRequest{Text: tt.text, K: tt.k})
			checkOrder(t, refs)
			wantIDs(t, refs, tt.want...)
		})
	}
	t.Run("title boost", func(t *testing.T) {
		// With a title boost, a title match outranks the same word in the
		// text; with the boost below 1 the text match leads.
		wantIDs(t, mustRetrieve(t, b.WithScoring(3, 0, 0), spi.KeywordRequest{Text: "compressor"}), "tb-title", "tb-text")
		wantIDs(t, mustRetrieve(t, b.WithScoring(0.2, 0, 0), spi.KeywordRequest{Text: "compressor"}), "tb-text", "tb-title")
	})
	t.Run("tied scores are equal", func(t *testing.T) {
		refs := mustRetrieve(t, b, spi.KeywordRequest{Text: "slipstream"})
		if refs[0].Score != refs[1].Score || refs[0].Score <= 0 {
			t.Fatalf("identical documents scored %v", refs)
		}
	})
}

func TestRetrieveNoTerms(t *testing.T) {
	b := rankingBackend(t, keyword.Config{})
	for _, text := range []string{"", "   ", "\t\n", "the of and", "to be or not to be", "?!.,;"} {
		refs, err := b.Retrieve(context.Background(), spi.KeywordRequest{Text: text, K: 10})
		if !errors.Is(err, spi.ErrNothingToSearch) || len(refs) != 0 {
			t.Errorf("Retrieve(%q) = %v, %v; want no refs, ErrNothingToSearch", text, refs, err)
		}
	}
}

func TestTitleBoostIsHonoured(t *testing.T) {
	// With the title weighted far below the text, the text match wins.
	b := rankingBackend(t, keyword.Config{TitleBoost: 0.1})
	refs := mustRetrieve(t, b, spi.KeywordRequest{Text: "compressor"})
	wantIDs(t, refs, "tb-text", "tb-title")
}

func TestRetrieveFilters(t *testing.T) {
	b := rankingBackend(t, keyword.Config{})
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
		{"tenant and filter", "t1", spi.StringFilter(map[string][]string{"lang": {"fr"}}), []string{"w-fr"}},
		{"other tenant", "t0", spi.StringFilter(map[string][]string{"lang": {"fr"}}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refs := mustRetrieve(t, b, spi.KeywordRequest{Text: "widget", Tenant: tt.tenant, Filter: tt.filter})
			got := ids(refs)
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("ids = %v, want %v", got, tt.want)
			}
		})
	}
	// Metadata filters restrict the candidates; the statistics are the
	// tenant's (or every tenant's) whatever the filter.
	t.Run("filters do not change scores", func(t *testing.T) {
		for _, tenant := range []string{"", "t1"} {
			all := mustRetrieve(t, b, spi.KeywordRequest{Text: "widget manual", Tenant: tenant})
			one := mustRetrieve(t, b, spi.KeywordRequest{Text: "widget manual", Tenant: tenant, Filter: spi.StringFilter(map[string][]string{"lang": {"en"}})})
			if len(one) != 1 || all[0].ID != "w-en" || one[0] != all[0] {
				t.Fatalf("tenant %q: filtered %v, unfiltered top %v", tenant, one, all[0])
			}
		}
	})
}

func TestTenantIsolation(t *testing.T) {
	b := mustOpen(t, keyword.Config{})
	docs := filler(300)
	// The same text under every tenant, so any leak would rank high.
	for _, tn := range []string{"t0", "t1", "t2"} {
		docs = append(docs, spi.Document{ID: "shared-" + tn, Tenant: tn, Title: "shared secret", Text: "alpha beta secret"})
	}
	mustUpsert(t, b, docs...)
	tenantOf := map[string]string{}
	for _, d := range docs {
		tenantOf[d.ID] = d.Tenant
	}
	for _, tn := range []string{"t0", "t1", "t2", "nobody"} {
		for _, text := range []string{"secret", "alpha beta gamma", "omega", "shared secret alpha"} {
			for _, syntax := range []bool{false, true} {
				q := text
				if syntax {
					q = "tenant:t0 tenant:t1 tenant:t2 " + text // a user cannot widen the tenant
				}
				refs := mustRetrieve(t, b, spi.KeywordRequest{Text: q, K: 500, Tenant: tn, Syntax: syntax})
				if tn != "nobody" && len(refs) == 0 {
					t.Fatalf("tenant %s query %q: no results", tn, q)
				}
				for _, r := range refs {
					if tenantOf[r.ID] != tn {
						t.Fatalf("tenant %s query %q returned %s of tenant %s", tn, q, r.ID, tenantOf[r.ID])
					}
				}
			}
		}
	}
}

func TestSpecialCharactersAreWords(t *testing.T) {
	b := rankingBackend(t, keyword.Config{})
	inputs := map[string]string{
		`title:(`:              "special",
		`"unbalanced`:          "special",
		`unbalanced)`:          "special",
		`paper AND OR NOT`:     "special",
		`+unbalanced -title`:   "special",
		`unbalanced^3`:         "special",
		`title:unbalanced^3`:   "", // "title:unbalanced" is one token (UAX#29: ':' joins letters)
		`unbalanced~2`:         "special",
		`unbal*`:               "",
		`/[a-z/`:               "",
		`\`:                    "",
		`{[( )]}`:              "",
		`tenant:t1 widget`:     "w-en",
		`metadata.lang:en`:     "",
		"title:\x00unbalanced": "special",
	}
	for in, want := range inputs {
		refs, err := b.Retrieve(context.Background(), spi.KeywordRequest{Text: in, K: 20})
		if errors.Is(err, spi.ErrNothingToSearch) && want == "" {
			continue // nothing but punctuation: answered without searching
		}
		if err != nil {
			t.Errorf("Retrieve(%q): %v", in, err)
			continue
		}
		if want != "" && !slices.Contains(ids(refs), want) {
			t.Errorf("Retrieve(%q) = %v, want %s among them", in, ids(refs), want)
		}
	}
}

func TestSyntax(t *testing.T) {
	b := rankingBackend(t, keyword.Config{})
	// bleve's syntax has no grouping, so "(" alone is a literal; these
	// are its errors: unterminated quote, dangling field or operator, a
	// regexp that does not compile.
	for _, bad := range []string{`"unbalanced`, `title:"x`, `a:b:c(`, `title:`, `+`, `/[/`} {
		_, err := b.Retrieve(context.Background(), spi.KeywordRequest{Text: bad, K: 10, Syntax: true})
		if !isInvalid(err) {
			t.Errorf("Syntax %q: err = %v, want ErrInvalidQuery", bad, err)
		}
	}
	// Field-qualified syntax reaches the title field only.
	refs := mustRetrieve(t, b, spi.KeywordRequest{Text: "title:compressor", Syntax: true})
	wantIDs(t, refs, "tb-title")
	// Unqualified terms search the text field.
	refs = mustRetrieve(t, b, spi.KeywordRequest{Text: "compressor", Syntax: true})
	wantIDs(t, refs, "tb-text")
	// Phrases work (term vectors are indexed).
	refs = mustRetrieve(t, b, spi.KeywordRequest{Text: `"walk along the river"`, Syntax: true})
	wantIDs(t, refs, "walk")
	// Metadata fields are exact keywords in query syntax too.
	refs = mustRetrieve(t, b, spi.KeywordRequest{Text: "widget +metadata.lang:de", Syntax: true})
	wantIDs(t, refs, "w-de")
}

func TestRetrieveInvalid(t *testing.T) {
	b := mustOpen(t, keyword.Config{MaxK: 50})
	for _, req := range []spi.KeywordRequest{
		{Text: "x", K: 0},
		{Text: "x", K: -1},
		{Text: "x", K: 51},
		{Text: "x", K: 5, Filter: spi.StringFilter(map[string][]string{"": {"v"}})},
		{Text: "x", K: 5, Filter: spi.StringFilter(map[string][]string{"k": {}})},
	} {
		if _, err := b.Retrieve(context.Background(), req); !isInvalid(err) {
			t.Errorf("Retrieve(%+v) err = %v, want ErrInvalidQuery", req, err)
		}
	}
}

func TestRetrieveTermLimit(t *testing.T) {
	b := rankingBackend(t, keyword.Config{MaxTerms: 5})
	// Five terms are fine, six are not; stop words do not count.
	mustRetrieve(t, b, spi.KeywordRequest{Text: "the river walk run compressor widget"})
	if _, err := b.Retrieve(context.Background(), spi.KeywordRequest{Text: "river walk run compressor widget paper", K: 10}); !isInvalid(err) {
		t.Fatalf("six terms: err = %v, want ErrInvalidQuery", err)
	}
	// A regexp matching every text term expands past the limit.
	if _, err := b.Retrieve(context.Background(), spi.KeywordRequest{Text: "/.*/", K: 10, Syntax: true}); !isInvalid(err) {
		t.Fatalf("wide regexp: err = %v, want ErrInvalidQuery", err)
	}
	refs := mustRetrieve(t, b, spi.KeywordRequest{Text: "/compress.*/", Syntax: true, Tenant: "t0"})
	wantIDs(t, refs, "tb-text")
}

func TestRetrieveContext(t *testing.T) {
	b := rankingBackend(t, keyword.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Retrieve(ctx, spi.KeywordRequest{Text: "river", K: 10}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Retrieve err = %v", err)
	}
	cause := errors.New("per-source budget spent")
	dctx, dcancel := context.WithDeadlineCause(context.Background(), time.Now().Add(-time.Second), cause)
	defer dcancel()
	_, err := b.Retrieve(dctx, spi.KeywordRequest{Text: "river", K: 10})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, cause) {
		t.Fatalf("expired Retrieve err = %v, want DeadlineExceeded and its cause", err)
	}
	if _, _, err := b.Hydrate(ctx, []string{"run"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Hydrate err = %v", err)
	}
	if err := b.Upsert(ctx, handMade()[:1]); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Upsert err = %v", err)
	}
	if err := b.Delete(ctx, []string{"run"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Delete err = %v", err)
	}
	// Nothing was deleted by the cancelled call.
	wantIDs(t, mustRetrieve(t, b, spi.KeywordRequest{Text: "running"}), "run")
}

func TestConcurrentUse(t *testing.T) {
	b := rankingBackend(t, keyword.Config{BatchSize: 16})
	ctx := context.Background()
	done := make(chan error, 8)
	for g := range 4 {
		go func() {
			for i := range 20 {
				if _, err := b.Retrieve(ctx, spi.KeywordRequest{Text: "river widget alpha", K: 10}); err != nil {
					done <- err
					return
				}
				if _, _, err := b.Hydrate(ctx, []string{"run", "f0001"}); err != nil {
					done <- err
					return
				}
				_ = i
			}
			done <- nil
		}()
		go func() {
			docs := filler(40)
			for i := range docs {
				docs[i].ID = strings.Replace(docs[i].ID, "f", "c"+string(rune('a'+g)), 1)
			}
			if err := b.Upsert(ctx, docs); err != nil {
				done <- err
				return
			}
			done <- b.Delete(ctx, ids(refsOf(docs[:20])))
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	n, err := b.DocCount(ctx)
	if err != nil || n != 300+len(handMade())+4*20 {
		t.Fatalf("DocCount = %d, %v; want %d", n, err, 300+len(handMade())+4*20)
	}
}

func refsOf(docs []spi.Document) []spi.Ref {
	out := make([]spi.Ref, len(docs))
	for i, d := range docs {
		out[i] = spi.Ref{ID: d.ID}
	}
	return out
}
