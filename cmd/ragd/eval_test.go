package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ragd/ragd/spi/spitest"
)

// TestEvalCranfieldEmbedded runs `ragd eval` on the Cranfield collection
// with the built-in embedded stack and checks the table it prints: every
// mode is there with sane figures, keyword-only nDCG@10 stays at or above
// 0.385 (0.3924 measured; bm25s with a Snowball stemmer scores 0.3727), and
// the default hybrid is not below the best single source.
func TestEvalCranfieldEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("ingests 1,400 documents; skipped in -short mode")
	}
	dir := spitest.CranfieldDir(t)
	if code, _, _ := runRagd(t, "eval", dir, "-c", "does-not-exist.yaml"); code == 0 {
		t.Fatalf("an explicit missing config must fail, got exit 0")
	}
	// The hashing embedder: exact, needs no model (TestEvalCranfieldBuiltin
	// measures the built-in model).
	hashing := writeConfig(t, t.TempDir(), "  kind: hashing\n")
	code, stdout, stderr := runRagd(t, "eval", dir, "-c", hashing, "--modes", "keyword,vector,graph,hybrid")
	if code != 0 {
		t.Fatalf("ragd eval exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	row := regexp.MustCompile(`(?m)^\| (\w+) \| ([0-9.]+) \| ([0-9.]+) \| ([0-9.]+) \|.*\| (\d+) \|$`)
	got := map[string][]float64{}
	for _, m := range row.FindAllStringSubmatch(stdout, -1) {
		var vals []float64
		for _, s := range m[2:] {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("bad number %q in %q", s, m[0])
			}
			vals = append(vals, v)
		}
		got[m[1]] = vals
	}
	for _, mode := range []string{"keyword", "vector", "graph", "hybrid"} {
		v, ok := got[mode]
		if !ok {
			t.Fatalf("mode %s missing from the table:\n%s", mode, stdout)
		}
		ndcg, recall, mrr, queries := v[0], v[1], v[2], v[3]
		if queries != 225 {
			t.Errorf("%s: %v queries evaluated, want 225", mode, queries)
		}
		if ndcg <= 0.15 || ndcg > 1 || recall <= 0.4 || recall > 1 || mrr <= 0.25 || mrr > 1 {
			t.Errorf("%s: implausible figures nDCG@10 %v, Recall@100 %v, MRR@10 %v", mode, ndcg, recall, mrr)
		}
	}
	if k := got["keyword"][0]; k < 0.385 {
		t.Errorf("keyword-only nDCG@10 = %.4f, below the 0.385 floor", k)
	}
	for _, single := range []string{"keyword", "vector", "graph"} {
		if h, s := got["hybrid"][0], got[single][0]; h < s {
			t.Errorf("hybrid nDCG@10 %.4f is below %s's %.4f", h, single, s)
		}
	}
	if !strings.Contains(stdout, "hybrid vs keyword (best single source): ΔnDCG@10 = +") {
		t.Errorf("no paired test of hybrid against keyword:\n%s", stdout)
	}
	if !strings.Contains(stderr, "ingested 1398 documents") {
		t.Errorf("ingest summary missing or wrong:\n%s", stderr)
	}
}
