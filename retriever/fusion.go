package retriever

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/ragd/ragd/spi"
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
	return rankLists(lists, scorer(FusionRRF, lists, k), true).fused()
}

// FuseScore fuses lists by a weighted sum of min-max normalised raw scores:
// within each list, norm(x) = (x - min) / (max - min); a list with a single
// result or with all scores equal normalises every score to 1.0. A document
// absent from a list gets nothing from it. Ordering and merging as in FuseRRF.
func FuseScore(lists []RankedList) []Fused {
	return rankLists(lists, scorer(FusionScore, lists, 0), true).fused()
}

// FuseDBSF fuses lists with Distribution-Based Score Fusion: within each
// list, scores are mapped linearly from [μ - 3σ, μ + 3σ] to [0, 1] and clipped
// to that interval, where μ is the mean and σ the sample standard deviation
// (n - 1, as in Qdrant) of the list's raw scores. A list with a single result
// or with all scores equal normalises every score to 0.5, the image of μ.
// The normalised scores are weighted and summed; ordering and merging as in
// FuseRRF.
func FuseDBSF(lists []RankedList) []Fused {
	return rankLists(lists, scorer(FusionDBSF, lists, 0), true).fused()
}

// Fuse dispatches on mode (FusionRRF, FusionScore, FusionDBSF; "" means
// FusionRRF). k is used by RRF only. An unknown mode falls back to RRF;
// Query.Validate rejects unknown modes before they get here.
func Fuse(mode string, lists []RankedList, k int) []Fused {
	return rankLists(lists, scorer(mode, lists, k), true).fused()
}

// scorer returns the weighted contribution of the ref at position pos of
// list li with raw score raw, for mode.
func scorer(mode string, lists []RankedList, k int) func(li, pos int, raw float64) float64 {
	var bound func([]spi.Ref) normBounds
	switch mode {
	case FusionScore:
		bound = minMaxBounds
	case FusionDBSF:
		bound = distributionBounds
	default:
		if k < 1 {
			k = DefaultRRFK
		}
		fk := float64(k)
		return func(li, pos int, _ float64) float64 {
			return lists[li].Weight / (fk + float64(pos+1))
		}
	}
	bounds := make([]normBounds, len(lists))
	for i, l := range lists {
		bounds[i] = bound(l.Refs)
	}
	return func(li, _ int, raw float64) float64 {
		return lists[li].Weight * bounds[li].norm(raw)
	}
}

// rankKey is one distinct document in a ranking: its fused score and its
// number in ranking.ids.
type rankKey struct {
	score float64
	i     int32
}

// ranking is a fusion result before materialisation: keys in final order,
// the distinct ids by number, and optionally every document's Parts (nl
// entries per document, in number order).
type ranking struct {
	keys  []rankKey
	ids   []string
	parts []Contribution
	nl    int
}

func (r ranking) len() int            { return len(r.keys) }
func (r ranking) id(j int) string     { return r.ids[r.keys[j].i] }
func (r ranking) score(j int) float64 { return r.keys[j].score }
func (r ranking) partsOf(j int) []Contribution {
	i := int(r.keys[j].i)
	return r.parts[i*r.nl : (i+1)*r.nl : (i+1)*r.nl]
}

// fused materialises the ranking (parts must have been requested).
func (r ranking) fused() []Fused {
	out := make([]Fused, len(r.keys))
	for j := range r.keys {
		out[j] = Fused{ID: r.id(j), Score: r.score(j), Parts: r.partsOf(j)}
	}
	return out
}

