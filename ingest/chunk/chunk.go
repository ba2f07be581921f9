// Package chunk splits documents (Markdown, plain text, HTML) into chunks
// small enough for an embedding model: on headings first, then on
// paragraphs, lines, sentences, words and, for a word longer than a whole
// chunk, runes, packing the pieces greedily up to a token budget and
// repeating the tail of each chunk at the start of the next (overlap).
//
// A Doc is the text of one file cut into Sections (a heading and its body)
// with the offsets where a paragraph-level break is allowed; Markdown,
// Plain and HTML build one. Split turns it into Chunks, each a trimmed byte
// range Text == Doc.Text[Start:End] carrying its heading path. What holds
// for every Doc (FuzzSplit checks it):
//
//   - every byte of Doc.Text that is not white space lies in some chunk;
//   - chunks come in order: Start strictly increases, and a chunk may
//     begin before the previous one ends only by the overlap, inside the
//     same section;
//   - Count(Title) + Count(Text) <= Options.MaxTokens for every chunk.
//
// A Doc of pages (Pages, for a PDF) has a section per page, so that every
// chunk lies on one page.
//
// Tokens are counted by a Counter: the embedding model's own WordPiece
// tokenizer (WordPiece) when it is at hand, else Approx, a conservative
// estimate from the characters.
package chunk

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Doc is a text cut into sections.
type Doc struct {
	// Text is the document's text (for HTML, the text extracted from it).
	Text string
	// Sections cover Text from 0 to len(Text), in order, without gaps:
	// Sections[0].Start == 0, Sections[i].End == Sections[i+1].Start and
	// the last ends at len(Text). A text without headings is one section
	// with no headings.
	Sections []Section
	// Breaks are the offsets where a new paragraph-level block starts, in
	// increasing order, each a line start inside Text. Split prefers them
	// to any finer cut.
	Breaks []int
	// Name is the title of a chunk whose section has no heading (the
	// file's name, an HTML <title>, a PDF's title).
	Name string
}

// Section is a heading and its body, up to the next heading.
type Section struct {
	// Headings is the heading path: the enclosing headings from the
	// outermost down to this section's own; empty before the first
	// heading.
	Headings   []string
	Start, End int
	// Page is the page the section is, from 1, in a Doc of pages (Pages);
	// 0 otherwise.
	Page int
}

// Chunk is one piece of a Doc.
type Chunk struct {
	// Ordinal is the chunk's position in the document, from 0.
	Ordinal int
	// Title is the heading path joined by TitleSeparator (the Doc's Name
	// when the section has no heading), shortened to a quarter of the
	// budget (outer headings dropped first).
	Title string
	// Headings is the section's heading path, whole.
	Headings []string
	// Text is Doc.Text[Start:End], without white space at either end.
	Text       string
	Start, End int
	// Page is the section's Page: the page the chunk lies on in a Doc of
	// pages, 0 otherwise.
	Page int
	// Tokens is Count(Title) + Count(Text).
	Tokens int
}

// TitleSeparator joins the headings of a chunk's title.
const TitleSeparator = " > "

// Counter counts the tokens of a text as an embedding model would.
type Counter interface {
	// Count returns the number of tokens of text, special tokens such as
	// [CLS] and [SEP] not included; when limit > 0 and text has more
	// than limit tokens it may stop early and return any number above
	// limit. Counts must be additive over white space: for texts a and b
	// and white space w, Count(a+w+b) == Count(a) + Count(b).
	Count(text string, limit int) int
}

// Options tune Split.
type Options struct {
	// MaxTokens bounds Count(Title) + Count(Text) of every chunk; at
	// least MinMaxTokens.
	MaxTokens int
	// Overlap is how many tokens at the end of a chunk are repeated at
	// the start of the next one in the same section (whole words); less
	// than MaxTokens/2. 0 turns it off.
	Overlap int
	Counter Counter
}

// MinMaxTokens is the smallest Options.MaxTokens: a quarter of it is kept
// for the title, and the rest must hold at least a few words.
const MinMaxTokens = 16

// ErrOptions is wrapped by Options.Validate's errors.
var ErrOptions = errors.New("chunk: invalid options")

// Validate checks the options.
func (o Options) Validate() error {
	switch {
	case o.Counter == nil:
		return fmt.Errorf("%w: no counter", ErrOptions)
	case o.MaxTokens < MinMaxTokens:
		return fmt.Errorf("%w: max tokens %d, want at least %d", ErrOptions, o.MaxTokens, MinMaxTokens)
	case o.Overlap < 0 || o.Overlap >= o.MaxTokens/2:
		return fmt.Errorf("%w: overlap %d, want 0 to %d (less than half of max tokens %d)", ErrOptions, o.Overlap, o.MaxTokens/2-1, o.MaxTokens)
	}
	return nil
}

// Split cuts d into chunks. The options must be valid (Validate); Split
// panics otherwise, as a caller's bug.
func Split(d Doc, o Options) []Chunk {
	if err := o.Validate(); err != nil {
		panic(err)
	}
	s := splitter{d: d, o: o}
	for _, sec := range d.Sections {
		s.section(sec)
	}
	return s.out
}

