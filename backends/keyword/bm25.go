package keyword

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"reflect"

	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// Scoring of plain-text queries: Lucene's BM25, computed here.
//
// bleve's own BM25 differs from the textbook formula in ways that cost
// quality: term frequency enters as sqrt(freq), every term's score is
// multiplied by its idf a second time (through the query weight), and a
// disjunction multiplies by coord = matched clauses / all clauses. This
// query scores each (term, field) pair as Lucene's BM25Similarity does,
//
//	qtf · w_field · idf · f / (f + k1 · (1 − b + b · len / avglen))
//	idf = ln(1 + (N − df + 0.5) / (df + 0.5))
//
// and sums over the query's distinct terms and the fields, as Lucene's
// and Elasticsearch's multi-field "most_fields" search does: a term in the
// title and in the text is two pieces of evidence, each saturating on its
// own. qtf is the term's count in the query (query term frequency), w_field
// the field weight (text 1, title Config.TitleBoost). N is the number of
// live documents, df the live documents containing the term in any of the
// fields (a document-level idf, as in BM25F), len the field's analysed
// token count (recovered from the index's length
// norm) and avglen the exact average from the totals kept in stats.go.
//
// The searcher walks the postings of all pairs document by document (a
// heap ordered by internal id), so bleve's filter and top-K collector work
// on it unchanged.

// Default BM25 parameters: Lucene's and Elasticsearch's defaults.
const (
	DefaultK1 = 1.2
	DefaultB  = 0.75
)

// bm25Field is one searched field with its weight and average length.
type bm25Field struct {
	name   string
	weight float64
	avgLen float64
}

// bm25Query is a query.Query over the analysed terms of a plain-text query.
type bm25Query struct {
	terms    []string // distinct, in first-occurrence order
	qtf      []int    // count of terms[i] in the query
	fields   []bm25Field
	docCount uint64
	k1, b    float64
}

var _ query.Query = (*bm25Query)(nil)

func newBM25Query(tokens []string, fields []bm25Field, docCount uint64, k1, b float64) *bm25Query {
	q := &bm25Query{fields: fields, docCount: docCount, k1: k1, b: b}
	pos := make(map[string]int, len(tokens))
	for _, t := range tokens {
		if i, ok := pos[t]; ok {
			q.qtf[i]++
			continue
		}
		pos[t] = len(q.terms)
		q.terms = append(q.terms, t)
		q.qtf = append(q.qtf, 1)
	}
	return q
}

// Searcher opens one postings reader per (term, field) pair that has
// matches.
func (q *bm25Query) Searcher(ctx context.Context, r index.IndexReader, _ mapping.IndexMapping, _ search.SearcherOptions) (search.Searcher, error) {
	s := &bm25Searcher{k1: q.k1, b: q.b}
	for i, term := range q.terms {
		clauses, err := q.termClauses(ctx, r, term, float64(q.qtf[i]))
		s.all = append(s.all, clauses...)
		if err != nil {
			s.Close()
			return nil, err
		}
	}
	for _, c := range s.all {
		if c.cur != nil {
			s.h = append(s.h, c)
		}
	}
	heap.Init(&s.h)
	return s, nil
}

// termClauses opens the clauses of one term, positioned on their first
// document. The idf is the term's document frequency over all the fields
// together (as in BM25F): how rare a word is is a property of the
// documents, not of the field it is found in.
func (q *bm25Query) termClauses(ctx context.Context, r index.IndexReader, term string, qtf float64) ([]*bm25Clause, error) {
	var (
		clauses []*bm25Clause
		fields  []string
		dfs     []uint64
	)
	for _, f := range q.fields {
		if f.weight <= 0 || f.avgLen <= 0 {
			continue
		}
		tfr, err := r.TermFieldReader(ctx, []byte(term), f.name, true, true, false)
		if err != nil {
			return clauses, err
		}
		c := &bm25Clause{tfr: tfr, weight: qtf * f.weight, avgLen: f.avgLen, df: tfr.Count()}
		clauses = append(clauses, c)
		if c.df > 0 {
			fields, dfs = append(fields, f.name), append(dfs, c.df)
		}
	}
	var df uint64
	switch len(fields) {
	case 0:
		return clauses, nil
	case 1:
		df = dfs[0]
	case 2:
		var err error
		if df, err = unionCount(ctx, r, term, fields, dfs); err != nil {
			return clauses, err
		}
	default:
		return clauses, fmt.Errorf("keyword: bm25 over %d fields", len(fields)) // a bug: two are searched
	}
	n := float64(q.docCount)
	idf := math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
	for _, c := range clauses {
		c.weight *= idf
		if c.df == 0 {
			continue
		}
		var err error
		if c.cur, err = c.tfr.Next(&index.TermFieldDoc{}); err != nil {
			return clauses, err
		}
	}
	return clauses, nil
}