// rankLists merges the lists by document id, scoring each ref with value.
// It works in two passes so every allocation is exactly sized: the first
// numbers the distinct ids, the second accumulates scores (and, withParts,
// fills one shared Parts backing array). It orders pointer-free keys, so
// callers that need only the top of the ranking never move Fused values.
func rankLists(lists []RankedList, value func(li, pos int, raw float64) float64, withParts bool) ranking {
	n := 0
	for _, l := range lists {
		n += len(l.Refs)
	}
	nl := len(lists)
	if n == 0 {
		return ranking{nl: nl}
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

	keys := make([]rankKey, len(ids))
	// seen marks (document, list) pairs already scored, so a repeated id
	// within one list keeps its first rank; with parts, Rank != 0 does that.
	var parts []Contribution
	var seen []bool
	if withParts {
		parts = make([]Contribution, len(ids)*nl)
	} else {
		seen = make([]bool, len(ids)*nl)
	}
	k = 0
	for li, l := range lists {
		for pos, r := range l.Refs {
			i := docOf[k]
			k++
			if i < 0 {
				continue
			}
			slot := int(i)*nl + li
			if withParts {
				if parts[slot].Rank != 0 {
					continue
				}
				c := value(li, pos, r.Score)
				parts[slot] = Contribution{Rank: pos + 1, RawScore: r.Score, Contribution: c}
				keys[i].score += c
				continue
			}
			if seen[slot] {
				continue
			}
			seen[slot] = true
			keys[i].score += value(li, pos, r.Score)
		}
	}
	for i := range keys {
		keys[i].i = int32(i)
	}
	slices.SortFunc(keys, func(a, b rankKey) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(ids[a.i], ids[b.i])
	})
	return ranking{keys: keys, ids: ids, parts: parts, nl: nl}
}

// idxPool recycles rankLists' id → number maps; clear keeps their capacity.
var idxPool = sync.Pool{New: func() any { return make(map[string]int32, 512) }}

// normBounds maps a raw score linearly from [lo, hi] to [0, 1], clipped.
// lo and hi are in units of scale: a power of two near the list's largest
// finite |score|, so that the sums and differences of normalisation stay
// finite for any finite scores (±1e300 made them ±Inf and the fused score
// NaN), and, being a power of two, change nothing in ordinary ranges. When
// flat is set (a degenerate list) every score maps to flatValue.
type normBounds struct {
	lo, hi    float64
	scale     float64
	flat      bool
	flatValue float64
}

func (b normBounds) norm(x float64) float64 {
	if !finiteScore(x) {
		return 0
	}
	if b.flat {
		return b.flatValue
	}
	v := (x/b.scale - b.lo) / (b.hi - b.lo)
	return min(max(v, 0), 1)
}

// finiteScore reports whether a raw score takes part in normalisation.
func finiteScore(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// scaleOf returns the scale of refs' finite scores (see normBounds): a
// power of two in (m/2, m] for the largest |score| m, so scaled scores lie
// in (-2, 2); 1 when every score is 0.
func scaleOf(refs []spi.Ref) float64 {
	m := 0.0
	for _, r := range refs {
		if finiteScore(r.Score) {
			m = max(m, math.Abs(r.Score))
		}
	}
	if m == 0 {
		return 1
	}
	_, e := math.Frexp(m) // m = f·2^e, f in [0.5, 1)
	return math.Ldexp(1, e-1)
}

// minMaxBounds returns the min-max bounds of refs' finite scores; a single
// score or all-equal scores normalise to 1.0.
func minMaxBounds(refs []spi.Ref) normBounds {
	scale := scaleOf(refs)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range refs {
		if finiteScore(r.Score) {
			x := r.Score / scale
			lo = min(lo, x)
			hi = max(hi, x)
		}
	}
	if !(hi > lo) {
		return normBounds{flat: true, flatValue: 1}
	}
	return normBounds{lo: lo, hi: hi, scale: scale}
}

// distributionBounds returns μ ± 3σ of refs' finite scores (sample standard
// deviation); fewer than two scores or σ = 0 normalise to 0.5.
func distributionBounds(refs []spi.Ref) normBounds {
	scale := scaleOf(refs)
	var n, mean, m2 float64 // Welford's online mean and variance
	for _, r := range refs {
		if !finiteScore(r.Score) {
			continue
		}
		x := r.Score / scale
		n++
		d := x - mean
		mean += d / n
		m2 += d * (x - mean)
	}
	if n < 2 {
		return normBounds{flat: true, flatValue: 0.5}
	}
	sd := math.Sqrt(m2 / (n - 1))
	if !(sd > 0) {
		return normBounds{flat: true, flatValue: 0.5}
	}
	return normBounds{lo: mean - 3*sd, hi: mean + 3*sd, scale: scale}
}
