package retriever

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/ragd/ragd/spi"
)

// Fusion modes accepted in FusionOptions.Mode.
const (
	// FusionRRF is weighted Reciprocal Rank Fusion: Σ w_s / (k + rank_s).
	FusionRRF = "rrf"
	// FusionScore is a weighted sum of per-source min-max normalised scores.
	FusionScore = "score"
	// FusionDBSF is Distribution-Based Score Fusion: a weighted sum of
	// per-source scores normalised with mean ± 3σ and clipped to [0, 1].
	FusionDBSF = "dbsf"
)

// DefaultRRFK is the RRF rank constant of Cormack, Clarke and Büttcher
// (SIGIR 2009), also the default of Elasticsearch, OpenSearch, Vespa and
// LangChain.
const DefaultRRFK = 60

// RankedList is one source's answer as fusion input: refs ordered best first
// (rank = index + 1), the source's name and its weight. Weights are expected
// to be non-negative; the fusion functions use them as given.
type RankedList struct {
	Source string
	Weight float64
	Refs   []spi.Ref
}

// Contribution is one source's part in a fused score: the document's 1-based
// rank in that source's list, the source's raw score for it, and the weighted
// amount it added to the fused score.
type Contribution struct {
	Rank         int     `json:"rank"`
	RawScore     float64 `json:"raw_score"`
	Contribution float64 `json:"contribution"`
}

// Fused is one document after fusion. Parts has one entry per input list, in
// the order of the lists; an entry with Rank 0 means that list did not contain
// the document.
type Fused struct {
	ID    string
	Score float64
	Parts []Contribution
}

// FuseRRF fuses lists with weighted Reciprocal Rank Fusion:
//
//	score(d) = Σ_s w_s / (k + rank_s(d))
//
// with 1-based ranks, summed over the lists that contain d. k < 1 selects
// DefaultRRFK. Raw scores are ignored (only recorded in Parts). Documents are
// merged by ID across lists; a repeated ID within one list keeps its first
// (best) rank. The result is ordered by fused score descending, then ID
// ascending.
func FuseRRF(lists []RankedList, k int) []Fused {
	if k < 1 {
		k = DefaultRRFK
	}
	fk := float64(k)
	return fuse(lists, func(li, pos int, _ float64) float64 {
		return lists[li].Weight / (fk + float64(pos+1))
	})
}

// FuseScore fuses lists by a weighted sum of min-max normalised raw scores:
// within each list, norm(x) = (x - min) / (max - min); a list with a single
// result or with all scores equal normalises every score to 1.0. A document
// absent from a list gets nothing from it. Ordering and merging as in FuseRRF.
func FuseScore(lists []RankedList) []Fused {
	bounds := make([]normBounds, len(lists))
	for i, l := range lists {
		bounds[i] = minMaxBounds(l.Refs)
	}
	return fuse(lists, func(li, _ int, raw float64) float64 {
		return lists[li].Weight * bounds[li].norm(raw)
	})
}

// FuseDBSF fuses lists with Distribution-Based Score Fusion: within each
// list, scores are mapped linearly from [μ - 3σ, μ + 3σ] to [0, 1] and clipped
// to that interval, where μ is the mean and σ the sample standard deviation
// (n - 1, as in Qdrant) of the list's raw scores. A list with a single result
// or with all scores equal normalises every score to 0.5, the image of μ.
// The normalised scores are weighted and summed; ordering and merging as in
// FuseRRF.
func FuseDBSF(lists []RankedList) []Fused {
	bounds := make([]normBounds, len(lists))
	for i, l := range lists {
		bounds[i] = distributionBounds(l.Refs)
	}
	return fuse(lists, func(li, _ int, raw float64) float64 {
		return lists[li].Weight * bounds[li].norm(raw)
	})
}

// Fuse dispatches on mode (FusionRRF, FusionScore, FusionDBSF; "" means
// FusionRRF). k is used by RRF only. An unknown mode falls back to RRF;
// Query.Validate rejects unknown modes before they get here.
func Fuse(mode string, lists []RankedList, k int) []Fused {
	switch mode {
	case FusionScore:
		return FuseScore(lists)
	case FusionDBSF:
		return FuseDBSF(lists)
	default:
		return FuseRRF(lists, k)
	}
}

