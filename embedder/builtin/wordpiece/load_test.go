package wordpiece_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ragd/ragd/embedder/builtin/wordpiece"
)

// tinyVocab is a small WordPiece vocabulary for tests that need no model.
var tinyVocab = []string{
	"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
	"the", "un", "##aff", "##able", "aff", "##a", "##b", "##c", "a", "b", "c",
	"wing", "##s", "mach", "!", ",", ".", "[", "]", "-", "cafe", "i", "##i", "中", "文",
	"x", "##x", "xx", "##xx", "é", "##é",
}

// tinyJSON is a tokenizer.json in the layout of all-MiniLM-L6-v2's, over
// tinyVocab, with patch merged in as gen_reference.py merges its variants.
func tinyJSON(t testing.TB, patch map[string]any) []byte {
	t.Helper()
	vocab := map[string]any{}
	for i, s := range tinyVocab {
		vocab[s] = i
	}
	special := func(id int, s string) map[string]any {
		return map[string]any{"id": id, "content": s, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true}
	}
	base := map[string]any{
		"version":    "1.0",
		"truncation": map[string]any{"max_length": 128, "strategy": "LongestFirst", "stride": 0},
		"padding":    nil,
		"added_tokens": []any{special(0, "[PAD]"), special(1, "[UNK]"), special(2, "[CLS]"),
			special(3, "[SEP]"), special(4, "[MASK]")},
		"normalizer": map[string]any{"type": "BertNormalizer", "clean_text": true,
			"handle_chinese_chars": true, "strip_accents": nil, "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{
			"type": "TemplateProcessing",
			"single": []any{
				map[string]any{"SpecialToken": map[string]any{"id": "[CLS]", "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": "[SEP]", "type_id": 0}},
			},
			"special_tokens": map[string]any{
				"[CLS]": map[string]any{"id": "[CLS]", "ids": []int{2}, "tokens": []string{"[CLS]"}},
				"[SEP]": map[string]any{"id": "[SEP]", "ids": []int{3}, "tokens": []string{"[SEP]"}},
			},
		},
		"decoder": map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true},
		"model": map[string]any{"type": "WordPiece", "unk_token": "[UNK]",
			"continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab},
	}
	raw, err := json.Marshal(merge(base, patch))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func tinyTokenizer(t testing.TB, patch map[string]any) *wordpiece.Tokenizer {
	t.Helper()
	tok, err := wordpiece.Read(bytes.NewReader(tinyJSON(t, patch)))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func tinyTokens(ids []int32) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(' ')
		}
		if int(id) < len(tinyVocab) {
			b.WriteString(tinyVocab[id])
		} else {
			b.WriteString("?")
		}
	}
	return b.String()
}

func TestTinyEncode(t *testing.T) {
	tok := tinyTokenizer(t, nil)
	for _, tc := range []struct {
		in     string
		maxLen int
		want   string
	}{
		{"", 0, "[CLS] [SEP]"},
		{"unaffable", 0, "[CLS] un ##aff ##able [SEP]"},
		{"The WINGS, unaffable!", 0, "[CLS] the wing ##s , un ##aff ##able ! [SEP]"},
		{"Café", 0, "[CLS] cafe [SEP]"},
		{"abcz", 0, "[CLS] [UNK] [SEP]"}, // no piece for "z": the whole word is [UNK]
		{"aaaa", 0, "[CLS] a ##a ##a ##a [SEP]"},
		{"xxxxx", 0, "[CLS] xx ##xx ##x [SEP]"}, // greedy longest first
		{"中文", 0, "[CLS] 中 文 [SEP]"},
		{"a[MASK]b [mask]", 0, "[CLS] a [MASK] b [ [UNK] ] [SEP]"},
		{"[CLS][SEP]", 0, "[CLS] [CLS] [SEP] [SEP]"},
		{strings.Repeat("a", 100), 0, "[CLS] a" + strings.Repeat(" ##a", 99) + " [SEP]"},
		{strings.Repeat("a", 101), 0, "[CLS] [UNK] [SEP]"},                              // max_input_chars_per_word
		{strings.Repeat("é", 100), 0, "[CLS] [UNK] [SEP]"},                              // accents stripped: "e" is not in the vocab
		{"the the the the", 4, "[CLS] the the [SEP]"},                                   // truncation counts [CLS] and [SEP]
		{"the the the the", 2, "[CLS] [SEP]"},                                           // nothing of the text fits
		{"the the the the", 1, "[CLS] [SEP]"},                                           // below NumSpecial: the special tokens only
		{"unaffable the", 3, "[CLS] un [SEP]"},                                          // cut inside a word, like the reference
		{"the [MASK] the", 4, "[CLS] the [MASK] [SEP]"},                                 // added tokens count too
		{"\x00\u200b\ufffd \t", 0, "[CLS] [SEP]"},                                       // empty after normalisation
		{"wing\xffs", 0, "[CLS] wing ##s [SEP]"},                                        // invalid UTF-8 is dropped as U+FFFD
		{"İ", 0, "[CLS] i [SEP]"},                                                       // strip, then lowercase
		{"a-b", 0, "[CLS] a - b [SEP]"},                                                 // punctuation isolated
		{"the" + strings.Repeat(" the", 300), 6, "[CLS] the the the the [SEP]"},         // stops early
		{"[MASK]" + strings.Repeat("[MASK]", 9), 5, "[CLS] [MASK] [MASK] [MASK] [SEP]"}, // only added tokens
	} {
		got := tinyTokens(tok.Encode(nil, tc.in, tc.maxLen))
		if got != tc.want {
			t.Errorf("Encode(%+q, %d) = %s, want %s", tc.in, tc.maxLen, got, tc.want)
		}
	}
}

