package ingest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The appliers run on goroutines that Run owns; none may outlive it. bleve
// keeps a package-level analysis worker pool.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"))
}
