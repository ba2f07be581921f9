package api_test

import (
	"testing"

	"go.uber.org/goleak"
)

// bleve's process-wide analysis workers start at package init (the term
// limit test opens a real keyword index) and are expected.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"),
	)
}
