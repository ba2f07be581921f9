package graphspec

import (
	"context"
	"fmt"
	"sort"

	"github.com/ragd/ragd/spi"
)

// Edge is one adjacency between two documents: To is one hop from From, and
// Connectors counts what joins them (shared non-hub entities, plus one when
// a link exists in either direction).
type Edge struct {
	From, To   string
	Connectors int
}

// AdjacencyFunc returns, for every document in from that exists and belongs
// to the request's tenant (any tenant when none is set), one Edge per
// distinct neighbour of that tenant other than itself. The backend closes
// over the tenant and the hub threshold. Unknown ids in from are ignored.
type AdjacencyFunc func(ctx context.Context, from []string) ([]Edge, error)

// ValidateExpand checks ExpandOptions: Hops must be 1..MaxHops and Limit at
// least 1; otherwise the error wraps spi.ErrInvalidQuery.
func ValidateExpand(opts spi.ExpandOptions) error {
	if opts.Hops < 1 || opts.Hops > MaxHops {
		return fmt.Errorf("%w: hops must be 1..%d, got %d", spi.ErrInvalidQuery, MaxHops, opts.Hops)
	}
	if opts.Limit < 1 {
		return fmt.Errorf("%w: limit must be at least 1, got %d", spi.ErrInvalidQuery, opts.Limit)
	}
	return nil
}

// ExpandScore encodes the ranking rule in one number: (3 - distance) +
// paths/(paths+1). Higher is better; any one-hop score beats any two-hop score.
func ExpandScore(distance, paths int) float64 {
	return float64(MaxHops+1-distance) + float64(paths)/float64(paths+1)
}

// Expand runs the shared expansion algorithm over adj and returns at most
// opts.Limit refs (Source spi.SourceGraphExpand) in the order of the ranking
// rule in the package comment. It calls adj once for the seeds and, when
// opts.Hops is 2, once for the distance-1 documents.
func Expand(ctx context.Context, seeds []string, opts spi.ExpandOptions, adj AdjacencyFunc) ([]spi.Ref, error) {
	if err := ValidateExpand(opts); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	seeds = Dedupe(seeds)
	if len(seeds) == 0 {
		return nil, nil
	}
	isSeed := make(map[string]bool, len(seeds))
	for _, s := range seeds {
		isSeed[s] = true
	}
	edges, err := adj(ctx, seeds)
	if err != nil {
		return nil, err
	}
	// Distance 1: paths = sum of connectors over seeds; remember how many
	// seeds reach each distance-1 document for the second hop.
	paths1 := map[string]int{}
	seedsOf := map[string]int{}
	for _, e := range edges {
		if !isSeed[e.From] || isSeed[e.To] || e.Connectors < 1 {
			continue
		}
		paths1[e.To] += e.Connectors
		seedsOf[e.To]++
	}
	refs := make([]spi.Ref, 0, len(paths1))
	for id, p := range paths1 {
		refs = append(refs, spi.Ref{ID: id, Score: ExpandScore(1, p), Source: spi.SourceGraphExpand})
	}
	if opts.Hops == 2 && len(paths1) > 0 {
		frontier := make([]string, 0, len(paths1))
		for id := range paths1 {
			frontier = append(frontier, id)
		}
		sort.Strings(frontier)
		edges, err := adj(ctx, frontier)
		if err != nil {
			return nil, err
		}
		paths2 := map[string]int{}
		for _, e := range edges {
			if _, ok := paths1[e.From]; !ok || isSeed[e.To] || e.Connectors < 1 {
				continue
			}
			if _, near := paths1[e.To]; near {
				continue
			}
			paths2[e.To] += seedsOf[e.From]
		}
		for id, p := range paths2 {
			refs = append(refs, spi.Ref{ID: id, Score: ExpandScore(2, p), Source: spi.SourceGraphExpand})
		}
	}
	SortRefs(refs)
	if len(refs) > opts.Limit {
		refs = refs[:opts.Limit]
	}
	return refs, nil
}

// SortRefs orders refs by descending score, then ascending id.
func SortRefs(refs []spi.Ref) {
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].Score != refs[j].Score {
			return refs[i].Score > refs[j].Score
		}
		return refs[i].ID < refs[j].ID
	})
}
