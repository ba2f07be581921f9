package keyword_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

// handMade are the contract's hand-made documents and one for the
// query-syntax cases; they sit among 300 filler documents. The cases the
// contract asks of every keyword store (ranking, ties, stop words,
// filters, bounds, context) run on this backend in contract_test.go; the
// tests here are the bleve backend's own (query syntax, Upsert and
// Delete, scoring views).
func handMade() []spi.Document {
	return append(spitest.KeywordHandMade(),
		spi.Document{ID: "special", Tenant: "t0", Title: "paper", Text: "the title of an unbalanced paper about AND gates"})
}

func rankingBackend(t *testing.T, cfg keyword.Config) *keyword.Backend {
	t.Helper()
	b := mustOpen(t, cfg)
	mustUpsert(t, b, append(spitest.KeywordFiller(300), handMade()...)...)
	return b
}

// TestWithScoring: a view with another title boost shares the index and
// ranks by its own boost.
func TestWithScoring(t *testing.T) {
	b := rankingBackend(t, keyword.Config{BatchSize: 64})
	spitest.WantIDs(t, mustRetrieve(t, b.WithScoring(3, 0, 0), spi.KeywordRequest{Text: "compressor"}), "tb-title", "tb-text")
	spitest.WantIDs(t, mustRetrieve(t, b.WithScoring(0.2, 0, 0), spi.KeywordRequest{Text: "compressor"}), "tb-text", "tb-title")
}

// TestSyntaxCannotWidenTenant: tenant terms in query syntax do not reach
// another tenant's documents (the contract checks plain words).
func TestSyntaxCannotWidenTenant(t *testing.T) {
	b := mustOpen(t, keyword.Config{})
	docs := spitest.KeywordFiller(300)
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
			q := "tenant:t0 tenant:t1 tenant:t2 " + text
			refs := mustRetrieve(t, b, spi.KeywordRequest{Text: q, K: 500, Tenant: tn, Syntax: true})
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
		if want != "" && !slices.Contains(spitest.IDs(refs), want) {
			t.Errorf("Retrieve(%q) = %v, want %s among them", in, spitest.IDs(refs), want)
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
	spitest.WantIDs(t, refs, "tb-title")
	// Unqualified terms search the text field.
	refs = mustRetrieve(t, b, spi.KeywordRequest{Text: "compressor", Syntax: true})
	spitest.WantIDs(t, refs, "tb-text")
	// Phrases work (term vectors are indexed).
	refs = mustRetrieve(t, b, spi.KeywordRequest{Text: `"walk along the river"`, Syntax: true})
	spitest.WantIDs(t, refs, "walk")
	// Metadata fields are exact keywords in query syntax too.
	refs = mustRetrieve(t, b, spi.KeywordRequest{Text: "widget +metadata.lang:de", Syntax: true})
	spitest.WantIDs(t, refs, "w-de")
}

func TestRetrieveTermLimit(t *testing.T) {
	b := rankingBackend(t, keyword.Config{MaxTerms: 5})
	// Plain words are the contract's TermLimit case. A regexp matching every text term expands past the limit.
	if _, err := b.Retrieve(context.Background(), spi.KeywordRequest{Text: "/.*/", K: 10, Syntax: true}); !isInvalid(err) {
		t.Fatalf("wide regexp: err = %v, want ErrInvalidQuery", err)
	}
	refs := mustRetrieve(t, b, spi.KeywordRequest{Text: "/compress.*/", Syntax: true, Tenant: "t0"})
	spitest.WantIDs(t, refs, "tb-text")
}

// TestWriteContext: a cancelled Upsert or Delete writes nothing (the
// contract checks Retrieve, Hydrate and ApplyChanges).
func TestWriteContext(t *testing.T) {
	b := rankingBackend(t, keyword.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	changed := spi.Document{ID: "run", Tenant: "t0", Title: "gone", Text: "gone"}
	if err := b.Upsert(ctx, []spi.Document{changed}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Upsert err = %v", err)
	}
	if err := b.Delete(ctx, []string{"run"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Delete err = %v", err)
	}
	spitest.WantIDs(t, mustRetrieve(t, b, spi.KeywordRequest{Text: "running"}), "run")
	if refs := mustRetrieve(t, b, spi.KeywordRequest{Text: "gone"}); len(refs) != 0 {
		t.Fatalf("a cancelled Upsert was written: %v", refs)
	}
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
			docs := spitest.KeywordFiller(40)
			for i := range docs {
				docs[i].ID = strings.Replace(docs[i].ID, "f", "c"+string(rune('a'+g)), 1)
			}
			if err := b.Upsert(ctx, docs); err != nil {
				done <- err
				return
			}
			done <- b.Delete(ctx, spitest.IDs(refsOf(docs[:20])))
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
