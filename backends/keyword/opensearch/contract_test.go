package opensearch_test

import (
	"testing"

	"github.com/ragd/ragd/backends/keyword/opensearch"
	"github.com/ragd/ragd/spi/spitest"
)

func TestKeywordContract(t *testing.T) {
	url := shared(t)
	spitest.RunKeyword(t, spitest.KeywordHarness{
		Open: func(t *testing.T, o spitest.KeywordOptions) spitest.KeywordStore {
			return open(t, url, opensearch.Config{TitleBoost: o.TitleBoost, MaxK: o.MaxK, MaxTerms: o.MaxTerms})
		},
	})
}

func TestChangeApplier(t *testing.T) {
	url := shared(t)
	spitest.TestChangeApplier(t, func(t *testing.T) spitest.AppliedStore {
		return open(t, url, opensearch.Config{})
	})
}

func TestDocCount(t *testing.T) {
	url := shared(t)
	spitest.TestDocCount(t, func(t *testing.T) spitest.AppliedStore {
		return open(t, url, opensearch.Config{})
	}, false)
}
