package embedded_test

import (
	"context"
	"testing"

	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

func TestChangeApplier(t *testing.T) {
	spitest.TestChangeApplier(t, func(t *testing.T) spitest.AppliedStore {
		return open(t, t.TempDir(), 0)
	})
}

// TestApplyUpdatesTheReadModel: retrieval (served from memory) sees what
// ApplyChanges committed.
func TestApplyUpdatesTheReadModel(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	ctx := context.Background()
	d := spi.Document{ID: "a", Text: "t", Entities: []string{"boundary layer"}}
	match := func() []spi.Ref {
		refs, err := s.MatchEntities(ctx, spi.KeywordRequest{Text: "boundary layer", K: 5})
		if err != nil {
			t.Fatal(err)
		}
		return refs
	}
	if err := s.ApplyChanges(ctx, "log", []spi.Change{{Seq: 1, ID: "a", Doc: &d, Version: 1}}, 1); err != nil {
		t.Fatal(err)
	}
	if refs := match(); len(refs) != 1 || refs[0].ID != "a" {
		t.Fatalf("after apply, MatchEntities = %v, want a", refs)
	}
	if err := s.ApplyChanges(ctx, "log", []spi.Change{{Seq: 2, ID: "a", Version: 2}}, 2); err != nil {
		t.Fatal(err)
	}
	if refs := match(); len(refs) != 0 {
		t.Fatalf("after the tombstone, MatchEntities = %v, want nothing", refs)
	}
}

func TestDocCount(t *testing.T) {
	spitest.TestDocCount(t, func(t *testing.T) spitest.AppliedStore { return open(t, t.TempDir(), 0) }, false)
}
