package wordpiece

import "slices"

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
	pNFDKeep                    // x/text decomposes it or gives it a combining class, the reference does neither
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

// bmpProps holds the properties of every code point below U+10000, and
// astralProps those above as sorted spans of equal properties (emoji and
// rarer scripts).
var bmpProps, astralProps = buildProps()

// propSpan is a span of code points with the same properties.
type propSpan struct {
	lo, hi rune
	p      uint8
}

func buildProps() (*[0x10000]uint8, []propSpan) {
	var bmp [0x10000]uint8
	lists := []struct {
		spans []span
		p     uint8
	}{
		{removedSpans, pRemoved}, {spaceSpans, pSpace}, {punctSpans, pPunct}, {markSpans, pMark},
		{cjkSpans, pCJK}, {nfdKeepSpans, pNFDKeep}, {nil, pLowerExc},
	}
	for r := range lowerExceptions {
		lists[len(lists)-1].spans = append(lists[len(lists)-1].spans, span{r, r})
	}
	slices.SortFunc(lists[len(lists)-1].spans, func(a, b span) int { return int(a.lo - b.lo) })
	// Above U+FFFF, cut the code space where any span starts or ends; the
	// properties are constant between two cuts.
	var cuts []rune
	for _, l := range lists {
		for _, sp := range l.spans {
			for r := sp.lo; r <= sp.hi && r < 0x10000; r++ {
				bmp[r] |= l.p
			}
			if sp.hi >= 0x10000 {
				cuts = append(cuts, max(sp.lo, 0x10000), sp.hi+1)
			}
		}
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	var astral []propSpan
	for i := 0; i+1 < len(cuts); i++ {
		lo, hi := cuts[i], cuts[i+1]-1
		var p uint8
		for _, l := range lists {
			if inSpans(l.spans, lo) {
				p |= l.p
			}
		}
		if p == 0 {
			continue
		}
		if n := len(astral); n > 0 && astral[n-1].hi == lo-1 && astral[n-1].p == p {
			astral[n-1].hi = hi
			continue
		}
		astral = append(astral, propSpan{lo, hi, p})
	}
	return &bmp, astral
}

func inSpans(spans []span, r rune) bool {
	i, _ := slices.BinarySearchFunc(spans, r, func(s span, r rune) int {
		if s.hi < r {
			return -1
		}
		if s.lo > r {
			return 1
		}
		return 0
	})
	return i < len(spans) && spans[i].lo <= r && r <= spans[i].hi
}

// props returns the properties of r.
func props(r rune) uint8 {
	if r < 0x10000 {
		if r < 0 {
			return 0
		}
		return bmpProps[r]
	}
	i, j := 0, len(astralProps)
	for i < j {
		h := int(uint(i+j) >> 1)
		if astralProps[h].hi < r {
			i = h + 1
		} else {
			j = h
		}
	}
	if i < len(astralProps) && astralProps[i].lo <= r {
		return astralProps[i].p
	}
	return 0
}
