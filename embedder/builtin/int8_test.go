package builtin_test

import (
	"context"
	"testing"

	"github.com/ragd/ragd/embedder/builtin"
	"github.com/ragd/ragd/embedder/builtin/internal/reference"
	"github.com/ragd/ragd/internal/integration"
)

// TestInt8Fidelity: the int8 encoder's vectors of the reference texts
// (unicode, accents, CJK, very long, empty after tokenisation, ...) against
// the fp32 encoder's and ONNX Runtime's: min cosine ≥ 0.99, the bar for
// offering it at all (docs/embedders.md has the retrieval quality).
func TestInt8Fidelity(t *testing.T) {
	dir := integration.ModelDir(t)
	f32 := openMiniLM(t)
	q8, err := builtin.Open(builtin.Config{Dir: dir, Name: "sentence-transformers/all-MiniLM-L6-v2", Precision: "int8"})
	if err != nil {
		t.Fatal(err)
	}
	defer q8.Close()
	if q8.Precision() != "int8" || f32.Precision() != "fp32" {
		t.Fatalf("precisions %q and %q", q8.Precision(), f32.Precision())
	}
	if id := q8.Identity(); id != f32.Identity()+" precision=int8" {
		t.Fatalf("int8 identity %q, want the fp32 one (%q) with precision=int8", id, f32.Identity())
	}
	cases := reference.MustLoad(t, "testdata/"+reference.File)
	var texts []string
	for _, c := range cases {
		texts = append(texts, c.Text)
	}
	ctx := context.Background()
	a, err := f32.Documents().Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := q8.Documents().Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	minF, minR, sumF := 1.0, 1.0, 0.0
	for i, c := range cases {
		cf, cr := cosine(a[i], b[i]), cosine(c.Vec, b[i])
		minF, minR, sumF = min(minF, cf), min(minR, cr), sumF+cf
		if cf < 0.99 {
			t.Errorf("case %d (%s): int8 vector has cosine %.5f with fp32's, want ≥ 0.99", c.Index, c.Kind, cf)
		}
	}
	t.Logf("%d texts: int8 against fp32 cosine min %.5f mean %.5f; against ONNX Runtime (fp32) min %.5f",
		len(cases), minF, sumF/float64(len(cases)), minR)
}
