// Package reference reads the built-in embedder's reference data: texts with
// the token ids of the Hugging Face tokenizers library and the sentence
// vectors of ONNX Runtime, written by embedder/builtin/testdata/gen_reference.py
// (see docs/embedders.md). Tests of the tokenizer and of the encoder compare
// with it; nothing outside tests imports this package.
package reference

import (
	"bufio"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"
)

// File is the reference data's name in embedder/builtin/testdata; a test
// passes the path relative to its own package, e.g. "../testdata/"+File.
const File = "reference.jsonl.gz"

// Case is one reference text.
type Case struct {
	Index int    // position in the file, from 0
	Kind  string // the generator's group: "ascii", "cjk", "control", "long", "mixture", ...
	Text  string
	// IDs are the token ids of the model's tokenizer.json with [CLS] and
	// [SEP], truncated to the model's max_seq_length (256), not padded.
	IDs []int32
	// Vec is the L2-normalised mean-pooled sentence vector of ONNX Runtime
	// on IDs (all-MiniLM-L6-v2, 384 dimensions).
	Vec []float32
}

type record struct {
	I    int     `json:"i"`
	Kind string  `json:"kind"`
	Text string  `json:"text"`
	IDs  []int32 `json:"ids"`
	Vec  string  `json:"vec"`
}

// Load reads the reference file at path.
func Load(path string) ([]Case, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("reference: %s: %w", path, err)
	}
	var cases []Case
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("reference: %s line %d: %w", path, len(cases)+1, err)
		}
		if r.I != len(cases) {
			return nil, fmt.Errorf("reference: %s line %d: index %d", path, len(cases)+1, r.I)
		}
		raw, err := base64.StdEncoding.DecodeString(r.Vec)
		if err != nil || len(raw)%4 != 0 {
			return nil, fmt.Errorf("reference: %s line %d: bad vector (%d bytes, %v)", path, len(cases)+1, len(raw), err)
		}
		vec := make([]float32, len(raw)/4)
		for i := range vec {
			vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		cases = append(cases, Case{Index: r.I, Kind: r.Kind, Text: r.Text, IDs: r.IDs, Vec: vec})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reference: %s: %w", path, err)
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("reference: %s: no cases", path)
	}
	return cases, nil
}

// MustLoad is Load for tests: it fails tb on an error.
func MustLoad(tb testing.TB, path string) []Case {
	tb.Helper()
	cases, err := Load(path)
	if err != nil {
		tb.Fatal(err)
	}
	return cases
}