// Ids of added tokens follow the reference: the vocab id when the content is
// in the vocab, else the next free id after the vocab, in file order.
func TestAddedTokenIDs(t *testing.T) {
	tok := tinyTokenizer(t, map[string]any{
		"added_tokens": []any{
			map[string]any{"id": 4, "content": "[MASK]", "normalized": false, "special": true},
			map[string]any{"id": 999, "content": "<new>", "normalized": false},
			map[string]any{"id": 5, "content": "the", "normalized": false}, // in the vocab: keeps 5
			map[string]any{"id": 998, "content": "Wing Mach", "normalized": true},
		},
	})
	n := int32(len(tinyVocab))
	got := tok.Encode(nil, "<new> the wing mach WING MACH the", 0)
	want := []int32{2, n, 5, n + 1, n + 1, 5, 3}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if tok.VocabSize() != len(tinyVocab)+2 {
		t.Fatalf("VocabSize %d, want %d", tok.VocabSize(), len(tinyVocab)+2)
	}
	if tok.PadID() != 0 {
		t.Fatalf("PadID %d", tok.PadID())
	}
}

func TestLoadRefuses(t *testing.T) {
	for _, tc := range []struct {
		name        string
		patch       map[string]any
		unsupported bool
		want        string
	}{
		{"version", map[string]any{"version": "2.0"}, true, `version "2.0"`},
		{"normalizer type", map[string]any{"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{}}}, true, `normalizer type "Sequence"`},
		{"pre-tokenizer type", map[string]any{"pre_tokenizer": map[string]any{"type": "Whitespace"}}, true, `pre_tokenizer type "Whitespace"`},
		{"no pre-tokenizer", map[string]any{"pre_tokenizer": nil}, true, "no pre_tokenizer"},
		{"model type", map[string]any{"model": map[string]any{"type": "BPE"}}, true, `model type "BPE"`},
		{"post-processor type", map[string]any{"post_processor": map[string]any{"type": "ByteLevel"}}, true, `post_processor type "ByteLevel"`},
		{"template without A", map[string]any{"post_processor": map[string]any{"single": []any{
			map[string]any{"SpecialToken": map[string]any{"id": "[CLS]"}}}}}, true, "without sequence A"},
		{"single_word", map[string]any{"added_tokens": []any{map[string]any{"id": 5, "content": "the", "single_word": true}}}, true, `"the": single_word`},
		{"unk not in vocab", map[string]any{"model": map[string]any{"unk_token": "<unk>"}}, false, `unk_token "<unk>" is not in the vocab`},
		{"max chars", map[string]any{"model": map[string]any{"max_input_chars_per_word": 0}}, false, "max_input_chars_per_word 0"},
		{"template special without ids", map[string]any{"post_processor": map[string]any{"single": []any{
			map[string]any{"SpecialToken": map[string]any{"id": "[BOS]"}},
			map[string]any{"Sequence": map[string]any{"id": "A"}}}}}, false, `special token "[BOS]" has no ids`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokenizer.json")
			if err := os.WriteFile(path, tinyJSON(t, tc.patch), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := wordpiece.Load(path)
			if err == nil {
				t.Fatal("loaded")
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name the file and %q", err, tc.want)
			}
			if errors.Is(err, wordpiece.ErrUnsupported) != tc.unsupported {
				t.Errorf("errors.Is(%v, ErrUnsupported) = %v", err, !tc.unsupported)
			}
		})
	}
	if _, err := wordpiece.Load(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := wordpiece.Read(strings.NewReader("{")); err == nil {
		t.Error("truncated JSON loaded")
	}
}
