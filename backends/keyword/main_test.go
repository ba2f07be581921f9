package keyword_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every index a test opens must be closed again: scorch runs background
// goroutines per open index. bleve's process-wide analysis workers start
// at package init and are expected.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"),
	)
}
