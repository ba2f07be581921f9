package wordpiece_test

import (
	"bytes"
	"os"
	"slices"
	"testing"

	"github.com/ragd/ragd/embedder/builtin/internal/reference"
	"github.com/ragd/ragd/embedder/builtin/wordpiece"
	"github.com/ragd/ragd/internal/integration"
)

// fuzzTokenizers are two copies of the model's tokenizer when
// RAG_TEST_MODEL_DIR names one, else of the tiny one; the second normalises
// long texts in chunks of a few bytes instead of 2048.
func fuzzTokenizers(tb testing.TB) (tok, chunked *wordpiece.Tokenizer) {
	tb.Helper()
	if os.Getenv(integration.EnvModelDir) != "" {
		m := loadModel(tb)
		var err error
		if chunked, err = wordpiece.Read(bytes.NewReader(m.raw)); err != nil {
			tb.Fatal(err)
		}
		tok = m.tok
	} else {
		tok, chunked = tinyTokenizer(tb, nil), tinyTokenizer(tb, nil)
	}
	wordpiece.SetChunkBytes(chunked, 5)
	return tok, chunked
}

// FuzzEncode: no panic; every id is below VocabSize; the first id is the
// tokenizer's [CLS] and the last its [SEP]; at most maxLen ids; the same
// text gives the same ids; and truncation is a cut of the untruncated ids
// (so stopping early changes nothing); normalising in chunks changes
// nothing either.
func FuzzEncode(f *testing.F) {
	tok, chunked := fuzzTokenizers(f)
	for _, s := range []string{"", " ", "Hello, world!", "a[MASK]b", "[cls]", "İstanbul", "café",
		"e\u0301\u0301", "中文テキスト한국어", "\x00\ufffd\u200b", "wing\vmach wing\u0085mach", "\xff\xfe",
		"a.\u0301b c\u0316\u0301 中\u0301文 x,y"} {
		f.Add(s, 0)
		f.Add(s, 3)
	}
	for i, c := range reference.MustLoad(f, testdata+reference.File) {
		f.Add(c.Text, []int{0, 16, 256}[i%3])
	}
	empty := tok.Encode(nil, "", 0)
	cls, sep := empty[0], empty[len(empty)-1]
	f.Fuzz(func(t *testing.T, text string, maxLen int) {
		maxLen %= 600
		if maxLen < 0 {
			maxLen = -maxLen
		}
		if maxLen == 1 {
			maxLen = 2
		}
		ids := tok.Encode(nil, text, maxLen)
		if len(ids) < 2 || ids[0] != cls || ids[len(ids)-1] != sep {
			t.Fatalf("Encode(%+q, %d) = %v: not [CLS] ... [SEP]", text, maxLen, ids)
		}
		if maxLen > 0 && len(ids) > maxLen {
			t.Fatalf("Encode(%+q, %d): %d ids", text, maxLen, len(ids))
		}
		for _, id := range ids {
			if id < 0 || int(id) >= tok.VocabSize() {
				t.Fatalf("Encode(%+q, %d): id %d outside [0, %d)", text, maxLen, id, tok.VocabSize())
			}
		}
		if again := tok.Encode(nil, text, maxLen); !slices.Equal(again, ids) {
			t.Fatalf("Encode(%+q, %d): %v, then %v", text, maxLen, ids, again)
		}
		if c := chunked.Encode(nil, text, maxLen); !slices.Equal(c, ids) {
			t.Fatalf("Encode(%+q, %d) = %v, in chunks %v", text, maxLen, ids, c)
		}
		full := tok.Encode(nil, text, 0)
		if maxLen > 0 {
			body := full[1 : len(full)-1]
			want := append(append([]int32{cls}, body[:min(len(body), maxLen-2)]...), sep)
			if !slices.Equal(ids, want) {
				t.Fatalf("Encode(%+q, %d) = %v, not the cut of %v", text, maxLen, ids, full)
			}
		}
	})
}