type splitter struct {
	d   Doc
	o   Options
	out []Chunk
}

// unit is a piece of text that is never cut further: [start, end) with its
// token count.
type unit struct {
	start, end, tokens int
}

func (s *splitter) count(text string, limit int) int { return s.o.Counter.Count(text, limit) }

// section packs one section's units into chunks.
func (s *splitter) section(sec Section) {
	title := s.title(sec.Headings)
	budget := s.o.MaxTokens - s.count(title, 0)
	units := s.units(sec, budget)
	// ov is where the next chunk starts when it takes an overlap from the
	// previous one, and ovTokens its tokens; -1 means no overlap.
	ov, ovTokens := -1, 0
	for i := 0; i < len(units); {
		start, total := units[i].start, 0
		if ov >= 0 {
			// Shorten the overlap so that the next unit fits with it.
			ov, ovTokens = s.overlap(s.out[len(s.out)-1], min(s.o.Overlap, budget-units[i].tokens))
			if ov >= 0 {
				start, total = ov, ovTokens
			}
		}
		j := i
		for j < len(units) && total+units[j].tokens <= budget {
			total += units[j].tokens
			j++
		}
		if j == i { // cannot happen: units[i] fits alone, and the overlap was shortened for it
			j, start = i+1, units[i].start
		}
		// Counts are additive over white space, and units end on white
		// space except where a word was cut into runes: check the real
		// count, and give back units until it fits.
		for {
			text := s.d.Text[start:units[j-1].end]
			if n := s.count(text, budget); n <= budget || j == i+1 && start == units[i].start {
				break
			}
			if j > i+1 {
				j--
			} else {
				start = units[i].start // drop the overlap
			}
		}
		if c, ok := s.chunk(title, sec, start, units[j-1].end); ok {
			s.out = append(s.out, c)
			ov = 0 // take an overlap before the next unit
		}
		i = j
	}
}

// chunk makes the chunk of Text[start:end], trimmed; false when it is all
// white space.
func (s *splitter) chunk(title string, sec Section, start, end int) (Chunk, bool) {
	text := s.d.Text[start:end]
	lead := len(text) - len(strings.TrimLeftFunc(text, unicode.IsSpace))
	text = strings.TrimSpace(text)
	if text == "" {
		return Chunk{}, false
	}
	start += lead
	return Chunk{
		Ordinal:  len(s.out),
		Title:    title,
		Headings: sec.Headings,
		Text:     text,
		Start:    start,
		End:      start + len(text),
		Page:     sec.Page,
		Tokens:   s.count(title, 0) + s.count(text, 0),
	}, true
}

// overlap finds where the next chunk starts to repeat the last words of c,
// at most limit tokens of them, and their tokens; -1 when no word fits.
// The start lies after c.Start, so chunks always move forward.
func (s *splitter) overlap(c Chunk, limit int) (int, int) {
	if limit <= 0 {
		return -1, 0
	}
	text, at, total := c.Text, -1, 0
	for end := len(text); end > 0; {
		// The word before end.
		e := len(strings.TrimRightFunc(text[:end], unicode.IsSpace))
		b := strings.LastIndexFunc(text[:e], unicode.IsSpace)
		b++ // the word starts after the space (or at 0)
		if b == 0 {
			break // the chunk's first word: keep some progress
		}
		n := s.count(text[b:e], limit)
		if total+n > limit {
			break
		}
		total += n
		at = b
		end = b
	}
	if at < 0 {
		return -1, 0
	}
	return c.Start + at, total
}

// title is the chunk title of a section: its heading path (or the Doc's
// Name), shortened to a quarter of MaxTokens.
func (s *splitter) title(headings []string) string {
	limit := s.o.MaxTokens / 4
	hs := headings
	if len(hs) == 0 {
		hs = []string{s.d.Name}
	}
	for len(hs) > 1 && s.count(strings.Join(hs, TitleSeparator), limit) > limit {
		hs = hs[1:]
	}
	t := strings.Join(hs, TitleSeparator)
	if s.count(t, limit) <= limit {
		return t
	}
	return strings.TrimSpace(t[:s.prefixFitting(t, limit)])
}

// prefixFitting returns the length of the longest prefix of t, cut at a
// rune, whose count is at most limit, by bisection (counts of prefixes
// need not grow with their length, so this finds a fitting prefix, not
// always the longest). At least one rune is kept when it fits.
func (s *splitter) prefixFitting(t string, limit int) int {
	lo, hi := 0, len(t) // lo fits (the empty prefix counts 0), hi may not
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		for mid > lo && !utf8.RuneStart(t[mid]) {
			mid--
		}
		if mid == lo {
			// No rune start between lo and hi but lo: hi is lo's rune end.
			break
		}
		if s.count(t[:mid], limit) <= limit {
			lo = mid
		} else {
			hi = mid
		}
	}
	if hi == len(t) || utf8.RuneStart(t[hi]) {
		if s.count(t[:hi], limit) <= limit {
			return hi
		}
	}
	return lo
}
