package eval

import (
	"math"
	"slices"
	"time"
)

// Judgments are one query's relevance labels: document id → grade. Grades
// above zero are relevant; zero and negative grades are judged non-relevant
// and contribute no gain.
type Judgments map[string]int

// NDCG is nDCG@k with linear gains, exactly as trec_eval / pytrec_eval
// "ndcg_cut.k": DCG = Σ_{i=1..k} g_i / log2(i+1), where g_i is the grade of
// the document at rank i (0 when unjudged or not positive), divided by the
// DCG of the judged grades sorted in descending order. A query without a
// positive grade scores 0. Duplicate ids in ranked count once, at their
// first rank.
func NDCG(ranked []string, j Judgments, k int) float64 {
	var dcg float64
	for i, id := range dedupe(ranked, k) {
		if g := j[id]; g > 0 {
			dcg += float64(g) / math.Log2(float64(i+2))
		}
	}
	grades := make([]int, 0, len(j))
	for _, g := range j {
		if g > 0 {
			grades = append(grades, g)
		}
	}
	slices.SortFunc(grades, func(a, b int) int { return b - a })
	var ideal float64
	for i, g := range grades[:min(k, len(grades))] {
		ideal += float64(g) / math.Log2(float64(i+2))
	}
	if ideal == 0 {
		return 0
	}
	return dcg / ideal
}

// Recall is Recall@k: the share of the relevant documents (grade > 0) found
// in the top k, as trec_eval "recall.k". A query without relevant documents
// scores 0.
func Recall(ranked []string, j Judgments, k int) float64 {
	rel := 0
	for _, g := range j {
		if g > 0 {
			rel++
		}
	}
	if rel == 0 {
		return 0
	}
	found := 0
	for _, id := range dedupe(ranked, k) {
		if j[id] > 0 {
			found++
		}
	}
	return float64(found) / float64(rel)
}

// ReciprocalRank is RR@k: 1/rank of the first relevant document within the
// top k, else 0. Averaged over queries it is MRR@k. (trec_eval's
// "recip_rank" has no cut-off; with k ≥ the run length they agree.)
func ReciprocalRank(ranked []string, j Judgments, k int) float64 {
	for i, id := range dedupe(ranked, k) {
		if j[id] > 0 {
			return 1 / float64(i+1)
		}
	}
	return 0
}

// dedupe returns the first k distinct ids of ranked.
func dedupe(ranked []string, k int) []string {
	out := make([]string, 0, min(k, len(ranked)))
	seen := make(map[string]bool, min(k, len(ranked)))
	for _, id := range ranked {
		if len(out) == k {
			break
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of ds by the
// nearest-rank method: the smallest value such that at least p% of the
// values are less than or equal to it. ds need not be sorted; it is not
// modified. An empty input returns 0.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p * float64(len(s)) / 100))
	rank = max(1, min(rank, len(s)))
	return s[rank-1]
}
