package wordpiece

import "sort"

//go:generate go run gen_tables.go

// span is an inclusive range of code points.
type span struct{ lo, hi rune }

// Character properties of the reference tokenizer, one bit each.
const (
	pRemoved  uint8 = 1 << iota // clean_text drops it
	pSpace                      // whitespace: clean_text maps it to ' ', the pre-tokenizer splits on it
	pPunct                      // the pre-tokenizer makes it a word of its own
	pMark                       // nonspacing mark: dropped after NFD when accents are stripped
	pCJK                        // handle_chinese_chars puts spaces around it
	pNFDKeep                    // x/text decomposes it, the reference does not
	pLowerExc                   // lowerExceptions holds its lower case
)

// cjkSpans are the code points BertNormalizer's handle_chinese_chars treats
// as Chinese (is_chinese_char in the reference): the CJK Unified Ideographs
// and their extensions A-E, and the compatibility ideographs. Hangul, kana
// and CJK punctuation are not among them.
var cjkSpans = []span{
	{0x3400, 0x4DBF}, {0x4E00, 0x9FFF}, {0xF900, 0xFAFF}, {0x20000, 0x2A6DF},
	{0x2A700, 0x2B73F}, {0x2B740, 0x2B81F}, {0x2B920, 0x2CEAF}, {0x2F800, 0x2FA1F},
}

// bmpProps holds the properties of every code point below U+10000; the rest
// are looked up in the spans (emoji and rarer scripts).
var bmpProps = func() *[0x10000]uint8 {
	var t [0x10000]uint8
	for _, s := range []struct {
		spans []span
		p     uint8
	}{
		{removedSpans, pRemoved}, {spaceSpans, pSpace}, {punctSpans, pPunct}, {markSpans, pMark},
		{cjkSpans, pCJK}, {nfdKeepSpans, pNFDKeep},
	} {
		for _, sp := range s.spans {
			for r := sp.lo; r <= sp.hi && r < 0x10000; r++ {
				t[r] |= s.p
			}
		}
	}
	for r := range lowerExceptions {
		if r < 0x10000 {
			t[r] |= pLowerExc
		}
	}
	return &t
}()

// props returns the properties of r.
func props(r rune) uint8 {
	if r < 0x10000 {
		if r < 0 {
			return 0
		}
		return bmpProps[r]
	}
	var p uint8
	if inSpans(removedSpans, r) {
		p |= pRemoved
	}
	if inSpans(spaceSpans, r) {
		p |= pSpace
	}
	if inSpans(punctSpans, r) {
		p |= pPunct
	}
	if inSpans(markSpans, r) {
		p |= pMark
	}
	if inSpans(cjkSpans, r) {
		p |= pCJK
	}
	if inSpans(nfdKeepSpans, r) {
		p |= pNFDKeep
	}
	if _, ok := lowerExceptions[r]; ok {
		p |= pLowerExc
	}
	return p
}

func inSpans(spans []span, r rune) bool {
	i := sort.Search(len(spans), func(i int) bool { return spans[i].hi >= r })
	return i < len(spans) && spans[i].lo <= r
}
