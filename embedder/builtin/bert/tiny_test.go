package bert_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/ragd/ragd/embedder/builtin/bert"
)

// tinyCase is one vector of testdata/tiny/reference.json, written by
// testdata/gen_tiny.py from its numpy reference implementation.
type tinyCase struct {
	Role, Text string
	IDs        []int32
	Vec        []float32
}

func loadTiny(tb testing.TB) []tinyCase {
	tb.Helper()
	raw, err := os.ReadFile("../testdata/tiny/reference.json")
	if err != nil {
		tb.Fatal(err)
	}
	var cases []tinyCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		tb.Fatal(err)
	}
	return cases
}

// TestTinyModel runs the tiny random BERT (2 layers, 4 heads of 8, "bert."
// tensor names, CLS pooling) and compares with the numpy reference.
func TestTinyModel(t *testing.T) {
	m, err := bert.Load("../testdata/tiny", bert.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c := m.Config(); c.HiddenSize != 32 || c.NumAttentionHeads != 4 || c.NumHiddenLayers != 2 {
		t.Fatalf("config %+v", c)
	}
	cases := loadTiny(t)
	seqs := make([][]int32, len(cases))
	for i, c := range cases {
		seqs[i] = c.IDs
	}
	vecs, err := m.Embed(seqs, bert.PoolCLS, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		if cs := cosine(vecs[i], c.Vec); cs < 0.99999 {
			t.Errorf("%s %q: cosine %.7f with the numpy reference, want ≥ 0.99999", c.Role, c.Text, cs)
		}
	}
	// Mean pooling of the same model differs: the pooling is honoured.
	mean, err := m.Embed(seqs[1:2], bert.PoolMean, true)
	if err != nil {
		t.Fatal(err)
	}
	if cs := cosine(mean[0], cases[1].Vec); cs > 0.999 {
		t.Errorf("mean pooling gave the CLS vector (cosine %v)", cs)
	}
}

// TestPrecisionOption: int8 loads and reports itself; an unknown precision
// is refused.
func TestPrecisionOption(t *testing.T) {
	m, err := bert.Load("../testdata/tiny", bert.Options{Threads: 2, Precision: bert.Int8})
	if err != nil || m.Precision() != bert.Int8 {
		t.Fatalf("int8: %v, precision %q", err, m.Precision())
	}
	// The int8 encoder (every linear layer through the int8 kernel of this
	// CPU) stays close to the numpy reference.
	cases := loadTiny(t)
	seqs := make([][]int32, len(cases))
	for i, c := range cases {
		seqs[i] = c.IDs
	}
	vecs, err := m.Embed(seqs, bert.PoolCLS, true)
	if err != nil {
		t.Fatal(err)
	}
	worst := 1.0
	for i, c := range cases {
		worst = min(worst, cosine(vecs[i], c.Vec))
	}
	if worst < 0.99 {
		t.Errorf("int8: worst cosine %.5f with the numpy reference, want ≥ 0.99", worst)
	}
	t.Logf("int8 tiny model: worst cosine %.5f with the fp32 numpy reference", worst)
	if d, err := bert.Load("../testdata/tiny", bert.Options{}); err != nil || d.Precision() != bert.FP32 {
		t.Fatalf("default: %v, want fp32", err)
	}
	if _, err := bert.Load("../testdata/tiny", bert.Options{Precision: "fp16"}); err == nil || !strings.Contains(err.Error(), "fp16") {
		t.Fatalf("precision fp16: %v, want an error naming it", err)
	}
}
