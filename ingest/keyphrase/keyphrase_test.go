package keyphrase_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ragd/ragd/ingest/keyphrase"
	"github.com/ragd/ragd/spi"
)

func TestKeyphrases(t *testing.T) {
	k, err := keyphrase.New(keyphrase.Config{})
	if err != nil {
		t.Fatal(err)
	}
	title := "The boundary layer in simple shear flow past a flat plate."
	text := "The boundary-layer equations are solved for a flat plate in a simple shear flow. " +
		"Results show that the heat transfer rate depends on the Mach number; heat transfer grows with it."
	got := k.Phrases(title, text)
	// Title pairs score 2 (+1 per text occurrence): "boundary layer" 3,
	// "simple shear" 3, "shear flow" 3, "flat plate" 3; "heat transfer" 2.
	want := []string{"boundary layer", "simple shear", "shear flow", "flat plate", "heat transfer"}
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("Phrases = %q, want it to start with %q", got, want)
	}
	for _, p := range got {
		for _, bad := range []string{"the", "results", "show", "number"} {
			if slices.Contains(strings.Fields(p), bad) {
				t.Errorf("phrase %q contains the stop/generic word %q", p, bad)
			}
		}
	}
	// "layer equations" is folded to singular and comes from the hyphenated form.
	if !slices.Contains(got, "layer equation") {
		t.Errorf("Phrases = %q, want the folded pair %q", got, "layer equation")
	}
	// Deterministic.
	for range 5 {
		if again := k.Phrases(title, text); !slices.Equal(again, got) {
			t.Fatalf("not deterministic: %q vs %q", again, got)
		}
	}
}

func TestKeyphraseLimits(t *testing.T) {
	k, err := keyphrase.New(keyphrase.Config{MaxPhrases: 2, MaxUnigrams: -1, LeadWords: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Only the first 4 words of text count: "wind tunnel" twice, "tunnel wall" once;
	// "jet engine" lies beyond the lead.
	got := k.Phrases("", "wind tunnel wind tunnel wall. jet engine jet engine jet engine")
	if fmt.Sprint(got) != "[wind tunnel tunnel wind]" {
		t.Fatalf("Phrases = %q", got)
	}
	k2, _ := keyphrase.New(keyphrase.Config{MaxPhrases: 1, MaxUnigrams: 1})
	got = k2.Phrases("Supersonic nozzles", "nozzle flow. supersonic, supersonic.")
	// One phrase, then the best unigram not inside it: "supersonic" is inside,
	// "nozzle" is inside, "flow" scores 1 (< 2).
	if fmt.Sprint(got) != "[supersonic nozzle]" {
		t.Fatalf("Phrases = %q", got)
	}
	ents, err := k2.Extract(context.Background(), spi.Document{Title: "Supersonic nozzles", Text: "nozzle flow. supersonic, supersonic."})
	if err != nil || !slices.Equal(ents, got) {
		t.Fatalf("Extract = %q, %v", ents, err)
	}
	if _, err := keyphrase.New(keyphrase.Config{MaxPhrases: -1}); err == nil {
		t.Fatal("negative MaxPhrases accepted")
	}
	if got := k.Phrases("", ""); len(got) != 0 {
		t.Fatalf("empty input gave %q", got)
	}
}

// The lazy clause cutting yields strings.FieldsFunc's clauses, on texts
// of clause breaks (ASCII and typographic quotes), invalid UTF-8 and
// letters.
func TestNextClauseCutsLikeFieldsFunc(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	parts := []string{"a", "wing", " ", ".", ",", "«", "»", "“", "”", "‘", "\n", "é", "\xff", "(", "x y", ";;", "—"}
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		s := b.String()
		var got []string
		for rest := s; rest != ""; {
			var c string
			if c, rest = keyphrase.NextClause(rest); c != "" {
				got = append(got, c)
			}
		}
		if want := strings.FieldsFunc(s, keyphrase.IsClauseBreak); !slices.Equal(got, want) {
			t.Fatalf("%q: clauses %q, want %q", s, got, want)
		}
	}
}
