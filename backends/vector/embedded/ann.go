package embedded

import (
	"math"
	"time"
)

// annParams decides when a store builds an IVF index (annbuild.go), its
// size, and how much of it a search visits (ivf.go). The defaults come
// from the measurements in docs/vector.md ("Approximate search").
type annParams struct {
	minRows      int     // build the IVF once the index holds this many rows; 0 never
	listsPerSqrt float64 // lists = listsPerSqrt·√rows
	probeLists   float64 // lists a k=10 unfiltered search visits, as a multiple of √lists (0.9: recall@10 0.98 at 1,000,000 rows for about a quarter less CPU than 1.5's 0.99: docs/vector.md)
	filterGrowth float64 // the lists visited grow as (rows/eligible)^filterGrowth (0.4: docs/vector.md) ...
	kGrowth      float64 // ... and as (k/10)^kGrowth (0.1: the retriever's k = 100 visits 1.26× the lists of k = 10; 0.25 before, 1.78×, recall@10 0.995 at 1,000,000 rows for 3.1 ms of CPU: docs/vector.md)
	minVisit     float64 // rows a k=10 unfiltered search visits at least
	walkCost     float64 // the cost of skipping a row in a list, relative to scoring one
	// denseProbe is the share of eligible rows from which a probe scores
	// every row of its lists and then drops the ineligible: codes read in
	// sequence cost about a quarter of codes read with gaps (measured at
	// 1,000,000 rows, a filter of 50%: 3.5 → 1.9 ms of CPU per query, the
	// same rows kept).
	denseProbe float64
	// regrow: a store trains anew once it holds regrow times the rows of
	// the last training's sample, or 1/regrow of them (annbuild.go).
	regrow float64
	// regroup: the store renumbers the rows by list, without training,
	// once the rows written since the last renumbering are this share of
	// those it laid out (annbuild.go). Rows outside their list's run are
	// read at random, about ten times the cost of a row in a run: through
	// the API, 1,000,000 rows freshly grouped cost 3.22 ms of CPU per
	// query, and 100,000 more left in the tail 3.98 ms (docs/vector.md).
	regroup float64
	// idleRegroup and idleAfter: once no write has come for idleAfter
	// (0: never), the store regroups the rows written since the last
	// renumbering if they are more than idleRegroup of those it laid out,
	// so a bulk load does not leave its tail (up to regroup) to the
	// queries that follow it.
	idleRegroup float64
	idleAfter   time.Duration
	sampleRows  int // k-means sample: this many rows per list
	iters       int // k-means iterations at most
	chunk       int // rows a build assigns per hold of the writers' mutex
}

var defaultANN = annParams{
	minRows:      DefaultANNMinRows,
	listsPerSqrt: 2,
	probeLists:   0.9,
	filterGrowth: 0.4,
	kGrowth:      0.1,
	minVisit:     20_000,
	walkCost:     0.1,
	denseProbe:   0.25,
	regrow:       1.5,
	regroup:      1.0 / 16,
	idleRegroup:  1.0 / 256,
	idleAfter:    DefaultIdleRegroup,
	sampleRows:   32,
	iters:        8,
	chunk:        2048,
}

// lists is the number of lists of an IVF over n rows.
func (p annParams) lists(n int) int {
	return max(1, int(math.Round(p.listsPerSqrt*math.Sqrt(float64(n)))))
}

// retrain reports whether an index of n rows whose live ivf is v needs a
// new training: it has grown or shrunk by the factor regrow since v's
// sample.
func (p annParams) retrain(v *ivf, n int) bool {
	return float64(n) >= p.regrow*float64(v.trained) || float64(n)*p.regrow <= float64(v.trained)
}

// ungrouped reports whether the rows written since v's last regroup are
// enough to regroup again: more than the share regroup of those it laid
// out, or, when the store is idle, idleRegroup.
func (p annParams) ungrouped(v *ivf, n int, idle bool) bool {
	share := p.regroup
	if idle {
		share = p.idleRegroup
	}
	return n > v.grouped && float64(n-v.grouped) > share*float64(v.grouped)
}

// buildLists is the number of lists a build over n rows trains, v being
// the live ivf it replaces (nil when there is none). A store that grew
// trains again at regrow·n rows, so in between the ideal count rises from
// lists(n) to lists(regrow·n): the build takes the count of the cycle's
// geometric middle, n·√regrow, which keeps it within regrow^¼ of the
// ideal (1.11 at 1.5) until the next training, and the rows a probe
// visits (about n/√lists) within regrow^⅛ (1.05) of a fresh index's. A
// first build (at Open, or at minRows) or one after a shrink takes lists(n).
func (p annParams) buildLists(v *ivf, n int) int {
	if v != nil && n > v.trained {
		return p.lists(int(float64(n) * math.Sqrt(p.regrow)))
	}
	return p.lists(n)
}

// probe returns how many lists a search visits at least, and how many
// eligible rows at least, among n rows of which eligible are the
// tenant's and match the filter, for the best k. A search for the best
// k of a fraction s of the rows needs about the neighbours a search for
// the best k/s of all rows does, so it visits (1/s)^filterGrowth times the
// lists (which keeps recall@10 level across filters: measured); a larger k
// visits (k/10)^kGrowth times the lists, less than a search for k/s, as
// the retriever's window of 100 matters mostly by its top.
func (p annParams) probe(n, nlist, eligible, k int) (minLists, need int) {
	sel := float64(n) / float64(max(eligible, 1))
	grow := math.Pow(sel, p.filterGrowth) * math.Pow(max(float64(k), 10)/10, p.kGrowth)
	lists := max(p.probeLists*math.Sqrt(float64(nlist)), p.minVisit*float64(nlist)/float64(n)) * grow
	minLists = min(nlist, int(math.Ceil(lists)))
	need = int(math.Ceil(float64(eligible) * float64(minLists) / float64(nlist)))
	return minLists, need
}

// exact reports whether scoring every eligible row costs less than a
// probe: the probe scores the centroids, walks its lists and scores the
// eligible rows in them.
func (p annParams) exact(n, nlist, eligible, k int) bool {
	minLists, need := p.probe(n, nlist, eligible, k)
	walked := float64(n) * float64(minLists) / float64(nlist)
	return float64(eligible) <= float64(nlist)+p.walkCost*walked+float64(need)
}
