package ingest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The pipeline writes derived stores from goroutines; none may outlive a call.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
