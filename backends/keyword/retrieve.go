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
		if b.cfg.Lean && hasPhrase(parsed) {
			return nil, fmt.Errorf("keyword: retrieve: %w: a phrase needs term positions, which a lean index does not keep", spi.ErrInvalidQuery)
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
	limit := 2*b.cfg.MaxTerms + 1 + filterSearchers(req.Filter.Root())
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

// filterQuery is the non-scoring restriction: the tenant term AND the
// metadata filter. Nil when there is nothing to restrict.
func filterQuery(tenant string, f spi.Filter) query.Query {
	var conj []query.Query
	if tenant != "" {
		t := query.NewTermQuery(tenant)
		t.SetField(fieldTenant)
		conj = append(conj, t)
	}
	if e := f.Root(); e != nil {
		conj = append(conj, exprQuery(e))
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

// exprQuery is e in bleve's terms (mapping.go's fields): $in a
// disjunction of terms (strings verbatim, other values by equality key), a numeric range on the numeric field
// (bleve's numbers are float64: integers beyond 2^53 compare rounded
// there, exactly in the impact path), a time range a term range over
// fixed-width times, $exists the key's term, $not everything but.
func exprQuery(e *spi.Expr) query.Query {
	switch e.Kind {
	case spi.ExprAnd:
		if len(e.Args) == 0 {
			return query.NewMatchAllQuery()
		}
		qs := make([]query.Query, len(e.Args))
		for i, a := range e.Args {
			qs[i] = exprQuery(a)
		}
		return query.NewConjunctionQuery(qs)
	case spi.ExprOr:
		qs := make([]query.Query, len(e.Args))
		for i, a := range e.Args {
			qs[i] = exprQuery(a)
		}
		dq := query.NewDisjunctionQuery(qs)
		dq.SetMin(1)
		return dq
	case spi.ExprNot:
		return query.NewBooleanQuery([]query.Query{query.NewMatchAllQuery()}, nil, []query.Query{exprQuery(e.Args[0])})
	case spi.ExprExists:
		t := query.NewTermQuery(e.Key)
		t.SetField(fieldMetaKeys)
		return t
	case spi.ExprIn:
		alts := make([]query.Query, len(e.Values))
		for i, v := range e.Values {
			if v.Kind() == spi.KindString {
				alts[i] = fieldTerm(fieldMetaPref+e.Key, v.Str())
			} else {
				alts[i] = fieldTerm(fieldMetaEq+e.Key, v.EqualityKey())
			}
		}
		dq := query.NewDisjunctionQuery(alts)
		dq.SetMin(1)
		return dq
	case spi.ExprCmp:
		v := e.Values[0]
		lower := e.Op == spi.OpGt || e.Op == spi.OpGte
		incl := e.Op == spi.OpGte || e.Op == spi.OpLte
		if v.Kind() == spi.KindTime {
			s := v.TimeValue().Format(spi.TimeLayout)
			var q *query.TermRangeQuery
			if lower {
				q = query.NewTermRangeInclusiveQuery(s, "", &incl, nil)
			} else {
				q = query.NewTermRangeInclusiveQuery("", s, nil, &incl)
			}
			q.SetField(fieldMetaTime + e.Key)
			return q
		}
		n := v.FloatValue()
		if v.Kind() == spi.KindInt {
			n = float64(v.IntValue())
		}
		var q *query.NumericRangeQuery
		if lower {
			q = query.NewNumericRangeInclusiveQuery(&n, nil, &incl, nil)
		} else {
			q = query.NewNumericRangeInclusiveQuery(nil, &n, nil, &incl)
		}
		q.SetField(fieldMetaNum + e.Key)
		return q
	}
	return query.NewMatchNoneQuery()
}

func fieldTerm(field, term string) query.Query {
	t := query.NewTermQuery(term)
	t.SetField(field)
	return t
}

// rangeSearchers is what one range may add to bleve's term-searcher
// count: a numeric range expands to at most a few hundred prefix-coded
// terms, a time range to the distinct times in it.
const rangeSearchers = 4096

// filterSearchers bounds the term searchers e's query opens.
func filterSearchers(e *spi.Expr) int {
	if e == nil {
		return 0
	}
	n := len(e.Values) + 1
	if e.Kind == spi.ExprCmp {
		n += rangeSearchers
	}
	for _, a := range e.Args {
		n += filterSearchers(a)
	}
	return n
}
