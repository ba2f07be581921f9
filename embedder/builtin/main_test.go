package builtin_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The encoder fans out to goroutines per matrix multiply and per attention
// layer; none may outlive a call.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
