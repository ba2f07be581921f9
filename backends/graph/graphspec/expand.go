package graphspec

import (
	"context"
	"fmt"
	"sort"

	"github.com/ragd/ragd/spi"
)

// Edge is one adjacency between two documents: To is one hop from From, and
// Connectors counts what joins them (shared non-hub entities, plus one when
// a link exists in either direction). Excluded reports that To fails the
// request's metadata filter: the edge still carries paths, but To is never
// returned.
type Edge struct {
	From, To   string
	Connectors int
	Excluded   bool
}

// AdjacencyFunc returns, for every document in from that exists and belongs
// to the request's tenant (any tenant when none is set), one Edge per
// distinct neighbour of that tenant other than itself, with Excluded set
// when the neighbour fails the request's filter (never when there is none).
// The backend closes over the tenant, the filter and the hub threshold.
// Unknown ids in from are ignored.
type AdjacencyFunc func(ctx context.Context, from []string) ([]Edge, error)

// ValidateExpand checks ExpandOptions: Hops must be 1..MaxHops, Limit at
// least 1 and Filter valid (spi.Filter.Validate); otherwise the error wraps
// spi.ErrInvalidQuery.
func ValidateExpand(opts spi.ExpandOptions) error {
	if opts.Hops < 1 || opts.Hops > MaxHops {
		return fmt.Errorf("%w: hops must be 1..%d, got %d", spi.ErrInvalidQuery, MaxHops, opts.Hops)
	}
	if opts.Limit < 1 {
		return fmt.Errorf("%w: limit must be at least 1, got %d", spi.ErrInvalidQuery, opts.Limit)
	}
	return opts.Filter.Validate()
}

// ExpandScore encodes the ranking rule in one number: (3 - distance) +
// paths/(paths+1). Higher is better; any one-hop score beats any two-hop score.
func ExpandScore(distance, paths int) float64 {
	return float64(MaxHops+1-distance) + float64(paths)/float64(paths+1)
}

// Hop2 is one distance-2 candidate: its id and its path count.
type Hop2 struct {
	ID    string
	Paths int
}

// SecondHopFunc computes the second hop in one step. weights maps each
// distance-1 document to the number of seeds adjacent to it (whether or not
// that document passes the filter). It returns the documents adjacent to at
// least one of them (through the same adjacency as AdjacencyFunc) that are
// not in exclude and pass the request's filter, each with Paths = the sum of
// the weights of its distance-1 neighbours, ordered by Paths descending then
// id ascending, at most limit of them: the filter is applied before the
// limit cut. A backend provides it when it can aggregate server-side;
// SecondHopFromAdjacency derives it otherwise.
type SecondHopFunc func(ctx context.Context, weights map[string]int, exclude []string, limit int) ([]Hop2, error)

// SecondHopFromAdjacency implements SecondHopFunc over an AdjacencyFunc.
func SecondHopFromAdjacency(adj AdjacencyFunc) SecondHopFunc {
	return func(ctx context.Context, weights map[string]int, exclude []string, limit int) ([]Hop2, error) {
		frontier := make([]string, 0, len(weights))
		for id := range weights {
			frontier = append(frontier, id)
		}
		sort.Strings(frontier)
		edges, err := adj(ctx, frontier)
		if err != nil {
			return nil, err
		}
		skip := make(map[string]bool, len(exclude))
		for _, id := range exclude {
			skip[id] = true
		}
		paths := map[string]int{}
		for _, e := range edges {
			w, ok := weights[e.From]
			if !ok || skip[e.To] || e.Excluded || e.Connectors < 1 {
				continue
			}
			paths[e.To] += w
		}
		out := make([]Hop2, 0, len(paths))
		for id, p := range paths {
			out = append(out, Hop2{ID: id, Paths: p})
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].Paths != out[j].Paths {
				return out[i].Paths > out[j].Paths
			}
			return out[i].ID < out[j].ID
		})
		if len(out) > limit {
			out = out[:limit]
		}
		return out, nil
	}
}

// Expand runs the shared expansion algorithm and returns at most
// opts.Limit refs (Source spi.SourceGraphExpand) in the order of the ranking
// rule in the package comment, leaving out documents that fail the filter
// (Edge.Excluded) before the limit cut. It calls adj once for the seeds and,
// when opts.Hops is 2 and fewer than opts.Limit returnable documents lie at
// distance 1, hop2 once (SecondHopFromAdjacency(adj) when hop2 is nil).
// adj and hop2 must apply opts.Tenant and opts.Filter; Expand only validates
// them.
func Expand(ctx context.Context, seeds []string, opts spi.ExpandOptions, adj AdjacencyFunc, hop2 SecondHopFunc) ([]spi.Ref, error) {
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
	// seeds reach each distance-1 document for the second hop. A document
	// failing the filter is not returned but still leads to the second hop.
	paths1 := map[string]int{}
	seedsOf := map[string]int{}
	excluded := map[string]bool{}
	for _, e := range edges {
		if !isSeed[e.From] || isSeed[e.To] || e.Connectors < 1 {
			continue
		}
		paths1[e.To] += e.Connectors
		seedsOf[e.To]++
		if e.Excluded {
			excluded[e.To] = true
		}
	}
	refs := make([]spi.Ref, 0, len(paths1)-len(excluded))
	for id, p := range paths1 {
		if !excluded[id] {
			refs = append(refs, spi.Ref{ID: id, Score: ExpandScore(1, p), Source: spi.SourceGraphExpand})
		}
	}
	SortRefs(refs)
	if len(refs) >= opts.Limit {
		return refs[:opts.Limit], nil
	}
	if opts.Hops == 2 && len(paths1) > 0 {
		if hop2 == nil {
			hop2 = SecondHopFromAdjacency(adj)
		}
		exclude := make([]string, 0, len(seeds)+len(paths1))
		exclude = append(exclude, seeds...)
		for id := range paths1 {
			exclude = append(exclude, id)
		}
		sort.Strings(exclude)
		far, err := hop2(ctx, seedsOf, exclude, opts.Limit-len(refs))
		if err != nil {
			return nil, err
		}
		for _, h := range far {
			refs = append(refs, spi.Ref{ID: h.ID, Score: ExpandScore(2, h.Paths), Source: spi.SourceGraphExpand})
		}
	}
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
