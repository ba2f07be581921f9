package keyword_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/internal/idtable"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

func TestHydrate(t *testing.T) {
	b := mustOpen(t, keyword.Config{BatchSize: 50})
	when := time.Date(2026, 3, 1, 12, 30, 0, 123, time.FixedZone("x", 3600))
	full := spi.Document{
		ID: "full", Tenant: "acme", Title: "Full Title", Text: "Body text, with punctuation!",
		Metadata: spi.Strings(map[string]string{"lang": "en", "year": "2024-01-01", "a.b": "dotted key", "empty": ""}),
		Vector:   []float32{1, 2}, Entities: []string{"e"}, Links: []string{"l"},
		UpdatedAt: when,
	}
	mustUpsert(t, b, append(spitest.KeywordFiller(200), full)...)

	docs, missing, err := b.Hydrate(context.Background(), []string{"nope-1", "full", "f0007", "full", "nope-2", "f0003"})
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{docs[0].ID, docs[1].ID, docs[2].ID}; len(docs) != 3 || !slices.Equal(got, []string{"full", "f0007", "f0003"}) {
		t.Fatalf("hydrated %v, want full, f0007, f0003 in request order, once each", docs)
	}
	if !slices.Equal(missing, []string{"nope-1", "nope-2"}) {
		t.Fatalf("missing = %v", missing)
	}
	want := full
	want.Vector, want.Entities, want.Links = nil, nil, nil // not kept by the keyword index
	want.UpdatedAt = when.UTC()
	if !reflect.DeepEqual(docs[0], want) {
		t.Fatalf("hydrated\n%#v\nwant\n%#v", docs[0], want)
	}
	if f := spitest.KeywordFiller(8)[7]; docs[1].Title != f.Title || docs[1].Text != f.Text || docs[1].Tenant != f.Tenant || !docs[1].Metadata["kind"].Equal(f.Metadata["kind"]) {
		t.Fatalf("hydrated %+v, want %+v", docs[1], f)
	}
	// The empty metadata value is a filterable value like any other.
	refs := mustRetrieve(t, b, spi.KeywordRequest{Text: "punctuation", Filter: spi.StringFilter(map[string][]string{"empty": {""}, "a.b": {"dotted key"}})})
	spitest.WantIDs(t, refs, "full")

	docs, missing, err = b.Hydrate(context.Background(), nil)
	if err != nil || len(docs) != 0 || len(missing) != 0 {
		t.Fatalf("Hydrate(nil) = %v, %v, %v", docs, missing, err)
	}
}

func TestUpsertReplaces(t *testing.T) {
	b := mustOpen(t, keyword.Config{})
	mustUpsert(t, b, spitest.KeywordFiller(100)...)
	mustUpsert(t, b, spi.Document{ID: "doc", Tenant: "t0", Title: "old", Text: "turbine blade vibration"})
	spitest.WantIDs(t, mustRetrieve(t, b, spi.KeywordRequest{Text: "turbine"}), "doc")

	mustUpsert(t, b, spi.Document{ID: "doc", Tenant: "t1", Title: "new", Text: "nozzle flow separation",
		Metadata: spi.Strings(map[string]string{"v": "2"})})
	if refs := mustRetrieve(t, b, spi.KeywordRequest{Text: "turbine vibration old"}); len(refs) != 0 {
		t.Fatalf("old version still matches: %v", refs)
	}
	spitest.WantIDs(t, mustRetrieve(t, b, spi.KeywordRequest{Text: "nozzle", Tenant: "t1", Filter: spi.StringFilter(map[string][]string{"v": {"2"}})}), "doc")
	if refs := mustRetrieve(t, b, spi.KeywordRequest{Text: "nozzle", Tenant: "t0"}); len(refs) != 0 {
		t.Fatalf("old tenant still sees the document: %v", refs)
	}
	if n, _ := b.DocCount(context.Background()); n != 101 {
		t.Fatalf("DocCount = %d, want 101", n)
	}
	// Two versions in one call: the last one wins.
	mustUpsert(t, b,
		spi.Document{ID: "dup", Text: "first version"},
		spi.Document{ID: "dup", Text: "second version"})
	docs, _, _ := b.Hydrate(context.Background(), []string{"dup"})
	if len(docs) != 1 || docs[0].Text != "second version" {
		t.Fatalf("dup = %+v", docs)
	}
}

