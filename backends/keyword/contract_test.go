package keyword_test

import (
	"testing"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/spi/spitest"
)

func TestKeywordContract(t *testing.T) {
	spitest.RunKeyword(t, spitest.KeywordHarness{
		Open: func(t *testing.T, o spitest.KeywordOptions) spitest.KeywordStore {
			return mustOpen(t, keyword.Config{TitleBoost: o.TitleBoost, MaxK: o.MaxK, MaxTerms: o.MaxTerms})
		},
	})
}

// The lean index (no title and text kept) answers the same contract, but
// does not hydrate.
func TestKeywordContractLean(t *testing.T) {
	spitest.RunKeyword(t, spitest.KeywordHarness{
		Open: func(t *testing.T, o spitest.KeywordOptions) spitest.KeywordStore {
			return mustOpen(t, keyword.Config{TitleBoost: o.TitleBoost, MaxK: o.MaxK, MaxTerms: o.MaxTerms, Lean: true})
		},
		NoBodies: true,
	})
}