// fuse merges the lists by document id. value returns the weighted
// contribution of the ref at position pos of list li with raw score raw.
//
// It works in two passes so every allocation is exactly sized: the first
// numbers the distinct ids, the second fills one shared Parts backing array
// and the scores. Ordering sorts pointer-free keys and builds the result
// once, since moving Fused values (which hold pointers) costs write barriers.
func fuse(lists []RankedList, value func(li, pos int, raw float64) float64) []Fused {
	n := 0
	for _, l := range lists {
		n += len(l.Refs)
	}
	if n == 0 {
		return []Fused{}
	}
	idx := idxPool.Get().(map[string]int32)
	defer func() {
		clear(idx)
		idxPool.Put(idx)
	}()
	ids := make([]string, 0, n)
	docOf := make([]int32, n) // distinct-id number of each ref, -1 for none
	k := 0
	for _, l := range lists {
		for _, r := range l.Refs {
			if r.ID == "" {
				docOf[k] = -1
				k++
				continue
			}
			i, ok := idx[r.ID]
			if !ok {
				i = int32(len(ids))
				idx[r.ID] = i
				ids = append(ids, r.ID)
			}
			docOf[k] = i
			k++
		}
	}

	nl := len(lists)
	type key struct {
		score float64
		i     int32
	}
	keys := make([]key, len(ids))
	parts := make([]Contribution, len(ids)*nl) // one backing array for every Parts slice
	k = 0
	for li, l := range lists {
		for pos, r := range l.Refs {
			i := docOf[k]
			k++
			if i < 0 {
				continue
			}
			p := &parts[int(i)*nl+li]
			if p.Rank != 0 {
				continue // repeated id within one list: keep the first rank
			}
			c := value(li, pos, r.Score)
			*p = Contribution{Rank: pos + 1, RawScore: r.Score, Contribution: c}
			keys[i].score += c
		}
	}
	for i := range keys {
		keys[i].i = int32(i)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(ids[a.i], ids[b.i])
	})
	out := make([]Fused, len(keys))
	for j, kk := range keys {
		i := int(kk.i)
		out[j] = Fused{ID: ids[i], Score: kk.score, Parts: parts[i*nl : (i+1)*nl : (i+1)*nl]}
	}
	return out
}

// idxPool recycles fuse's id → number maps; clear keeps their capacity.
var idxPool = sync.Pool{New: func() any { return make(map[string]int32, 512) }}

// normBounds maps a raw score linearly from [lo, hi] to [0, 1], clipped.
// When flat is set (a degenerate list) every score maps to flatValue.
type normBounds struct {
	lo, hi    float64
	flat      bool
	flatValue float64
}

func (b normBounds) norm(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	if b.flat {
		return b.flatValue
	}
	v := (x - b.lo) / (b.hi - b.lo)
	return min(max(v, 0), 1)
}

// minMaxBounds returns the min-max bounds of refs' finite scores; a single
// score or all-equal scores normalise to 1.0.
func minMaxBounds(refs []spi.Ref) normBounds {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range refs {
		if math.IsNaN(r.Score) || math.IsInf(r.Score, 0) {
			continue
		}
		lo = min(lo, r.Score)
		hi = max(hi, r.Score)
	}
	if !(hi > lo) {
		return normBounds{flat: true, flatValue: 1}
	}
	return normBounds{lo: lo, hi: hi}
}

// distributionBounds returns μ ± 3σ of refs' finite scores (sample standard
// deviation); fewer than two scores or σ = 0 normalise to 0.5.
func distributionBounds(refs []spi.Ref) normBounds {
	var n, mean, m2 float64 // Welford's online mean and variance
	for _, r := range refs {
		if math.IsNaN(r.Score) || math.IsInf(r.Score, 0) {
			continue
		}
		n++
		d := r.Score - mean
		mean += d / n
		m2 += d * (r.Score - mean)
	}
	if n < 2 {
		return normBounds{flat: true, flatValue: 0.5}
	}
	sd := math.Sqrt(m2 / (n - 1))
	if !(sd > 0) {
		return normBounds{flat: true, flatValue: 0.5}
	}
	return normBounds{lo: mean - 3*sd, hi: mean + 3*sd}
}

// page returns fused[offset:offset+limit] restricted to the first window
// entries; a page beyond the window is empty.
func page(fused []Fused, window, offset, limit int) []Fused {
	n := min(len(fused), window)
	if offset >= n || limit <= 0 {
		return nil
	}
	return fused[offset:min(offset+limit, n)]
}
