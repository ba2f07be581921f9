package wordpiece_test

import (
	"bufio"
	"compress/gzip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/ragd/ragd/embedder/builtin/wordpiece"
)

// The pieces of the BertNormalizer, each on its own and together.
func TestNormalizer(t *testing.T) {
	type cfg struct{ clean, cjk, strip, lower bool }
	all := cfg{true, true, true, true}
	for _, tc := range []struct {
		name string
		cfg  cfg
		in   string
		want string
	}{
		{"clean drops NUL", cfg{clean: true}, "he\x00llo", "hello"},
		{"clean drops U+FFFD", cfg{clean: true}, "a\uFFFDb", "ab"},
		{"clean drops invalid UTF-8 (read as U+FFFD)", cfg{clean: true}, "a\xffb\xc3", "ab"},
		{"clean drops controls", cfg{clean: true}, "a\x07b\x1bc\x7fd\u0085e", "abcde"},
		{"clean drops VT and FF, which are controls before whitespace", cfg{clean: true}, "a\vb\fc", "abc"},
		{"clean maps tab, newline, CR to a space", cfg{clean: true}, "a\tb\nc\rd", "a b c d"},
		{"clean maps Unicode spaces to a space", cfg{clean: true}, "a\u00a0b\u2003c\u3000d\u2028e", "a b c d e"},
		{"clean drops format characters", cfg{clean: true}, "zero\u200bwidth\u200dj\ufeff\u00ad\u202e", "zerowidthj"},
		{"clean drops private use", cfg{clean: true}, "a\ue000b\U000f0000c", "abc"},
		{"clean keeps unassigned code points", cfg{clean: true}, "a\u0378b", "a\u0378b"},
		{"without clean, NUL stays", cfg{}, "a\x00b", "a\x00b"},
		{"CJK ideographs get spaces", cfg{cjk: true}, "a中b", "a 中 b"},
		{"CJK extension B and compatibility ideographs get spaces", cfg{cjk: true}, "\U00020000\uf900", " \U00020000  \uf900 "},
		{"kana, Hangul, CJK punctuation do not", cfg{cjk: true}, "かなカナ한국。", "かなカナ한국。"},
		{"strip accents: precomposed", cfg{strip: true}, "café Ñandú", "cafe Nandu"},
		{"strip accents: combining marks", cfg{strip: true}, "cafe\u0301 e\u0301\u0301", "cafe e"},
		{"strip accents keeps letters without decomposition", cfg{strip: true}, "Łódź ø æ ß", "Łodz ø æ ß"},
		{"strip accents: Hangul becomes jamo", cfg{strip: true}, "한", "\u1112\u1161\u11ab"},
		{"strip accents is not compatibility folding", cfg{strip: true}, "ﬁ ½ ²", "ﬁ ½ ²"},
		{"strip accents: Angstrom sign", cfg{strip: true}, "\u212b", "A"},
		{"strip accents drops Devanagari virama (Mn), keeps vowel sign I (Mc)", cfg{strip: true}, "स्ति", "सति"},
		{"lowercase ASCII", cfg{lower: true}, "Hello WORLD", "hello world"},
		{"lowercase: İ becomes i + combining dot (Rust's full mapping)", cfg{lower: true}, "İstanbul", "i\u0307stanbul"},
		{"lowercase: capital sharp s", cfg{lower: true}, "ẞ", "ß"},
		{"lowercase is per character: no final sigma", cfg{lower: true}, "ΟΔΥΣΣΕΥΣ", "οδυσσευσ"},
		{"lowercase: Kelvin and Ohm signs", cfg{lower: true}, "\u212a\u2126", "kω"},
		{"lowercase keeps dotless ı", cfg{lower: true}, "ı", "ı"},
		{"strip then lowercase: İ becomes i", cfg{strip: true, lower: true}, "İSTANBUL", "istanbul"},
		{"all: marks after NUL still reorder and go", all, "A\u0301\x00\u0316b", "ab"},
		{"all", all, "Crème\tBRÛLÉE\u200b 中文 Ελληνικά", "creme brulee  中  文  ελληνικα"},
		{"none", cfg{}, "Crème\tBRÛLÉE", "Crème\tBRÛLÉE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			if got := wordpiece.Normalize(c.clean, c.cjk, c.strip, c.lower, tc.in); got != tc.want {
				t.Errorf("Normalize(%+q) = %+q, want %+q", tc.in, got, tc.want)
			}
		})
	}
}

