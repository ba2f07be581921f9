package builtin_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/ragd/ragd/embedder/builtin"
)

// TestTinyLayout opens the tiny random BERT of testdata/tiny (written by
// testdata/gen_tiny.py): CLS pooling, e5-style prompts "query: " and
// "passage: ", do_lower_case, max_seq_length 24; each role's vectors must
// match the generator's numpy reference.
func TestTinyLayout(t *testing.T) {
	m, err := builtin.Open(builtin.Config{Dir: "testdata/tiny", Name: "tiny", Precision: "fp32"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Dimension() != 32 || m.MaxSeqLength() != 24 {
		t.Fatalf("Dimension %d, MaxSeqLength %d; want 32, 24", m.Dimension(), m.MaxSeqLength())
	}
	id := m.Identity()
	for _, want := range []string{"pooling=cls", "normalize=true", "max_seq_length=24", `query_prefix="query: "`,
		`document_prefix="passage: "`, "lower_case=true"} {
		if !strings.Contains(id, want) {
			t.Errorf("Identity() = %s, want %s in it", id, want)
		}
	}
	raw, err := os.ReadFile("testdata/tiny/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Role, Text string
		Vec        []float32
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, c := range cases {
		e := m.Documents()
		if c.Role == "query" {
			e = m.Queries()
		}
		v, err := e.Embed(context.Background(), []string{c.Text})
		if err != nil {
			t.Fatal(err)
		}
		if cs := cosine(v[0], c.Vec); cs < 0.99999 {
			t.Errorf("%s %q: cosine %.7f with the numpy reference, want ≥ 0.99999", c.Role, c.Text, cs)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no case checked")
	}
}
