package keyword

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
)

// Exact BM25 collection statistics.
//
// bleve's BM25 takes a field's average length to be
// ceil(term-dictionary size / doc count), summed over segments: it is not
// the average number of tokens, and it changes when background merges
// combine segments, so the same query on the same documents can score
// differently an hour later. This package instead keeps the total token
// count of title and text across live documents (each document stores its
// own lengths in fieldLens; the totals live in a bleve internal key
// // updated in the same atomic batch as the documents) and gives the true
// averages to the BM25 query of bm25.go.

// totalsKey is the bleve internal key holding the fieldTotals record.
var totalsKey = []byte("ragd.keyword.totals")

// fieldLens is the stored field with a document's analysed token counts,
// "title text", so replacing or deleting it can correct the totals.
const fieldLens = "_lens"

// fieldVersion is the stored field with the change-log version a document
// was applied at (apply.go's tagged value); absent for writes outside the
// log.
const fieldVersion = "_version"

type fieldTotals struct {
	Title int64 `json:"title"`
	Text  int64 `json:"text"`
}

func (t fieldTotals) add(d docLens, sign int64) fieldTotals {
	t.Title = max(0, t.Title+sign*int64(d.title))
	t.Text = max(0, t.Text+sign*int64(d.text))
	return t
}

func (t fieldTotals) encode() []byte {
	b, _ := json.Marshal(t) // cannot fail: two integers
	return b
}

type docLens struct{ title, text int }

func (d docLens) encode() []byte {
	return []byte(strconv.Itoa(d.title) + " " + strconv.Itoa(d.text))
}

func parseLens(b []byte) (docLens, bool) {
	a, c, ok := strings.Cut(string(b), " ")
	if !ok {
		return docLens{}, false
	}
	t, err1 := strconv.Atoi(a)
	x, err2 := strconv.Atoi(c)
	if err1 != nil || err2 != nil || t < 0 || x < 0 {
		return docLens{}, false
	}
	return docLens{title: t, text: x}, true
}

// store is one open generation: the bleve index, its analyzer and the
// running field totals. Writers are serialised by the caller; readers load
// the totals atomically.
type store struct {
	idx    bleve.Index
	an     analysis.Analyzer
	totals atomic.Pointer[fieldTotals]
	// impact holds the postings of plain-text search (impact.go), kept
	// in step with idx by writeBatch.
	impact *impactIndex
}

func newStore(idx bleve.Index, analyzer string) (*store, error) {
	an := idx.Mapping().AnalyzerNamed(analyzer)
	if an == nil {
		return nil, fmt.Errorf("analyzer %q not available", analyzer)
	}
	s := &store{idx: idx, an: an}
	raw, err := idx.GetInternal(totalsKey)
	if err != nil {
		return nil, fmt.Errorf("%w: read totals: %v", ErrCorrupt, err)
	}
	var t fieldTotals
	if raw != nil {
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("%w: totals record: %v", ErrCorrupt, err)
		}
	}
	s.totals.Store(&t)
	if s.impact, err = loadImpact(context.Background(), idx); err != nil {
		return nil, fmt.Errorf("%w: load postings: %v", ErrCorrupt, err)
	}
	return s, nil
}
