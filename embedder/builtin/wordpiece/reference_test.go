package wordpiece_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ragd/ragd/embedder/builtin/internal/reference"
	"github.com/ragd/ragd/embedder/builtin/wordpiece"
	"github.com/ragd/ragd/internal/integration"
)

const testdata = "../testdata/"

// model is the model's tokenizer.json, loaded once.
type model struct {
	tok    *wordpiece.Tokenizer
	raw    []byte           // the file
	tokens map[int32]string // id -> token, for messages
}

var (
	modelOnce sync.Once
	modelVal  *model
	modelErr  error
)

func loadModel(tb testing.TB) *model {
	tb.Helper()
	dir := integration.ModelDir(tb)
	modelOnce.Do(func() {
		path := filepath.Join(dir, "tokenizer.json")
		m := &model{}
		if m.raw, modelErr = os.ReadFile(path); modelErr != nil {
			return
		}
		if m.tok, modelErr = wordpiece.Load(path); modelErr != nil {
			return
		}
		var f struct {
			Model struct {
				Vocab map[string]int32 `json:"vocab"`
			} `json:"model"`
		}
		if modelErr = json.Unmarshal(m.raw, &f); modelErr != nil {
			return
		}
		m.tokens = make(map[int32]string, len(f.Model.Vocab))
		for s, id := range f.Model.Vocab {
			m.tokens[id] = s
		}
		modelVal = m
	})
	if modelErr != nil {
		tb.Fatal(modelErr)
	}
	return modelVal
}

func maxSeqLength(tb testing.TB) int {
	tb.Helper()
	raw, err := os.ReadFile(testdata + "reference_meta.json")
	if err != nil {
		tb.Fatal(err)
	}
	var meta struct {
		MaxSeqLength int `json:"max_seq_length"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil || meta.MaxSeqLength <= 0 {
		tb.Fatalf("reference_meta.json: max_seq_length %d, %v", meta.MaxSeqLength, err)
	}
	return meta.MaxSeqLength
}

// firstMismatch describes where got and want part, or returns "".
func firstMismatch(m *model, got, want []int32) string {
	if slices.Equal(got, want) {
		return ""
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	tok := func(ids []int32) string {
		if i >= len(ids) {
			return "(end)"
		}
		return fmt.Sprintf("%d %q", ids[i], m.tokens[ids[i]])
	}
	lo := max(i-3, 0)
	return fmt.Sprintf("%d ids, want %d; first difference at position %d: got %s, want %s; context got %v want %v",
		len(got), len(want), i, tok(got), tok(want), got[lo:min(i+4, len(got))], want[lo:min(i+4, len(want))])
}

func quote(s string) string {
	q := fmt.Sprintf("%+q", s)
	if len(q) > 160 {
		q = q[:160] + "..."
	}
	return q
}

// Every reference text encodes to the ids of the Hugging Face tokenizers
// library (truncation at the model's max_seq_length, no padding).
func TestReferenceIDs(t *testing.T) {
	m := loadModel(t)
	maxLen := maxSeqLength(t)
	cases := reference.MustLoad(t, testdata+reference.File)
	bad := 0
	for _, c := range cases {
		got := m.tok.Encode(nil, c.Text, maxLen)
		if d := firstMismatch(m, got, c.IDs); d != "" {
			bad++
			if bad <= 10 {
				t.Errorf("text %d (%s) %s: %s", c.Index, c.Kind, quote(c.Text), d)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d texts differ", bad, len(cases))
	}
}

// variant is the model's tokenizer.json changed by a patch, with the
// reference ids of every reference text.
type variant struct {
	Name   string         `json:"name"`
	Patch  map[string]any `json:"patch"`
	MaxLen int            `json:"max_len"`
	IDs    [][]int32      `json:"ids"`
}

// merge applies patch as gen_reference.py does: objects key by key, other
// values replaced.
func merge(base, patch map[string]any) map[string]any {
	out := make(map[string]any, len(base))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range patch {
		pv, ok1 := v.(map[string]any)
		bv, ok2 := out[k].(map[string]any)
		if ok1 && ok2 {
			out[k] = merge(bv, pv)
		} else {
			out[k] = v
		}
	}
	return out
}

// The same texts under variants of the tokenizer.json (cased, accents kept,
// no cleaning, no normalizer, added tokens normalized or not with lstrip and
// rstrip, other post-processors, short max_input_chars_per_word, truncation
// at 16 and 3) encode to the reference's ids.
func TestReferenceVariants(t *testing.T) {
	m := loadModel(t)
	cases := reference.MustLoad(t, testdata+reference.File)
	f, err := os.Open(testdata + "variants.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Variants []variant `json:"variants"`
	}
	if err := json.NewDecoder(zr).Decode(&file); err != nil {
		t.Fatal(err)
	}
	if len(file.Variants) < 10 {
		t.Fatalf("%d variants", len(file.Variants))
	}
	var base map[string]any
	if err := json.Unmarshal(m.raw, &base); err != nil {
		t.Fatal(err)
	}
	for _, v := range file.Variants {
		t.Run(v.Name, func(t *testing.T) {
			raw, err := json.Marshal(merge(base, v.Patch))
			if err != nil {
				t.Fatal(err)
			}
			tok, err := wordpiece.Read(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if len(v.IDs) != len(cases) {
				t.Fatalf("%d ids for %d texts", len(v.IDs), len(cases))
			}
			bad := 0
			for i, c := range cases {
				got := tok.Encode(nil, c.Text, v.MaxLen)
				if d := firstMismatch(m, got, v.IDs[i]); d != "" {
					bad++
					if bad <= 5 {
						t.Errorf("text %d (%s) %s: %s", c.Index, c.Kind, quote(c.Text), d)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d texts differ", bad, len(cases))
			}
		})
	}
}

// Encode from many goroutines at once gives what it gives alone (the
// scratch buffers are pooled per call).
func TestEncodeConcurrent(t *testing.T) {
	m := loadModel(t)
	cases := reference.MustLoad(t, testdata+reference.File)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var dst []int32
			for i := range cases {
				c := cases[(i+g*61)%len(cases)]
				dst = m.tok.Encode(dst[:0], c.Text, 256)
				if !slices.Equal(dst, c.IDs) {
					errs <- fmt.Sprintf("goroutine %d, text %d: %v, want %v", g, c.Index, dst, c.IDs)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// Encode appends: what dst held stays.
func TestEncodeAppends(t *testing.T) {
	m := loadModel(t)
	dst := []int32{7, 8, 9}
	got := m.tok.Encode(dst, "Hello, world!", 256)
	want := append([]int32{7, 8, 9}, m.tok.Encode(nil, "Hello, world!", 256)...)
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if m.tok.PadID() != 0 || m.tok.NumSpecial() != 2 || m.tok.VocabSize() != 30522 {
		t.Fatalf("PadID %d NumSpecial %d VocabSize %d, want 0 2 30522", m.tok.PadID(), m.tok.NumSpecial(), m.tok.VocabSize())
	}
	if s := strings.Join(tokens(m, m.tok.Encode(nil, "Hello, [MASK] world!", 0)), " "); s != "[CLS] hello , [MASK] world ! [SEP]" {
		t.Fatalf("tokens %s", s)
	}
}

func tokens(m *model, ids []int32) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = m.tokens[id]
	}
	return out
}
