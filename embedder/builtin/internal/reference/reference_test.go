package reference_test

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/ragd/ragd/embedder/builtin/internal/reference"
)

// The stored data must be what its meta file says and hold unit vectors with
// ids framed by [CLS] and [SEP]; a truncated or hand-edited file fails here.
func TestLoadReference(t *testing.T) {
	cases := reference.MustLoad(t, "../../testdata/"+reference.File)
	raw, err := os.ReadFile("../../testdata/reference_meta.json")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Texts        int `json:"texts"`
		MaxSeqLength int `json:"max_seq_length"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	if len(cases) != meta.Texts {
		t.Fatalf("%d cases, meta says %d", len(cases), meta.Texts)
	}
	kinds := map[string]int{}
	for _, c := range cases {
		kinds[c.Kind]++
		if len(c.Vec) != 384 {
			t.Fatalf("case %d: %d dimensions", c.Index, len(c.Vec))
		}
		var n float64
		for _, v := range c.Vec {
			n += float64(v) * float64(v)
		}
		if math.Abs(math.Sqrt(n)-1) > 1e-5 {
			t.Errorf("case %d: norm %v", c.Index, math.Sqrt(n))
		}
		if len(c.IDs) < 2 || len(c.IDs) > meta.MaxSeqLength || c.IDs[0] != 101 || c.IDs[len(c.IDs)-1] != 102 {
			t.Errorf("case %d: ids not [CLS] ... [SEP] within %d: %v", c.Index, meta.MaxSeqLength, c.IDs)
		}
	}
	for _, k := range []string{"ascii", "accents", "cjk", "control", "empty", "special", "long", "mixture", "abstract"} {
		if kinds[k] == 0 {
			t.Errorf("no case of kind %q", k)
		}
	}
}
