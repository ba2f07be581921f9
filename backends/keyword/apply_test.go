package keyword_test

import (
	"testing"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/spi/spitest"
)

func TestChangeApplier(t *testing.T) {
	spitest.TestChangeApplier(t, func(t *testing.T) spitest.AppliedStore {
		return mustOpen(t, keyword.Config{Dir: t.TempDir()})
	})
}

func TestDocCount(t *testing.T) {
	spitest.TestDocCount(t, func(t *testing.T) spitest.AppliedStore {
		return mustOpen(t, keyword.Config{Dir: t.TempDir()})
	}, false)
}
