package eval_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/ragd/ragd/eval"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestNDCG(t *testing.T) {
	j := eval.Judgments{"d1": 2, "d3": 1, "d4": -1, "d6": 0}
	cases := []struct {
		name   string
		ranked []string
		k      int
		want   float64
	}{
		// Negative grades give no gain; DCG = 1/log2(3) + 2/log2(5),
		// ideal = 2/log2(2) + 1/log2(3). pytrec_eval ndcg_cut_10 printed
		// 0.5672074169568709 for this exact run.
		{"mixed", []string{"d4", "d3", "d5", "d1"}, 10, (1/math.Log2(3) + 2/math.Log2(5)) / (2 + 1/math.Log2(3))},
		{"perfect", []string{"d1", "d3", "d9"}, 10, 1},
		{"cut at 1", []string{"d3", "d1"}, 1, 1.0 / 2},
		{"cut at 2", []string{"d9", "d1"}, 2, (2 / math.Log2(3)) / (2 + 1/math.Log2(3))},
		{"nothing relevant retrieved", []string{"d4", "d6", "zz"}, 10, 0},
		{"empty ranking", nil, 10, 0},
		{"duplicates count once", []string{"d3", "d3", "d1"}, 10, (1 + 2/math.Log2(3)) / (2 + 1/math.Log2(3))},
	}
	for _, c := range cases {
		if got := eval.NDCG(c.ranked, j, c.k); !near(got, c.want) {
			t.Errorf("%s: NDCG = %.15f, want %.15f", c.name, got, c.want)
		}
	}
	if got := eval.NDCG([]string{"d4", "d3", "d5", "d1"}, j, 10); math.Abs(got-0.5672074169568709) > 1e-12 {
		t.Errorf("NDCG = %.16f, pytrec_eval says 0.5672074169568709", got)
	}
	if got := eval.NDCG([]string{"a"}, eval.Judgments{"a": 0, "b": -2}, 10); got != 0 {
		t.Errorf("query without positive grades: NDCG = %v, want 0", got)
	}
	// The ideal ranking uses the judged grades, also those never retrieved,
	// and only the top k of them.
	many := eval.Judgments{"a": 3, "b": 3, "c": 3, "d": 1}
	want := (1.0 / math.Log2(2)) / (3/math.Log2(2) + 3/math.Log2(3))
	if got := eval.NDCG([]string{"d", "x"}, many, 2); !near(got, want) {
		t.Errorf("NDCG@2 = %v, want %v", got, want)
	}
}

func TestRecall(t *testing.T) {
	j := eval.Judgments{"a": 1, "b": 2, "c": 0, "d": -1}
	cases := []struct {
		ranked []string
		k      int
		want   float64
	}{
		{[]string{"a", "b"}, 100, 1},
		{[]string{"c", "a", "d"}, 100, 0.5},
		{[]string{"x", "a", "b"}, 2, 0.5},
		{[]string{"a", "a"}, 100, 0.5},
		{nil, 100, 0},
	}
	for _, c := range cases {
		if got := eval.Recall(c.ranked, j, c.k); !near(got, c.want) {
			t.Errorf("Recall(%v, %d) = %v, want %v", c.ranked, c.k, got, c.want)
		}
	}
	if got := eval.Recall([]string{"a"}, eval.Judgments{"a": 0}, 100); got != 0 {
		t.Errorf("no relevant docs: Recall = %v", got)
	}
}

func TestReciprocalRank(t *testing.T) {
	j := eval.Judgments{"r": 1, "n": 0}
	cases := []struct {
		ranked []string
		k      int
		want   float64
	}{
		{[]string{"r"}, 10, 1},
		{[]string{"n", "x", "r"}, 10, 1.0 / 3},
		{[]string{"n", "x", "r"}, 2, 0},
		{[]string{"x", "x", "r"}, 10, 0.5}, // the duplicate does not take a rank
		{nil, 10, 0},
	}
	for _, c := range cases {
		if got := eval.ReciprocalRank(c.ranked, j, c.k); !near(got, c.want) {
			t.Errorf("RR(%v, %d) = %v, want %v", c.ranked, c.k, got, c.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	orig := slices.Clone(ds)
	for p, want := range map[float64]time.Duration{50: 50, 95: 95, 99: 99, 100: 100, 0.5: 1, 1: 1} {
		if got := eval.Percentile(ds, p); got != want*time.Millisecond {
			t.Errorf("p%v = %v, want %v", p, got, want*time.Millisecond)
		}
	}
	if !slices.Equal(ds, orig) {
		t.Error("Percentile modified its input")
	}
	ten := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if got := eval.Percentile(ten, 95); got != 10 {
		t.Errorf("p95 of 10 values = %v, want the 10th (nearest rank)", got)
	}
	if got := eval.Percentile(ten, 50); got != 5 {
		t.Errorf("p50 of 10 values = %v, want the 5th", got)
	}
	if got := eval.Percentile(nil, 50); got != 0 {
		t.Errorf("empty: %v", got)
	}
}
