// Package analysis is ragd's own light English text analysis, shared by the
// hashing embedder (embedder/hashing) and the keyphrase extractor
// (ingest/keyphrase), so both see the same words: lowercased runs of
// letters and digits, a short stop list, and plural folding. The byte-level
// forms (Tokenize, IsStopBytes, StemBytes) let the embedder work without
// allocating.
package analysis

import (
	"unicode"
	"unicode/utf8"
)

// stopWords is a small English stop list (articles, pronouns, auxiliaries,
// prepositions, conjunctions and question words). It is deliberately shorter
// than the long lists of some toolkits: words such as "high", "low", "first"
// or "number" carry meaning in technical text and are kept.
var stopWords = func() map[string]struct{} {
	words := []string{
		"a", "about", "above", "after", "again", "against", "all", "also", "am", "an",
		"and", "any", "are", "as", "at", "be", "because", "been", "before", "being",
		"below", "between", "both", "but", "by", "can", "could", "did", "do", "does",
		"doing", "down", "during", "each", "either", "etc", "few", "for", "from",
		"further", "had", "has", "have", "having", "he", "her", "here", "hers",
		"herself", "him", "himself", "his", "how", "however", "i", "if", "in", "into",
		"is", "it", "its", "itself", "just", "may", "me", "might", "more", "most",
		"must", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once",
		"only", "or", "other", "ought", "our", "ours", "ourselves", "out", "over",
		"own", "same", "shall", "she", "should", "so", "some", "such", "than", "that",
		"the", "their", "theirs", "them", "themselves", "then", "there", "these",
		"they", "this", "those", "through", "thus", "to", "too", "under", "until",
		"up", "upon", "very", "was", "we", "were", "what", "when", "where", "whether",
		"which", "while", "who", "whom", "whose", "why", "will", "with", "within",
		"without", "would", "yet", "you", "your", "yours", "yourself", "yourselves",
	}
	m := make(map[string]struct{}, len(words))
	for _, w := range words {
		m[w] = struct{}{}
	}
	return m
}()

// IsStopWord reports whether the lowercased word w is on the English stop
// list.
func IsStopWord(w string) bool {
	_, ok := stopWords[w]
	return ok
}

// IsStopBytes is IsStopWord for a word held as bytes, without allocating.
func IsStopBytes(w []byte) bool {
	_, ok := stopWords[string(w)] // no allocation: the compiler special-cases map lookups by string(bytes)
	return ok
}

// Stem applies the light English normalisation to a lowercased word: Harman's "S" stemmer, which only folds plurals ("layers" → "layer",
// "bodies" → "body", "surfaces" → "surface") and leaves every other word
// unchanged. Words of three bytes or fewer are never changed.
func Stem(w string) string {
	base, suffix := StemBytes([]byte(w))
	if suffix == "" && len(base) == len(w) {
		return w
	}
	return string(base) + suffix
}

// StemBytes returns the stem of w as base (a prefix of w) followed by
// suffix, without allocating.
func StemBytes(w []byte) (base []byte, suffix string) {
	n := len(w)
	if n <= 3 || w[n-1] != 's' {
		return w, ""
	}
	switch {
	case hasSuffix(w, "ies") && !hasSuffix(w, "eies") && !hasSuffix(w, "aies"):
		return w[:n-3], "y"
	case hasSuffix(w, "es") && !hasSuffix(w, "aes") && !hasSuffix(w, "ees") && !hasSuffix(w, "oes"):
		return w[:n-1], ""
	case !hasSuffix(w, "us") && !hasSuffix(w, "ss") && !hasSuffix(w, "is"):
		return w[:n-1], ""
	}
	return w, ""
}

func hasSuffix(w []byte, s string) bool {
	return len(w) >= len(s) && string(w[len(w)-len(s):]) == s
}

// Tokens splits text into lowercased maximal runs of letters and digits,
// dropping one-character tokens. Stop words are kept; use IsStopWord and
// Stem to apply the rest of the normalisation.
func Tokens(text string) []string {
	buf, spans := Tokenize(text, nil, nil)
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = string(buf[s.Start:s.End])
	}
	return out
}

// Span is a token's byte range in the lowercased buffer, and its length in
// runes.
type Span struct {
	Start, End, Runes int
}

// Tokenize appends the lowercased tokens of text to buf and their spans to
// spans. A token is a maximal run of letters and digits (unicode classes L
// and Nd); tokens of a single rune are dropped.
func Tokenize(text string, buf []byte, spans []Span) ([]byte, []Span) {
	start, runes := -1, 0
	closeTok := func() {
		if start >= 0 {
			if runes > 1 {
				spans = append(spans, Span{start, len(buf), runes})
			} else {
				buf = buf[:start]
			}
		}
		start, runes = -1, 0
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
			case 'A' <= c && c <= 'Z':
				c += 'a' - 'A'
			default:
				closeTok()
				continue
			}
			if start < 0 {
				start = len(buf)
			}
			buf = append(buf, c)
			runes++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			closeTok()
			continue
		}
		if start < 0 {
			start = len(buf)
		}
		buf = utf8.AppendRune(buf, unicode.ToLower(r))
		runes++
	}
	closeTok()
	return buf, spans
}
