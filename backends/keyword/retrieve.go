package keyword

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/ragd/ragd/spi"
)

// Retrieve returns up to req.K refs ordered by descending score, ties by
// ascending id. req.Text is analysed with the index analyzer and matched as
// words, each term in title and text, and answered from the in-memory
// postings of impact.go; Score is the BM25 documented there (Lucene's
// formula with a document-level idf, summed over the two fields, the title
// weighted by Config.TitleBoost, repeated query words counted repeatedly).
// A query restricted to a tenant is scored with that tenant's statistics
// (impact.go); the metadata filter restricts the candidates without
// changing scores. Characters such as ':' '(' '"' have no meaning. Text
// that is empty or consists only of stop words and punctuation returns
// spi.ErrNothingToSearch without searching (the index answers it without
// looking, so the answer proves nothing about the index). With req.Syntax
// set, Text is parsed as bleve query-string syntax
// instead and scored by bleve's own BM25; unqualified terms then search the
// text field, and a parse error wraps spi.ErrInvalidQuery.
//
// K < 1, K > Config.MaxK, more than Config.MaxTerms query terms (or, with
// Syntax, term expansions) and an invalid filter wrap spi.ErrInvalidQuery.
// A done ctx stops the search and the error wraps ctx.Err().
func (b *Backend) Retrieve(ctx context.Context, req spi.KeywordRequest) ([]spi.Ref, error) {
	if req.K < 1 || req.K > b.cfg.MaxK {
		return nil, fmt.Errorf("keyword: retrieve: %w: k=%d, want 1..%d", spi.ErrInvalidQuery, req.K, b.cfg.MaxK)
	}
	if err := req.Filter.Validate(); err != nil {
		return nil, fmt.Errorf("keyword: retrieve: %w", err)
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, fmt.Errorf("keyword: retrieve: %w: empty text", spi.ErrNothingToSearch)
	}
	st, unlock, err := b.acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("keyword: retrieve: %w", err)
	}
	defer unlock()
	var q query.Query
	if req.Syntax {
		qs := bleve.NewQueryStringQuery(req.Text)
		if err := qs.Validate(); err != nil {
			return nil, fmt.Errorf("keyword: retrieve: %w: query syntax: %v", spi.ErrInvalidQuery, err)
		}
		parsed, err := qs.Parse()
		if err != nil {
			return nil, fmt.Errorf("keyword: retrieve: %w: query syntax: %v", spi.ErrInvalidQuery, err)
		}
		q = parsed
	} else {
		tokens := st.an.Analyze([]byte(req.Text))
		if len(tokens) == 0 {
			return nil, fmt.Errorf("keyword: retrieve: %w: no indexed word", spi.ErrNothingToSearch)
		}
		if len(tokens) > b.cfg.MaxTerms {
			return nil, fmt.Errorf("keyword: retrieve: %w: query has %d terms, at most %d allowed",
				spi.ErrInvalidQuery, len(tokens), b.cfg.MaxTerms)
		}
		terms := make([]string, len(tokens))
		for i, tok := range tokens {
			terms[i] = string(tok.Term)
		}
		refs, err := st.impact.search(ctx, terms, req.K, req.Tenant, req.Filter,
			bm25Params{k1: b.cfg.K1, b: b.cfg.B, titleWeight: b.cfg.TitleBoost})
		if err != nil {
			return nil, fmt.Errorf("keyword: retrieve: %w", ctxErr(ctx))
		}
		return refs, nil
	}
	// Every term query of a Syntax search (the expansions of a wildcard
	// included) and every filter value counts against bleve's limit.
	limit := 2*b.cfg.MaxTerms + 1
	for _, vs := range req.Filter {
		limit += len(vs)
	}
	sctx := context.WithValue(ctx, search.MaxTermSearchersKey, limit)
	if f := filterQuery(req.Tenant, req.Filter); f != nil {
		bq := query.NewBooleanQuery([]query.Query{q}, nil, nil)
		bq.AddFilter(f)
		q = bq
	}
	sr := bleve.NewSearchRequestOptions(q, req.K, 0, false)
	sr.SortBy([]string{"-_score", "_id"})
	res, err := st.idx.SearchInContext(sctx, sr)
	if err != nil {
		if cerr := ctxErr(ctx); cerr != nil {
			return nil, fmt.Errorf("keyword: retrieve: %w", cerr)
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("keyword: retrieve: %w", err)
		}
		if req.Syntax {
			// Searcher construction can still reject a parsed query:
			// a regexp bleve cannot compile, too many expansions.
			return nil, fmt.Errorf("keyword: retrieve: %w: %v", spi.ErrInvalidQuery, err)
		}
		return nil, fmt.Errorf("keyword: retrieve: %w: %v", spi.ErrUnavailable, err)
	}
	refs := make([]spi.Ref, 0, len(res.Hits))
	for _, h := range res.Hits {
		refs = append(refs, spi.Ref{ID: h.ID, Score: h.Score, Source: spi.SourceKeyword})
	}
	sort.SliceStable(refs, func(i, j int) bool {
		if refs[i].Score != refs[j].Score {
			return refs[i].Score > refs[j].Score
		}
		return refs[i].ID < refs[j].ID
	})
	return refs, nil
}

// filterQuery is the non-scoring restriction: the tenant term AND, per
// metadata key, any of the allowed values. Nil when there is nothing to
// restrict.
func filterQuery(tenant string, f spi.Filter) query.Query {
	var conj []query.Query
	if tenant != "" {
		t := query.NewTermQuery(tenant)
		t.SetField(fieldTenant)
		conj = append(conj, t)
	}
	for _, k := range f.Keys() {
		var alts []query.Query
		for _, v := range f[k] {
			t := query.NewTermQuery(v)
			t.SetField(fieldMetaPref + k)
			alts = append(alts, t)
		}
		dq := query.NewDisjunctionQuery(alts)
		dq.SetMin(1)
		conj = append(conj, dq)
	}
	switch len(conj) {
	case 0:
		return nil
	case 1:
		return conj[0]
	default:
		return query.NewConjunctionQuery(conj)
	}
}
