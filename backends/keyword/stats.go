package keyword

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
)

// Exact BM25 statistics.
//
// bleve's BM25 takes a field's average length to be
// ceil(term-dictionary size / doc count), summed over segments: it is not
// the average number of tokens, and it changes when background merges
// combine segments, so the same query on the same documents could score
// differently an hour later. Instead each document stores its own analysed
// token counts in fieldLens, and the in-memory postings (impact.go) keep
// the totals of the live documents, from which
// they take exact averages.

// fieldLens is the stored field with a document's analysed token counts,
// "title text", so replacing or deleting it can correct the totals.
const fieldLens = "_lens"

// fieldVersion is the stored field with the change-log version a document
// was applied at (apply.go's tagged value); absent for writes outside the
// log.
const fieldVersion = "_version"

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

// store is one open generation: the bleve index, its analyzer, the
// in-memory postings and tombstones. Writers are serialised by the caller.
type store struct {
	idx bleve.Index
	an  analysis.Analyzer
	// impact holds the postings of plain-text search (impact.go), kept
	// in step with idx by writeBatch.
	impact *impactIndex
	// tombs mirrors the index's tombstones (apply.go): id -> tagged
	// version. Writers only use it.
	tombs map[string][]byte
	// lean: the index keeps no title and text (Config.Lean, terms.go);
	// hashes resolves its documents' term hashes. Writers only use it.
	lean   bool
	hashes termHashes
}

// close stops the postings' rebuild, if one runs, and closes the index.
func (s *store) close() error {
	s.impact.stopRebuild()
	return s.idx.Close()
}

func newStore(idx bleve.Index, cfg Config) (*store, error) {
	analyzer := cfg.Analyzer
	an := idx.Mapping().AnalyzerNamed(analyzer)
	if an == nil {
		return nil, fmt.Errorf("analyzer %q not available", analyzer)
	}
	s := &store{idx: idx, an: an}
	raw, err := idx.GetInternal(schemaKey)
	if err != nil {
		return nil, fmt.Errorf("%w: read schema: %v", ErrCorrupt, err)
	}
	var sc schema
	if raw != nil {
		if err := json.Unmarshal(raw, &sc); err != nil {
			return nil, fmt.Errorf("%w: schema record: %v", ErrCorrupt, err)
		}
	}
	s.lean = sc.Version == leanSchemaVersion
	if s.impact, err = loadImpact(context.Background(), idx); err != nil {
		return nil, fmt.Errorf("%w: load postings: %v", ErrCorrupt, err)
	}
	s.impact.log = cfg.Logger
	s.impact.settleAfter, s.impact.settleWithin = cfg.SettleAfter, cfg.SettleWithin
	if s.tombs, err = loadTombs(idx); err != nil {
		return nil, fmt.Errorf("%w: load tombstones: %v", ErrCorrupt, err)
	}
	return s, nil
}

// loadTombs reads the tombstones from the index's internal keys, which
// scorch's snapshots hold in memory.
func loadTombs(idx bleve.Index) (map[string][]byte, error) {
	adv, err := idx.Advanced()
	if err != nil {
		return nil, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	tombs := map[string][]byte{}
	in, ok := r.(interface{ Internal() map[string][]byte })
	if !ok {
		return nil, fmt.Errorf("index reader %T does not list its internal keys", r)
	}
	for k, v := range in.Internal() {
		if id, ok := strings.CutPrefix(k, versionPrefix); ok {
			tombs[id] = bytes.Clone(v)
		}
	}
	return tombs, nil
}