func TestPreTokenize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"   ", nil},
		{"hello world", []string{"hello", "world"}},
		{"hey friend!     how are you?!?", []string{"hey", "friend", "!", "how", "are", "you", "?", "!", "?"}},
		{"don't", []string{"don", "'", "t"}},
		// ASCII symbols count as punctuation, other symbols do not.
		{"a$b^c`d+e<f=g>h|i~j", []string{"a", "$", "b", "^", "c", "`", "d", "+", "e", "<", "f", "=", "g", ">", "h", "|", "i", "~", "j"}},
		{"a€b×c©d", []string{"a€b×c©d"}},
		// Unicode punctuation (P*) splits: dashes, quotes, CJK and Arabic marks.
		{"a—b«c»d。e،f¿g", []string{"a", "—", "b", "«", "c", "»", "d", "。", "e", "،", "f", "¿", "g"}},
		{"x\u00a0y\u3000z\tw\u2029v", []string{"x", "y", "z", "w", "v"}},
		{"[mask]", []string{"[", "mask", "]"}},
	} {
		if got := wordpiece.PreTokenize(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("PreTokenize(%+q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// probe reads unicode_probe.tsv.gz: per config, the reference's output for
// every code point it changes.
func readProbe(t *testing.T) map[string]map[rune]string {
	t.Helper()
	f, err := os.Open(testdata + "unicode_probe.tsv.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	probe := map[string]map[rune]string{}
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		p := strings.Split(sc.Text(), "\t")
		if len(p) != 4 {
			t.Fatalf("bad probe line %q", sc.Text())
		}
		lo, err1 := strconv.ParseUint(p[1], 16, 32)
		hi, err2 := strconv.ParseUint(p[2], 16, 32)
		if err1 != nil || err2 != nil || lo > hi {
			t.Fatalf("bad probe line %q", sc.Text())
		}
		m := probe[p[0]]
		if m == nil {
			m = map[rune]string{}
			probe[p[0]] = m
		}
		for r := rune(lo); r <= rune(hi); r++ {
			switch {
			case p[0] == "pretok" || p[0] == "nonstarter":
				m[r] = p[3]
			case p[3] == "-":
				m[r] = ""
			case p[3] == "_":
				m[r] = " " + string(r) + " "
			default:
				var b strings.Builder
				for _, h := range strings.Fields(p[3]) {
					v, err := strconv.ParseUint(h, 16, 32)
					if err != nil {
						t.Fatalf("bad probe line %q", sc.Text())
					}
					b.WriteRune(rune(v))
				}
				m[r] = b.String()
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"clean", "strip", "lower", "strip_lower", "chinese", "pretok", "nonstarter", "seq"} {
		if len(probe[c]) == 0 {
			t.Fatalf("probe has no %q lines", c)
		}
	}
	return probe
}

// Every code point normalises and pre-tokenises as the reference does, under
// each of its settings on its own (and strip + lowercase together): the
// reference's tables are from older Unicode editions than Go's, so this is
// where a difference would show.
func TestEveryCodePointLikeReference(t *testing.T) {
	probe := readProbe(t)
	type cfg struct{ clean, cjk, strip, lower bool }
	configs := map[string]cfg{
		"clean":       {clean: true},
		"strip":       {strip: true},
		"lower":       {lower: true},
		"strip_lower": {strip: true, lower: true},
		"chinese":     {cjk: true},
	}
	step := rune(1)
	if testing.Short() {
		step = 7
	}
	var buf [utf8.UTFMax]byte
	for name, c := range configs {
		normalize := wordpiece.NewNormalizer(c.clean, c.cjk, c.strip, c.lower)
		bad := 0
		for r := rune(0); r <= unicode.MaxRune; r += step {
			if r >= 0xD800 && r <= 0xDFFF {
				continue
			}
			want, ok := probe[name][r]
			if !ok {
				want = string(r)
			}
			in := buf[:utf8.EncodeRune(buf[:], r)]
			if got := normalize(string(in)); got != want {
				bad++
				if bad <= 5 {
					t.Errorf("%s U+%04X: got %+q, want %+q", name, r, got, want)
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d code points differ", name, bad)
		}
	}
	// Between two spacing marks of combining classes 226 and 216, a code
	// point the reference sees as a combining mark sorts them (and sorts
	// itself among them); one it sees as a starter keeps them apart.
	strip := wordpiece.NewNormalizer(false, false, true, false)
	bad := 0
	for r := rune(0); r <= unicode.MaxRune; r += step {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		want, ok := probe["seq"][r]
		if !ok {
			s, ok := probe["strip"][r]
			if !ok {
				s = string(r)
			}
			want = "a\U0001D16D" + s + "\U0001D165"
		}
		if got := strip("a\U0001D16D" + string(r) + "\U0001D165"); got != want {
			bad++
			if bad <= 5 {
				t.Errorf("strip \"a\\U0001D16D\\U%08X\\U0001D165\": got %+q, want %+q", r, got, want)
			}
		}
	}
	if bad > 0 {
		t.Errorf("combining-mark order: %d code points differ", bad)
	}

	bad = 0
	for r := rune(0); r <= unicode.MaxRune; r += step {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		if got, want := wordpiece.PreTokenClass(r), probe["pretok"][r]; got != want {
			bad++
			if bad <= 5 {
				t.Errorf("pre-tokenizer U+%04X: got %q, want %q", r, got, want)
			}
		}
	}
	if bad > 0 {
		t.Errorf("pre-tokenizer: %d code points differ", bad)
	}
}
