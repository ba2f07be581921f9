package wordpiece

// Normalize runs a BertNormalizer with the given settings on s.
func Normalize(clean, cjk, strip, lower bool, s string) string {
	return NewNormalizer(clean, cjk, strip, lower)(s)
}

// NewNormalizer returns Normalize with its settings bound, reusing its
// buffers from call to call (not for concurrent use).
func NewNormalizer(clean, cjk, strip, lower bool) func(s string) string {
	n := normalizer{clean: clean, cjk: cjk, strip: strip, lower: lower}
	sc := new(scratch)
	return func(s string) string { return string(n.normalize(s, sc)) }
}

// PreTokenClass says what the BertPreTokenizer does with r: "space" (split
// there, dropped), "punct" (a word of its own) or "".
func PreTokenClass(r rune) string {
	p := props(r)
	switch {
	case p&pSpace != 0:
		return "space"
	case p&pPunct != 0:
		return "punct"
	}
	return ""
}

// PreTokenize splits normalized text into the words the BertPreTokenizer
// makes of it.
func PreTokenize(s string) []string {
	var words []string
	forEachWord([]byte(s), func(w []byte, _ int) bool {
		words = append(words, string(w))
		return true
	})
	return words
}

// SetChunkBytes changes the size of the chunks Encode goes through a long
// text in (2048 bytes), to test that chunks change nothing.
func SetChunkBytes(t *Tokenizer, n int) { t.chunkBytes = n }