func TestUpsertInvalid(t *testing.T) {
	b := mustOpen(t, keyword.Config{})
	for _, docs := range [][]spi.Document{
		{{ID: "ok", Text: "fine"}, {ID: "", Text: "no id"}},
		{{ID: "ok", Text: "fine"}, {ID: "k", Metadata: spi.Strings(map[string]string{"": "v"})}},
		{{ID: "ok", Text: "fine"}, {ID: strings.Repeat("x", idtable.MaxLen+1), Text: "an id the id table cannot hold"}},
	} {
		if err := b.Upsert(context.Background(), docs); !isInvalid(err) {
			t.Fatalf("Upsert(%.200v) err = %v, want ErrInvalidQuery", docs, err)
		}
	}
	// Nothing of a rejected call is written.
	if n, _ := b.DocCount(context.Background()); n != 0 {
		t.Fatalf("DocCount = %d after rejected upserts", n)
	}
	if err := b.Upsert(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

func TestDelete(t *testing.T) {
	b := mustOpen(t, keyword.Config{BatchSize: 7})
	docs := spitest.KeywordFiller(120)
	mustUpsert(t, b, docs...)
	var del []string
	for i := 0; i < 120; i += 3 {
		del = append(del, docs[i].ID)
	}
	if err := b.Delete(context.Background(), append(del, "unknown", del[0])); err != nil {
		t.Fatal(err)
	}
	if n, _ := b.DocCount(context.Background()); n != 80 {
		t.Fatalf("DocCount = %d, want 80", n)
	}
	_, missing, _ := b.Hydrate(context.Background(), del)
	if !slices.Equal(missing, del) {
		t.Fatalf("deleted documents still hydrate: missing %d of %d", len(missing), len(del))
	}
	for _, r := range mustRetrieve(t, b, spi.KeywordRequest{Text: "alpha beta gamma omega", K: 200}) {
		if slices.Contains(del, r.ID) {
			t.Fatalf("deleted %s retrieved", r.ID)
		}
	}
	if err := b.Delete(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

// The collection statistics follow upserts, replacements and deletes
// exactly: an index that reached a set of documents through any history
// scores like a fresh index of just those documents, whatever its segment
// layout.
func TestScoresIndependentOfHistory(t *testing.T) {
	// Words unique to each document grow the term dictionaries, which is
	// what bleve's own average-length estimate is sensitive to.
	docs := spitest.KeywordFiller(150)
	for i := range docs {
		docs[i].Text += fmt.Sprintf(" u%da u%db u%dc", i, i, i)
	}
	fresh := mustOpen(t, keyword.Config{})
	mustUpsert(t, fresh, docs...)

	worked := mustOpen(t, keyword.Config{BatchSize: 9})
	junk := spitest.KeywordFiller(60)
	for i := range junk {
		junk[i].ID = fmt.Sprintf("junk%d", i)
		junk[i].Text += fmt.Sprintf(" extra words j%da j%db j%dc j%dd", i, i, i, i)
	}
	mustUpsert(t, worked, junk...)
	mustUpsert(t, worked, docs[:100]...)
	changed := slices.Clone(docs[100:])
	for i := range changed {
		changed[i].Text = fmt.Sprintf("temporary text v%d", i)
	}
	mustUpsert(t, worked, changed...)
	mustUpsert(t, worked, docs[100:]...)
	if err := worked.Delete(context.Background(), spitest.IDs(refsOf(junk))); err != nil {
		t.Fatal(err)
	}

	for _, q := range []string{"alpha", "omega psi", "gamma delta epsilon zeta", "theta kappa"} {
		a := mustRetrieve(t, fresh, spi.KeywordRequest{Text: q, K: 50})
		w := mustRetrieve(t, worked, spi.KeywordRequest{Text: q, K: 50})
		if len(a) == 0 || len(a) != len(w) {
			t.Fatalf("%q: %d vs %d refs", q, len(a), len(w))
		}
		for i := range a {
			if a[i].ID != w[i].ID || math.Abs(a[i].Score-w[i].Score) > 1e-9 {
				t.Fatalf("%q rank %d: fresh %v, worked %v", q, i, a[i], w[i])
			}
		}
	}
}

func TestClosed(t *testing.T) {
	b, err := keyword.Open(keyword.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if h := b.Health(context.Background()); h.Status != spi.StatusUp || h.Detail != "0 documents" {
		t.Fatalf("Health = %+v", h)
	}
	mustUpsert(t, b, spitest.KeywordFiller(3)...)
	if h := b.Health(context.Background()); h.Status != spi.StatusUp || h.Detail != "3 documents" {
		t.Fatalf("Health = %+v", h)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if h := b.Health(context.Background()); h.Status != spi.StatusDown {
		t.Fatalf("Health after Close = %+v", h)
	}
	ctx := context.Background()
	_, rerr := b.Retrieve(ctx, spi.KeywordRequest{Text: "alpha", K: 1})
	_, _, herr := b.Hydrate(ctx, []string{"f0000"})
	for _, err := range []error{rerr, herr, b.Upsert(ctx, spitest.KeywordFiller(1)), b.Delete(ctx, []string{"x"})} {
		if !errors.Is(err, spi.ErrUnavailable) || !errors.Is(err, keyword.ErrClosed) {
			t.Fatalf("after Close err = %v, want ErrUnavailable and ErrClosed", err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  keyword.Config
		ok   bool
	}{
		{"minimal", keyword.Config{Dir: "x"}, true},
		{"builtin analyzer", keyword.Config{Dir: "x", Analyzer: "en_snowball"}, true},
		{"registry analyzer", keyword.Config{Dir: "x", Analyzer: "standard"}, true},
		{"no dir", keyword.Config{}, false},
		{"negative boost", keyword.Config{Dir: "x", TitleBoost: -1}, false},
		{"unknown analyzer", keyword.Config{Dir: "x", Analyzer: "klingon"}, false},
		{"negative batch", keyword.Config{Dir: "x", BatchSize: -1}, false},
		{"negative max k", keyword.Config{Dir: "x", MaxK: -1}, false},
		{"negative max terms", keyword.Config{Dir: "x", MaxTerms: -1}, false},
		{"negative lock timeout", keyword.Config{Dir: "x", LockTimeout: -time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
	if _, err := keyword.Open(keyword.Config{}); err == nil {
		t.Fatal("Open accepted an invalid config")
	}
}
