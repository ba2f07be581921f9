package keyword_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

// A full index opened as lean, or a lean one as full, is another layout:
// ErrIncompatible, and OpenOrRebuild removes it and makes it anew from the
// record (nothing accepted is lost: the record holds it).
func TestLeanAndFullIndexesDoNotMix(t *testing.T) {
	for _, lean := range []bool{true, false} {
		dir := t.TempDir()
		b := mustOpen(t, keyword.Config{Dir: dir, Lean: !lean})
		if err := b.Upsert(context.Background(), corpus()); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		cfg := keyword.Config{Dir: dir, Lean: lean}
		if _, err := keyword.Open(cfg); !errors.Is(err, keyword.ErrIncompatible) {
			t.Fatalf("lean %v: Open of the other layout: err = %v, want ErrIncompatible", lean, err)
		}
		b, err := keyword.OpenOrRebuild(context.Background(), cfg, &sliceScanner{docs: corpus()})
		if err != nil {
			t.Fatal(err)
		}
		if live, aside := generations(t, dir); len(live) != 1 || len(aside) != 0 {
			t.Fatalf("lean %v: generations %v, aside %v: want the old one removed", lean, live, aside)
		}
		spitest.WantIDs(t, mustRetrieve(t, b, spi.KeywordRequest{Text: "run"}), "run")
		_, _, err = b.Hydrate(context.Background(), []string{"run"})
		if lean != errors.Is(err, spi.ErrUnsupported) {
			t.Fatalf("lean %v: Hydrate err = %v", lean, err)
		}
		_ = b.Close()
	}
}

// A lean index keeps no term positions: a Syntax phrase is refused, not
// answered with nothing; the rest of the syntax works.
func TestLeanRefusesPhrases(t *testing.T) {
	b := rankingBackend(t, keyword.Config{Lean: true})
	for _, q := range []string{`"walk along the river"`, `river +"walk along"`, `-"walk along" river`} {
		if _, err := b.Retrieve(context.Background(), spi.KeywordRequest{Text: q, K: 10, Syntax: true}); !errors.Is(err, spi.ErrInvalidQuery) {
			t.Errorf("Syntax %s: err = %v, want ErrInvalidQuery", q, err)
		}
	}
	spitest.WantIDs(t, mustRetrieve(t, b, spi.KeywordRequest{Text: "title:compressor", Syntax: true}), "tb-title")
}

type bodiesFn func(ctx context.Context, ids []string) ([]spi.Document, []string, error)

func (f bodiesFn) Hydrate(ctx context.Context, ids []string) ([]spi.Document, []string, error) {
	return f(ctx, ids)
}

// A lean index with Config.Bodies hydrates from it, as it stands.
func TestLeanHydratesFromBodies(t *testing.T) {
	var asked []string
	b := mustOpen(t, keyword.Config{Lean: true, Bodies: bodiesFn(func(_ context.Context, ids []string) ([]spi.Document, []string, error) {
		asked = ids
		return []spi.Document{{ID: "a", Text: "from the record"}}, []string{"b"}, nil
	})})
	docs, missing, err := b.Hydrate(context.Background(), []string{"a", "b"})
	if err != nil || len(docs) != 1 || docs[0].Text != "from the record" || len(missing) != 1 || len(asked) != 2 {
		t.Fatalf("Hydrate = %v, %v, %v (asked %v)", docs, missing, err, asked)
	}
}
