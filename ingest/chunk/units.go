package chunk

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Cut levels, coarsest first: a block too large for a chunk is cut at its
// lines, a line at its sentences, a sentence at its words, a word at its
// runes.
const (
	levelLine = iota
	levelSentence
	levelWord
	levelRune
)

// units cuts a section into units of at most budget tokens each: the
// blocks between the Doc's breaks, and each block too large cut at the
// next finer level until its pieces fit. Units are in order and cover the
// section but for pieces that are only white space.
func (s *splitter) units(sec Section, budget int) []unit {
	var out []unit
	i := sort.SearchInts(s.d.Breaks, sec.Start+1)
	prev := sec.Start
	for ; i < len(s.d.Breaks) && s.d.Breaks[i] < sec.End; i++ {
		s.refine(prev, s.d.Breaks[i], budget, levelLine, &out)
		prev = s.d.Breaks[i]
	}
	s.refine(prev, sec.End, budget, levelLine, &out)
	return out
}

// refine appends Text[start:end] as one unit when it fits budget, else its
// pieces at level, each refined at the next level.
func (s *splitter) refine(start, end, budget, level int, out *[]unit) {
	text := s.d.Text[start:end]
	if strings.TrimSpace(text) == "" {
		return
	}
	if n := s.count(text, budget); n <= budget {
		*out = append(*out, unit{start, end, n})
		return
	}
	if level == levelRune {
		for start < end {
			n := s.prefixFitting(s.d.Text[start:end], budget)
			if n == 0 { // one rune over the budget: a Counter with huge runes
				_, n = utf8.DecodeRuneInString(s.d.Text[start:end])
			}
			*out = append(*out, unit{start, start + n, s.count(s.d.Text[start:start+n], 0)})
			start += n
		}
		return
	}
	prev := start
	for _, c := range cuts(text, level) {
		s.refine(prev, start+c, budget, level+1, out)
		prev = start + c
	}
	s.refine(prev, end, budget, level+1, out)
}

// cuts returns the offsets inside text (after 0, before len(text)) where
// a piece of the given level starts: after a newline (lines), after the
// white space that follows a sentence's end (sentences), after any white
// space (words).
func cuts(text string, level int) []int {
	var out []int
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		next := i + size
		switch level {
		case levelLine:
			if r == '\n' && next < len(text) {
				out = append(out, next)
			}
		case levelSentence, levelWord:
			if !unicode.IsSpace(r) {
				break
			}
			if level == levelSentence && !sentenceEnd(text[:i]) {
				break
			}
			// The piece starts after the whole run of white space.
			for next < len(text) {
				r2, size2 := utf8.DecodeRuneInString(text[next:])
				if !unicode.IsSpace(r2) {
					break
				}
				next += size2
			}
			if next < len(text) {
				out = append(out, next)
			}
		}
		i = next
	}
	return out
}

// sentenceEnd reports whether text ends a sentence: ., !, ?, ; or : (or
// their full-width forms), possibly followed by closing quotes or
// brackets.
func sentenceEnd(text string) bool {
	text = strings.TrimRight(text, `"')]}’”»`)
	r, _ := utf8.DecodeLastRuneInString(text)
	switch r {
	case '.', '!', '?', ';', ':', '。', '！', '？', '；', '：':
		return true
	}
	return false
}
