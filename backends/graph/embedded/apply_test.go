package embedded_test

import (
	"testing"

	"github.com/ragd/ragd/spi/spitest"
)

func TestChangeApplier(t *testing.T) {
	spitest.TestChangeApplier(t, func(t *testing.T) spitest.AppliedStore {
		return open(t, t.TempDir(), 0)
	})
}
