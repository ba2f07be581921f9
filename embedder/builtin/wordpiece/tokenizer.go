// Package wordpiece turns text into the token ids of a BERT-family model, as
// the Hugging Face tokenizers library does from the model's tokenizer.json:
// added tokens ("[CLS]", "[MASK]", ...) matched in the raw text, the
// BertNormalizer (clean_text, handle_chinese_chars, strip_accents,
// lowercase), the BertPreTokenizer (whitespace and punctuation), the
// WordPiece model (greedy longest match, "##" continuation, [UNK]) and the
// post-processor's [CLS] ... [SEP], with truncation to a maximum length.
//
// The ids equal the reference's on the texts of
// embedder/builtin/testdata/gen_reference.py, and every code point
// normalises and splits as the reference's does (see tables.go and
// docs/embedders.md for where the reference's Unicode tables differ from
// Go's). Pure Go.
package wordpiece

import (
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Tokenizer encodes text to token ids. It is immutable after Load and safe
// for concurrent use.
type Tokenizer struct {
	norm normalizer

	vocab        map[string]int32 // a word's first piece
	cont         map[string]int32 // continuing pieces, keyed without the "##" prefix
	maxWordBytes int              // the longest key of vocab, in bytes
	maxContBytes int              // the longest key of cont, in bytes
	unkID        int32
	maxChars     int // max_input_chars_per_word: longer words are [UNK]
	vocabSize    int

	added     map[string]int32 // added tokens by content
	rawAdded  matcher          // added tokens with normalized: false, matched in the raw text
	normAdded matcher          // added tokens with normalized: true, matched in normalized text

	chunkBytes int // Encode goes through longer texts in chunks of about this many bytes

	prefix, suffix []int32 // the post-processor's ids around a single sequence
	padID          int32

	pool sync.Pool // *scratch
}

// scratch holds the buffers of one Encode call.
type scratch struct {
	a, b, c []byte
	nfd     norm.Iter
}

// maxPooledBytes bounds a pooled buffer: one that grew beyond it (a long
// word, a text without cut points) is left to the garbage collector.
const maxPooledBytes = 64 << 10

func (t *Tokenizer) release(sc *scratch) {
	for _, b := range []*[]byte{&sc.a, &sc.b, &sc.c} {
		if cap(*b) > maxPooledBytes {
			*b = nil
		}
	}
	t.pool.Put(sc)
}

// PadID is the id to pad a batch of sequences with: the tokenizer.json's
// padding pad_id, else the id of "[PAD]", else 0.
func (t *Tokenizer) PadID() int32 { return t.padID }

// VocabSize is one more than the largest id Encode can return: the encoder's
// embedding table must have at least this many rows.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// NumSpecial is the number of ids the post-processor adds around a text
// ([CLS] and [SEP]: 2).
func (t *Tokenizer) NumSpecial() int { return len(t.prefix) + len(t.suffix) }

func (t *Tokenizer) tokenID(s string) (int32, bool) {
	if id, ok := t.added[s]; ok {
		return id, true
	}
	id, ok := t.vocab[s]
	return id, ok
}

// Encode appends the ids of text to dst, with the post-processor's special
// tokens ([CLS] first, [SEP] last), and returns the extended slice; nothing
// is padded. With maxLen > 0 the text's own ids are cut so that the ids
// appended, special tokens included, number at most maxLen, as the
// reference's truncation (longest first, to the right, no stride) does; a
// maxLen below NumSpecial leaves only the special tokens. maxLen <= 0 means
// no limit.
//
// Encode stops tokenising once the limit is reached, so a long document
// costs no more than its first maxLen tokens.
func (t *Tokenizer) Encode(dst []int32, text string, maxLen int) []int32 {
	sc := t.pool.Get().(*scratch)
	defer t.release(sc)
	dst = append(dst, t.prefix...)
	e := encoding{t: t, sc: sc, dst: dst, body: len(dst), limit: -1}
	if maxLen > 0 {
		e.limit = max(maxLen-len(t.prefix)-len(t.suffix), 0)
	}
	// The text goes in chunks of about chunkBytes, cut where a word ends
	// whatever the normalizer does (cutAt), so that a long document stops
	// early and the buffers stay small. Not when added tokens are matched in
	// normalized text, where a match could span a cut.
	chunked := t.normAdded.byFirst == nil
	for pos := 0; pos < len(text) && !e.full(); {
		cut := len(text)
		if chunked && cut-pos > t.chunkBytes {
			cut = pos + t.cutAt(text[pos:], t.chunkBytes)
		}
		// An added token starting before the cut may end after it.
		if start, end, id, ok := find(&t.rawAdded, text, pos, cut); ok {
			e.segment(text[pos:start])
			e.emit(id)
			pos = end
			continue
		}
		e.segment(text[pos:cut])
		pos = cut
	}
	dst = e.dst
	if e.limit >= 0 && len(dst)-e.body > e.limit {
		dst = dst[:e.body+e.limit]
	}
	return append(dst, t.suffix...)
}

// encoding is the state of one Encode call.
type encoding struct {
	t     *Tokenizer
	sc    *scratch
	dst   []int32
	body  int // where the text's own ids start in dst
	limit int // the most ids of the text's own, or -1
}

func (e *encoding) full() bool { return e.limit >= 0 && len(e.dst)-e.body >= e.limit }

func (e *encoding) emit(id int32) {
	if !e.full() {
		e.dst = append(e.dst, id)
	}
}

// segment encodes a piece of the raw text between added tokens.
func (e *encoding) segment(s string) {
	if s == "" || e.full() {
		return
	}
	text := e.t.norm.normalize(s, e.sc)
	for !e.full() {
		start, end, id, ok := find(&e.t.normAdded, text, 0, len(text))
		if !ok {
			e.words(text)
			return
		}
		e.words(text[:start])
		e.emit(id)
		text = text[end:]
	}
}

// cutAt returns where to cut s near n bytes (0 < n < len(s)): before the
// last code point at or below n that starts a word after normalization and
// is a starter for NFD, so no word and no run of combining marks spans the
// cut; failing that, before the first one after n; failing that, len(s).
// Such code points: ASCII space, tab, newline and punctuation (normalized to
// themselves, never dropped) and, with handle_chinese_chars, CJK ideographs.
func (t *Tokenizer) cutAt(s string, n int) int {
	ok := func(i int) bool {
		c := s[i]
		if c < utf8.RuneSelf {
			return c == ' ' || c == '\t' || c == '\n' || c == '\r' || bmpProps[c]&pPunct != 0
		}
		if !t.norm.cjk || !utf8.RuneStart(c) {
			return false
		}
		r, _ := utf8.DecodeRuneInString(s[i:])
		return props(r)&pCJK != 0
	}
	for i := n; i > 0; i-- {
		if ok(i) {
			return i
		}
	}
	for i := n + 1; i < len(s); i++ {
		if ok(i) {
			return i
		}
	}
	return len(s)
}

// words appends the WordPiece ids of each word of normalized text.
func (e *encoding) words(text []byte) {
	forEachWord(text, func(w []byte, chars int) bool {
		e.word(w, chars)
		return !e.full()
	})
}

// forEachWord splits normalized text as the BertPreTokenizer does, on
// whitespace (dropped) and around punctuation (each a word of its own), and
// calls yield with each word and its length in characters until yield
// returns false.
func forEachWord(text []byte, yield func(w []byte, chars int) bool) {
	start, chars := -1, 0
	for i := 0; i < len(text); {
		c := text[i]
		var p uint8
		size := 1
		if c < utf8.RuneSelf {
			p = bmpProps[c]
		} else {
			var r rune
			r, size = utf8.DecodeRune(text[i:])
			p = props(r)
		}
		if p&(pSpace|pPunct) == 0 {
			if start < 0 {
				start, chars = i, 0
			}
			chars++
			i += size
			continue
		}
		if start >= 0 {
			if !yield(text[start:i], chars) {
				return
			}
			start = -1
		}
		if p&pPunct != 0 && !yield(text[i:i+size], 1) {
			return
		}
		i += size
	}
	if start >= 0 {
		yield(text[start:], chars)
	}
}

// word appends the WordPiece ids of one word of chars characters: the
// longest vocab entry that starts it, then the longest continuing piece
// ("##...") at each following position; [UNK] alone when some position has
// no match or the word is longer than max_input_chars_per_word.
func (e *encoding) word(w []byte, chars int) {
	t := e.t
	if chars > t.maxChars {
		e.emit(t.unkID)
		return
	}
	n0 := len(e.dst)
	for start := 0; start < len(w); {
		m, longest := t.vocab, t.maxWordBytes
		if start > 0 {
			m, longest = t.cont, t.maxContBytes
		}
		end := len(w)
		if end-start > longest {
			// No entry is longer; back up to the start of a character.
			end = start + longest
			for end > start && !utf8.RuneStart(w[end]) {
				end--
			}
		}
		found := false
		for end > start {
			if id, ok := m[string(w[start:end])]; ok {
				e.dst = append(e.dst, id)
				found = true
				break
			}
			_, size := utf8.DecodeLastRune(w[start:end])
			end -= size
		}
		if !found {
			e.dst = append(e.dst[:n0], t.unkID)
			return
		}
		start = end
	}
}

// matcher finds added tokens in a text: the leftmost match, and of those
// starting there the longest, as the reference's Aho-Corasick automaton
// (MatchKind::LeftmostLongest) does. Models have a handful of added tokens,
// so a list per first byte is enough.
type matcher struct {
	byFirst *[256][]addedToken // longest first; nil without tokens
}

type addedToken struct {
	content string
	id      int32
}

func newMatcher(tokens []addedToken) matcher {
	m := matcher{}
	for _, a := range tokens {
		if a.content == "" {
			continue
		}
		if m.byFirst == nil {
			m.byFirst = new([256][]addedToken)
		}
		list := append(m.byFirst[a.content[0]], a)
		for i := len(list) - 1; i > 0 && len(list[i].content) > len(list[i-1].content); i-- {
			list[i], list[i-1] = list[i-1], list[i]
		}
		m.byFirst[a.content[0]] = list
	}
	return m
}

// find returns the first added token in s that starts at or after byte from
// and before byte before.
func find[S string | []byte](m *matcher, s S, from, before int) (start, end int, id int32, ok bool) {
	if m.byFirst == nil {
		return 0, 0, 0, false
	}
	for i := from; i < before; i++ {
		for _, a := range m.byFirst[s[i]] {
			if len(s)-i >= len(a.content) && string(s[i:i+len(a.content)]) == a.content {
				return i, i + len(a.content), a.id, true
			}
		}
	}
	return 0, 0, 0, false
}
