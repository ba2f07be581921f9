package analysis_test

import (
	"strings"
	"testing"

	"github.com/ragd/ragd/internal/analysis"
)

func TestTextHelpers(t *testing.T) {
	got := strings.Join(analysis.Tokens("The X-15's Boundary-Layer, at Mach 2.5; Straße!"), "|")
	if want := "the|15|boundary|layer|at|mach|straße"; got != want {
		t.Errorf("Tokens = %q, want %q", got, want)
	}
	for in, want := range map[string]string{
		"layers": "layer", "bodies": "body", "surfaces": "surface", "gas": "gas",
		"class": "class", "analysis": "analysis", "radius": "radius", "shoes": "shoe",
		"flow": "flow",
	} {
		if got := analysis.Stem(in); got != want {
			t.Errorf("Stem(%q) = %q, want %q", in, got, want)
		}
	}
	if !analysis.IsStopWord("the") || analysis.IsStopWord("wing") {
		t.Error("IsStopWord is wrong for 'the' or 'wing'")
	}
}

func TestByteFormsAgree(t *testing.T) {
	buf, spans := analysis.Tokenize("Boundary layers, the bodies", nil, nil)
	var got []string
	for _, s := range spans {
		w := buf[s.Start:s.End]
		if analysis.IsStopBytes(w) != analysis.IsStopWord(string(w)) {
			t.Errorf("IsStopBytes(%q) disagrees with IsStopWord", w)
		}
		base, suffix := analysis.StemBytes(w)
		got = append(got, string(base)+suffix)
		if string(base)+suffix != analysis.Stem(string(w)) {
			t.Errorf("StemBytes(%q) disagrees with Stem", w)
		}
	}
	if strings.Join(got, " ") != "boundary layer the body" {
		t.Fatalf("stems = %q", got)
	}
}
