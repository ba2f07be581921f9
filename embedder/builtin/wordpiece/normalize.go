package wordpiece

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalizer is the reference's BertNormalizer. Its steps run in the
// reference's order: clean_text, handle_chinese_chars, strip_accents (NFD,
// then drop nonspacing marks), lowercase. Each step maps characters one by
// one except NFD, which also reorders combining marks, so a segment's
// characters go through the first two steps, the result through NFD as a
// whole, and that through the last two.
//
// The zero normalizer changes nothing: it stands for a tokenizer.json
// without a normalizer.
type normalizer struct {
	clean bool // clean_text
	cjk   bool // handle_chinese_chars
	strip bool // strip_accents, after resolving null to lowercase
	lower bool // lowercase
}

// normalize returns the normalized form of s in one of sc's buffers, valid
// until sc is used again. The result is valid UTF-8 whatever s holds:
// invalid bytes read as U+FFFD, which clean_text drops.
func (n *normalizer) normalize(s string, sc *scratch) []byte {
	a := sc.a[:0]
	ascii, keep := true, false
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			if n.clean {
				p := bmpProps[c]
				if p&pRemoved != 0 {
					continue
				}
				if p&pSpace != 0 {
					c = ' '
				}
			}
			a = append(a, c)
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		p := props(r)
		if n.clean {
			if p&pRemoved != 0 {
				continue
			}
			if p&pSpace != 0 {
				a = append(a, ' ')
				continue
			}
		}
		ascii = false
		keep = keep || p&pNFDKeep != 0
		if n.cjk && p&pCJK != 0 {
			a = append(a, ' ')
			a = utf8.AppendRune(a, r)
			a = append(a, ' ')
			continue
		}
		a = utf8.AppendRune(a, r)
	}
	sc.a = a
	if ascii {
		if n.lower {
			for i, c := range a {
				if 'A' <= c && c <= 'Z' {
					a[i] = c + ('a' - 'A')
				}
			}
		}
		return a
	}
	if !n.strip && !n.lower {
		return a
	}
	src := a
	if n.strip {
		b := sc.b[:0]
		if !keep {
			b = sc.appendNFD(b, a)
		} else {
			b = sc.appendNFDKeeping(b, a)
		}
		sc.b = b
		src = b
	}
	out := sc.c[:0]
	for i := 0; i < len(src); {
		c := src[i]
		if c < utf8.RuneSelf {
			if n.lower && 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(src[i:])
		i += size
		p := props(r)
		if n.strip && p&pMark != 0 {
			continue
		}
		if !n.lower {
			out = utf8.AppendRune(out, r)
		} else if p&pLowerExc != 0 {
			out = append(out, lowerExceptions[r]...)
		} else {
			out = utf8.AppendRune(out, unicode.ToLower(r))
		}
	}
	sc.c = out
	return out
}

// appendNFD appends the NFD of src to dst. norm.Iter in the pooled scratch
// instead of norm.Form.Append, which allocates its reorder buffer per call.
func (sc *scratch) appendNFD(dst, src []byte) []byte {
	sc.nfd.Init(norm.NFD, src)
	for !sc.nfd.Done() {
		dst = append(dst, sc.nfd.Next()...)
	}
	return dst
}

// appendNFDKeeping appends the NFD of src to dst, except that code points
// the reference's NFD neither decomposes nor gives a combining class
// (pNFDKeep: assigned after its tables) stay as they are, and NFD runs on the
// text between them: a starter, as they are there, no mark reorders across.
func (sc *scratch) appendNFDKeeping(dst, src []byte) []byte {
	from := 0
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		if r >= utf8.RuneSelf && props(r)&pNFDKeep != 0 {
			dst = sc.appendNFD(dst, src[from:i])
			dst = append(dst, src[i:i+size]...)
			from = i + size
		}
		i += size
	}
	return sc.appendNFD(dst, src[from:])
}
