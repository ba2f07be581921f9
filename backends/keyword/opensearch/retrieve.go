package opensearch

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/ragd/ragd/spi"
)

// Retrieve returns up to req.K refs ordered by descending score, ties by
// ascending id. req.Text is matched as words: analysed by the cluster
// with the index's analyzer, each word searched in title (weighted by
// Config.TitleBoost) and text, the two fields' BM25 summed (multi_match
// most_fields); a word repeated counts repeatedly. A request scoped to a
// tenant searches that tenant's index only, with its own statistics; an
// unscoped one searches every tenant's with the collection's statistics
// (dfs_query_then_fetch). The metadata filter restricts without scoring.
//
// Text that is empty or holds no word the analyzer keeps returns
// spi.ErrNothingToSearch without contacting the cluster (the same
// analyzer runs in ragd to tell). With req.Syntax, Text is OpenSearch's
// query_string syntax on the text field; one the cluster cannot parse
// wraps spi.ErrInvalidQuery.
//
// K < 1, K > Config.MaxK, more than Config.MaxTerms terms and an invalid
// filter wrap spi.ErrInvalidQuery. A done ctx stops the call and the
// error wraps ctx's error.
func (b *Backend) Retrieve(ctx context.Context, req spi.KeywordRequest) ([]spi.Ref, error) {
	if req.K < 1 || req.K > b.cfg.MaxK {
		return nil, fmt.Errorf("keyword/opensearch: retrieve: %w: k=%d, want 1..%d", spi.ErrInvalidQuery, req.K, b.cfg.MaxK)
	}
	if err := req.Filter.Validate(); err != nil {
		return nil, fmt.Errorf("keyword/opensearch: retrieve: %w", err)
	}
	if e := req.Filter.Root(); e != nil {
		if _, err := filterQuery(e); err != nil {
			return nil, fmt.Errorf("keyword/opensearch: retrieve: %w", err)
		}
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, fmt.Errorf("keyword/opensearch: retrieve: %w: empty text", spi.ErrNothingToSearch)
	}
	if !req.Syntax {
		n := len(b.local.Analyze([]byte(req.Text)))
		if n == 0 {
			return nil, fmt.Errorf("keyword/opensearch: retrieve: %w: no indexed word", spi.ErrNothingToSearch)
		}
		if n > b.cfg.MaxTerms {
			return nil, fmt.Errorf("keyword/opensearch: retrieve: %w: query has %d terms, at most %d allowed",
				spi.ErrInvalidQuery, n, b.cfg.MaxTerms)
		}
	}
	if err := b.live(); err != nil {
		return nil, err
	}
	index := b.n.tenantPattern()
	if req.Tenant != "" {
		index = b.n.tenant(req.Tenant)
	}
	params := searchParams()
	params.Set("allow_partial_search_results", "false")
	if req.Tenant == "" || b.cfg.Shards > 1 {
		params.Set("search_type", "dfs_query_then_fetch")
	}
	search := func(body map[string]any) ([]spi.Ref, error) {
		r, err := b.c.do(ctx, http.MethodPost, "/"+index+"/_search", params, body)
		if err != nil {
			return nil, fmt.Errorf("keyword/opensearch: retrieve: %w", err)
		}
		if r.status != http.StatusOK {
			return nil, fmt.Errorf("keyword/opensearch: retrieve: %w", failure(r))
		}
		refs, err := parseHits(r.body)
		if err != nil {
			return nil, fmt.Errorf("keyword/opensearch: retrieve: %w", err)
		}
		return refs, nil
	}
	// First by score alone, one more than K: Lucene then skips the
	// documents that cannot enter the top (block-max WAND), which a sort
	// with a tie-breaking field rules out. When the one past K scores below
	// the K-th, no document left out ties with the answer's last, and
	// ordering the K by (score, id) here is exact; otherwise the ties at
	// the cut are resolved by asking again with the id as tie-breaker.
	refs, err := search(b.searchBody(req, false))
	if err != nil {
		return nil, err
	}
	if len(refs) > req.K && refs[req.K].Score >= refs[req.K-1].Score {
		return search(b.searchBody(req, true))
	}
	refs = refs[:min(len(refs), req.K)]
	slices.SortFunc(refs, func(x, y spi.Ref) int {
		if c := cmp.Compare(y.Score, x.Score); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	return refs, nil
}

// searchBody is the search request: the query, the filter, the order.
// byID asks for req.K hits ordered by score, then id; otherwise req.K+1
// in the cluster's score order (ties in index order).
func (b *Backend) searchBody(req spi.KeywordRequest, byID bool) map[string]any {
	var match map[string]any
	if req.Syntax {
		match = map[string]any{"query_string": map[string]any{
			"query": req.Text, "default_field": "text", "allow_leading_wildcard": false,
		}}
	} else {
		match = map[string]any{"multi_match": map[string]any{
			"query": req.Text, "type": "most_fields", "operator": "or",
			"fields": []string{"title^" + strconv.FormatFloat(b.cfg.TitleBoost, 'g', -1, 64), "text"},
		}}
	}
	filters := []any{}
	if e := req.Filter.Root(); e != nil {
		fq, _ := filterQuery(e) // Retrieve refused what filterQuery cannot answer
		filters = append(filters, fq)
	}
	q := map[string]any{"bool": map[string]any{"must": []any{match}, "filter": filters}}
	body := map[string]any{
		"query":            q,
		"_source":          false,
		"track_total_hits": false,
	}
	if byID {
		body["size"] = req.K
		body["sort"] = []any{map[string]any{"_score": "desc"}, map[string]any{"id": "asc"}}
	} else {
		body["size"] = req.K + 1
		body["docvalue_fields"] = []string{"id"}
	}
	return body
}

// parseHits reads a search answer's hits as refs: the score and the id
// are the sort values or, unsorted, _score and the id field's doc value
// (the _id may be a hash of the id, schema.go).
func parseHits(body []byte) ([]spi.Ref, error) {
	var res struct {
		TimedOut bool `json:"timed_out"`
		Shards   struct {
			Failed int `json:"failed"`
		} `json:"_shards"`
		Hits struct {
			Hits []struct {
				Sort   []json.RawMessage `json:"sort"`
				Score  *float64          `json:"_score"`
				Fields struct {
					ID []string `json:"id"`
				} `json:"fields"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, fmt.Errorf("%w: unreadable answer: %v", spi.ErrUnavailable, err)
	}
	if res.TimedOut || res.Shards.Failed > 0 {
		return nil, fmt.Errorf("%w: partial answer (%d shard(s) failed, timed out %v)", spi.ErrUnavailable, res.Shards.Failed, res.TimedOut)
	}
	refs := make([]spi.Ref, 0, len(res.Hits.Hits))
	for _, h := range res.Hits.Hits {
		if h.Sort == nil && h.Score != nil && len(h.Fields.ID) == 1 {
			refs = append(refs, spi.Ref{ID: h.Fields.ID[0], Score: *h.Score, Source: spi.SourceKeyword})
			continue
		}
		if len(h.Sort) != 2 {
			return nil, fmt.Errorf("%w: a hit without its sort values", spi.ErrUnavailable)
		}
		var score float64
		var id string
		if json.Unmarshal(h.Sort[0], &score) != nil || json.Unmarshal(h.Sort[1], &id) != nil {
			return nil, fmt.Errorf("%w: unreadable sort values", spi.ErrUnavailable)
		}
		refs = append(refs, spi.Ref{ID: id, Score: score, Source: spi.SourceKeyword})
	}
	return refs, nil
}
