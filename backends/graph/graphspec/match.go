package graphspec

import (
	"fmt"

	"github.com/ragd/ragd/internal/topk"
	"github.com/ragd/ragd/spi"
)

// ValidateMatch checks a MatchEntities request and returns its query tokens:
// K < 1 or an invalid filter wraps spi.ErrInvalidQuery. No tokens (empty or
// punctuation-only text) means no results and no error. Syntax is not
// checked here; each backend decides whether it has a query language.
func ValidateMatch(req spi.KeywordRequest) ([]string, error) {
	if req.K < 1 {
		return nil, fmt.Errorf("%w: k must be at least 1, got %d", spi.ErrInvalidQuery, req.K)
	}
	if err := req.Filter.Validate(); err != nil {
		return nil, err
	}
	return QueryTokens(req.Text), nil
}

// WeightedEntity is a matched entity and its weight.
type WeightedEntity struct {
	Name   string
	Weight float64
}

// TopEntities keeps the n heaviest entities (weight descending, name
// ascending) and drops those of weight zero or less. A query's common
// words match thousands of entities at a million documents: a bounded heap
// (internal/topk) keeps the n without sorting them all.
func TopEntities(ents []WeightedEntity, n int) []WeightedEntity {
	h := topk.NewHeap(n, entityBelow)
	for _, e := range ents {
		if e.Weight > 0 {
			h.Offer(e)
		}
	}
	return h.Sorted()
}

// entityBelow is TopEntities' order: a ranks below b.
func entityBelow(a, b WeightedEntity) bool {
	if a.Weight != b.Weight {
		return a.Weight < b.Weight
	}
	return a.Name > b.Name
}

// TopDocs turns per-document scores into at most k refs (Source
// spi.SourceGraph) ordered by descending score, then ascending id.
func TopDocs(scores map[string]float64, k int) []spi.Ref {
	refs := make([]spi.Ref, 0, len(scores))
	for id, s := range scores {
		refs = append(refs, spi.Ref{ID: id, Score: s, Source: spi.SourceGraph})
	}
	SortRefs(refs)
	if len(refs) > k {
		refs = refs[:k]
	}
	return refs
}
