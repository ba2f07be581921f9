package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// An embedded deployment of a release before the lean keyword index has
// a full one (title and text stored): the first start of this release
// refuses it as another layout, removes it and builds the lean index from
// the record, losing nothing; pages hydrate from the record.
func TestFullKeywordIndexIsRebuiltLean(t *testing.T) {
	cfg := embeddedConfig(t)
	a := newApp(t, cfg)
	if _, err := a.LoadDemo(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.Close()
	dir := filepath.Join(cfg.DataDir, "keyword")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	old, err := keyword.Open(keyword.Config{Dir: dir}) // full, as before
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Upsert(context.Background(), []spi.Document{{ID: "circuit-breaker", Title: "stale", Text: "only the old index holds this text"}}); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	a = newApp(t, cfg)
	defer a.Close()
	ctx := context.Background()
	q := retriever.Query{Text: "circuit breaker half-open", Limit: 5, Sources: retriever.Only(spi.SourceKeyword)}
	eventually(t, "the lean keyword index to hold the record's documents", func() bool {
		res, err := a.Retriever.Retrieve(ctx, q)
		return err == nil && len(res.Hits) > 0 && res.Hits[0].ID == "circuit-breaker"
	})
	res, err := a.Retriever.Retrieve(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if res.Hydration[spi.SourceVector].Status != retriever.StatusOK || len(res.Missing) != 0 {
		t.Errorf("hydration %+v, missing %v: want the record", res.Hydration, res.Missing)
	}
	if d := res.Hits[0].Document; d == nil || strings.Contains(d.Text, "only the old index") || d.Text == "" {
		t.Errorf("hydrated %+v, want the record's document", d)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "corrupt-") {
			t.Errorf("the full index was kept aside (%s): it is not damaged, and would hold its disk", e.Name())
		}
	}
	rep, err := a.Pipeline.Check(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Stores {
		if s.Store == spi.SourceKeyword && (s.Missing+s.Stale+s.Extra != 0 || s.Documents == 0 || s.Documents != s.RecordDocuments) {
			t.Errorf("keyword after the rebuild: %+v", s)
		}
	}
}

// The lean keyword index keeps no text, but it still hydrates a page when
// the vector source's circuit is open (the record skipped as a hydrator):
// from the record, which its circuit does not guard.
func TestLeanKeywordIndexHydratesWhileTheVectorCircuitIsOpen(t *testing.T) {
	a := newApp(t, embeddedConfig(t))
	defer a.Close()
	ctx := context.Background()
	if _, err := a.LoadDemo(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Breakers.Hold(spi.SourceVector, breaker.Manual{By: "test", Note: "vector down"}); err != nil {
		t.Fatal(err)
	}
	q := retriever.Query{Text: "circuit breaker half-open", Limit: 5, Sources: retriever.Only(spi.SourceKeyword)}
	eventually(t, "the keyword index to hold the demo", func() bool {
		res, err := a.Retriever.Retrieve(ctx, q)
		return err == nil && len(res.Hits) > 0
	})
	res, err := a.Retriever.Retrieve(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if st := res.Hydration[spi.SourceVector].Status; st != retriever.StatusCircuitOpen {
		t.Errorf("record hydration %v with the vector circuit held open, want circuit_open", st)
	}
	if kw := res.Hydration[spi.SourceKeyword]; kw.Status != retriever.StatusOK || kw.Returned != len(res.Hits) || len(res.Missing) != 0 {
		t.Errorf("keyword hydration %+v, missing %v: want the whole page", kw, res.Missing)
	}
	for _, h := range res.Hits {
		if h.Document == nil || h.Document.Text == "" {
			t.Errorf("hit %s hydrated %+v, want its text", h.ID, h.Document)
		}
	}
}
