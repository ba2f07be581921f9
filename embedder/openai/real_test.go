package openai_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/ragd/ragd/embedder/openai"
	"github.com/ragd/ragd/internal/testenv"
)

// TestRealModel embeds sentences with the real model that
// scripts/services.sh serves on loopback (testenv.Embedder): the vectors
// have the model's dimension, and a paraphrase scores closer to its
// sentence than an unrelated sentence does.
func TestRealModel(t *testing.T) {
	conn := testenv.Embedder(t)
	e, err := openai.New(openai.Config{BaseURL: conn.URL, Model: conn.Model, Dimension: conn.Dimension})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := e.Probe(ctx); err != nil {
		t.Fatalf("probe: %v", err)
	}
	triples := []struct{ text, paraphrase, unrelated string }{
		{"The circuit breaker opens after five consecutive failures.",
			"After five failures in a row the breaker trips open.",
			"Fresh basil should be added at the end of cooking."},
		{"What is the pressure distribution on a swept wing at supersonic speed?",
			"Supersonic flow over swept wings: how is the surface pressure distributed?",
			"The museum is closed on public holidays."},
	}
	for _, tr := range triples {
		v, err := e.Embed(ctx, []string{tr.text, tr.paraphrase, tr.unrelated})
		if err != nil {
			t.Fatalf("embed: %v", err)
		}
		if len(v) != 3 {
			t.Fatalf("got %d vectors for 3 texts", len(v))
		}
		for i, x := range v {
			if len(x) != conn.Dimension {
				t.Fatalf("vector %d has %d numbers, want %d", i, len(x), conn.Dimension)
			}
		}
		near, far := cosine(v[0], v[1]), cosine(v[0], v[2])
		t.Logf("cos(text, paraphrase) = %.3f, cos(text, unrelated) = %.3f: %q", near, far, tr.text)
		if near <= far {
			t.Errorf("%q: paraphrase scores %.3f, unrelated sentence %.3f; want the paraphrase closer", tr.text, near, far)
		}
	}
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}
