package api_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// TestQueryTermLimitMatchesTheKeywordBackend checks that the word limit
// Query.Validate applies up front is the keyword backend's, and that a text
// within it is never rejected by a real keyword index, whichever analyzer
// it uses: otherwise the API would again answer such a query without its
// keyword source.
func TestQueryTermLimitMatchesTheKeywordBackend(t *testing.T) {
	if retriever.MaxQueryTerms != keyword.DefaultMaxTerms {
		t.Fatalf("retriever.MaxQueryTerms %d, keyword.DefaultMaxTerms %d", retriever.MaxQueryTerms, keyword.DefaultMaxTerms)
	}
	n := retriever.MaxQueryTerms
	// Units that tokenizers split differently; each is repeated around the
	// limit.
	units := []string{"wing ", "a1", "翼", "ひ", "カ", "xe\u0301y ", "don't ", "a_b ", "3.14 "}
	for _, analyzer := range []string{"en", "standard", "simple"} {
		b, err := keyword.Open(keyword.Config{Dir: t.TempDir(), Analyzer: analyzer})
		if err != nil {
			t.Fatalf("open %s: %v", analyzer, err)
		}
		t.Cleanup(func() { b.Close() })
		for _, unit := range units {
			for _, reps := range []int{n/2 - 1, n / 2, n/2 + 1, n - 1, n, n + 1} {
				text := strings.Repeat(unit, reps)
				verr := (retriever.Query{Text: text}).Validate(retriever.DefaultLimits())
				_, kerr := b.Retrieve(context.Background(), spi.KeywordRequest{Text: text, K: 10})
				if errors.Is(kerr, spi.ErrInvalidQuery) && verr == nil {
					t.Errorf("analyzer %s, %d × %q: Validate accepts what the keyword index rejects: %v", analyzer, reps, unit, kerr)
				}
			}
		}
		// The limit is not stricter than it needs to be for plain words.
		at := strings.Repeat("wing ", n)
		if err := (retriever.Query{Text: at}).Validate(retriever.DefaultLimits()); err != nil {
			t.Errorf("Validate rejects %d words: %v", n, err)
		}
		if _, err := b.Retrieve(context.Background(), spi.KeywordRequest{Text: at + "wing", K: 10}); !errors.Is(err, spi.ErrInvalidQuery) {
			t.Errorf("analyzer %s: the keyword index accepts %d words: %v", analyzer, n+1, err)
		}
	}
}
