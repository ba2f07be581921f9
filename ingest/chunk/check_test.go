package chunk_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/ragd/ragd/ingest/chunk"
)

// words counts one token per white-space-separated word: additive over
// white space, as Counter requires, and easy to reason about in tables.
type words struct{}

func (words) Count(text string, limit int) int { return len(strings.Fields(text)) }

// checkDoc checks what a Doc promises: sections cover the text in order
// without gaps, breaks increase and start lines inside it.
func checkDoc(t testing.TB, d chunk.Doc) {
	t.Helper()
	at := 0
	for i, s := range d.Sections {
		if s.Start != at || s.End <= s.Start {
			t.Fatalf("section %d is [%d,%d), want it to start at %d and be non-empty", i, s.Start, s.End, at)
		}
		for _, h := range s.Headings {
			if h == "" {
				t.Fatalf("section %d has an empty heading in %q", i, s.Headings)
			}
		}
		at = s.End
	}
	if at != len(d.Text) {
		t.Fatalf("sections end at %d, the text at %d", at, len(d.Text))
	}
	prev := 0
	for _, b := range d.Breaks {
		if b <= prev || b >= len(d.Text) {
			t.Fatalf("break %d after %d (text of %d bytes): breaks must increase inside the text", b, prev, len(d.Text))
		}
		if d.Text[b-1] != '\n' {
			t.Fatalf("break %d is not at a line start", b)
		}
		prev = b
	}
}

// checkChunks checks the invariants of Split's answer (the package doc):
// every byte but white space lies in a chunk, chunks are trimmed ranges of
// the text in order, overlap only within a section and within
// Options.Overlap, and every chunk fits MaxTokens.
func checkChunks(t testing.TB, d chunk.Doc, o chunk.Options, cs []chunk.Chunk) {
	t.Helper()
	covered := 0 // every byte before this is covered or white space
	section := func(off int) int {
		for i, s := range d.Sections {
			if off >= s.Start && off < s.End {
				return i
			}
		}
		t.Fatalf("offset %d is in no section", off)
		return -1
	}
	for i, c := range cs {
		if c.Ordinal != i {
			t.Fatalf("chunk %d has ordinal %d", i, c.Ordinal)
		}
		if c.Start < 0 || c.End > len(d.Text) || c.Start >= c.End || d.Text[c.Start:c.End] != c.Text {
			t.Fatalf("chunk %d: [%d,%d) is not its text %q", i, c.Start, c.End, c.Text)
		}
		if strings.TrimSpace(c.Text) != c.Text {
			t.Fatalf("chunk %d is not trimmed: %q", i, c.Text)
		}
		sec := section(c.Start)
		if c.End > d.Sections[sec].End {
			t.Fatalf("chunk %d [%d,%d) crosses the end of section %d at %d", i, c.Start, c.End, sec, d.Sections[sec].End)
		}
		if c.Page != d.Sections[sec].Page {
			t.Fatalf("chunk %d is on page %d, its section on %d", i, c.Page, d.Sections[sec].Page)
		}
		if !equal(c.Headings, d.Sections[sec].Headings) {
			t.Fatalf("chunk %d has headings %q, its section %q", i, c.Headings, d.Sections[sec].Headings)
		}
		if n := o.Counter.Count(c.Title, 0) + o.Counter.Count(c.Text, 0); n != c.Tokens || n > o.MaxTokens {
			t.Fatalf("chunk %d: %d tokens (says %d), at most %d allowed", i, n, c.Tokens, o.MaxTokens)
		}
		if i > 0 {
			p := cs[i-1]
			if c.Start <= p.Start {
				t.Fatalf("chunk %d starts at %d, not after chunk %d at %d", i, c.Start, i-1, p.Start)
			}
			if c.Start < p.End {
				if section(p.Start) != sec {
					t.Fatalf("chunk %d overlaps chunk %d of another section", i, i-1)
				}
				if n := o.Counter.Count(d.Text[c.Start:p.End], 0); n > o.Overlap {
					t.Fatalf("chunk %d repeats %d tokens of chunk %d, overlap is %d", i, n, i-1, o.Overlap)
				}
			}
		}
		if gap := d.Text[covered:max(covered, c.Start)]; strings.TrimSpace(gap) != "" {
			t.Fatalf("bytes %d to %d are in no chunk: %q", covered, c.Start, gap)
		}
		covered = max(covered, c.End)
	}
	if rest := d.Text[covered:]; strings.TrimFunc(rest, unicode.IsSpace) != "" {
		t.Fatalf("the text after byte %d is in no chunk: %.80q", covered, rest)
	}
	if !utf8.ValidString(d.Text) {
		return
	}
	for i, c := range cs {
		if !utf8.ValidString(c.Text) || !utf8.ValidString(c.Title) {
			t.Fatalf("chunk %d of a UTF-8 text is not UTF-8: %q %q", i, c.Title, c.Text)
		}
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