// unionCount is the number of live documents holding term in either of two
// fields: the larger field's count plus the documents of the smaller one
// that the larger one lacks, found by walking the smaller postings list.
func unionCount(ctx context.Context, r index.IndexReader, term string, fields []string, dfs []uint64) (uint64, error) {
	small, large := 0, 1
	if dfs[0] > dfs[1] {
		small, large = 1, 0
	}
	rs, err := r.TermFieldReader(ctx, []byte(term), fields[small], false, false, false)
	if err != nil {
		return 0, err
	}
	defer rs.Close()
	rl, err := r.TermFieldReader(ctx, []byte(term), fields[large], false, false, false)
	if err != nil {
		return 0, err
	}
	defer rl.Close()
	n := dfs[large]
	var ds, dl *index.TermFieldDoc
	for {
		if ds, err = rs.Next(ds); err != nil || ds == nil {
			return n, err
		}
		if dl != nil && dl.ID.Compare(ds.ID) >= 0 {
			if !dl.ID.Equals(ds.ID) {
				n++
			}
			continue
		}
		next, err := rl.Advance(ds.ID, dl)
		if err != nil {
			return 0, err
		}
		if next == nil {
			// The larger list is exhausted: every remaining document of
			// the smaller one is missing from it.
			n++
			for {
				if ds, err = rs.Next(ds); err != nil || ds == nil {
					return n, err
				}
				n++
			}
		}
		if dl = next; !dl.ID.Equals(ds.ID) {
			n++
		}
	}
}

// bm25Clause is one (term, field) pair and its position in the postings.
type bm25Clause struct {
	tfr    index.TermFieldReader
	cur    *index.TermFieldDoc // nil once exhausted
	weight float64             // qtf · field weight · idf
	avgLen float64
	df     uint64
}

// bm25Searcher is the document-at-a-time disjunction of the clauses.
type bm25Searcher struct {
	k1, b float64
	all   []*bm25Clause
	h     clauseHeap // clauses not yet exhausted, ordered by current id
	id    index.IndexInternalID
}

var _ search.Searcher = (*bm25Searcher)(nil)

func (s *bm25Searcher) score(c *bm25Clause) float64 {
	f := float64(c.cur.Freq)
	// The index stores a field's length as the norm 1/sqrt(len).
	length := 0.0
	if c.cur.Norm > 0 {
		length = math.Round(1 / (c.cur.Norm * c.cur.Norm))
	}
	return c.weight * f / (f + s.k1*(1-s.b+s.b*length/c.avgLen))
}

// Next returns the next document matching any clause, scored.
func (s *bm25Searcher) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	if len(s.h) == 0 {
		return nil, nil
	}
	s.id = append(s.id[:0], s.h[0].cur.ID...)
	var score float64
	for len(s.h) > 0 && s.h[0].cur.ID.Equals(s.id) {
		c := s.h[0]
		score += s.score(c)
		next, err := c.tfr.Next(c.cur)
		if err != nil {
			return nil, err
		}
		if c.cur = next; next == nil {
			heap.Pop(&s.h)
		} else {
			heap.Fix(&s.h, 0)
		}
	}
	dm := ctx.DocumentMatchPool.Get()
	dm.IndexInternalID = append(dm.IndexInternalID[:0], s.id...)
	dm.Score = score
	return dm, nil
}

// Advance moves every clause to the first document at or after id and
// returns that document.
func (s *bm25Searcher) Advance(ctx *search.SearchContext, id index.IndexInternalID) (*search.DocumentMatch, error) {
	live := s.h[:0]
	for _, c := range s.h {
		if c.cur.ID.Compare(id) < 0 {
			next, err := c.tfr.Advance(id, c.cur)
			if err != nil {
				return nil, err
			}
			if c.cur = next; next == nil {
				continue
			}
		}
		live = append(live, c)
	}
	s.h = live
	heap.Init(&s.h)
	return s.Next(ctx)
}

// Close closes every postings reader.
func (s *bm25Searcher) Close() error {
	var first error
	for _, c := range s.all {
		if err := c.tfr.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.all, s.h = nil, nil
	return first
}

// Weight and SetQueryNorm take no part: scores are plain BM25 sums.
func (s *bm25Searcher) Weight() float64      { return 1 }
func (s *bm25Searcher) SetQueryNorm(float64) {}

// Count is an upper bound of the matching documents.
func (s *bm25Searcher) Count() uint64 {
	var n uint64
	for _, c := range s.all {
		n += c.df
	}
	return n
}

func (s *bm25Searcher) Min() int                   { return 0 }
func (s *bm25Searcher) DocumentMatchPoolSize() int { return 1 }

var bm25SearcherSize = int(reflect.TypeOf(bm25Searcher{}).Size())

func (s *bm25Searcher) Size() int {
	n := bm25SearcherSize + len(s.id)
	for _, c := range s.all {
		n += c.tfr.Size()
	}
	return n
}

// clauseHeap orders clauses by their current document id.
type clauseHeap []*bm25Clause

func (h clauseHeap) Len() int           { return len(h) }
func (h clauseHeap) Less(i, j int) bool { return h[i].cur.ID.Compare(h[j].cur.ID) < 0 }
func (h clauseHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *clauseHeap) Push(x any)        { *h = append(*h, x.(*bm25Clause)) }
func (h *clauseHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}
