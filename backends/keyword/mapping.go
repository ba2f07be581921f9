package keyword

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	_ "github.com/blevesearch/bleve/v2/analysis/analyzer/custom"   // registers "custom"
	_ "github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"  // registers "keyword"
	_ "github.com/blevesearch/bleve/v2/analysis/analyzer/simple"   // registers "simple"
	_ "github.com/blevesearch/bleve/v2/analysis/analyzer/standard" // registers "standard"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/en"           // registers "en"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/mapping"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/ragd/ragd/internal/idtable"
	"github.com/ragd/ragd/spi"
)

// Field layout of every indexed document. Documents are built by hand
// (batch.IndexAdvanced) rather than through bleve's dynamic mapping, so a
// metadata value that happens to look like a date or a number is still
// indexed as the exact string.
const (
	fieldTenant   = "tenant"    // indexed verbatim, stored
	fieldTitle    = "title"     // analysed; stored, with term vectors (phrases), unless the index is lean
	fieldText     = "text"      // analysed; stored, with term vectors (phrases), unless the index is lean
	fieldMetaPref = "metadata." // "metadata.<key>": each string (a list's too), indexed verbatim
	fieldMetaEq   = "metaeq."   // "metaeq.<key>": each other scalar's spi.Value.EqualityKey
	fieldMetaNum  = "metanum."  // "metanum.<key>": each number, a bleve numeric field (ranges)
	fieldMetaTime = "metatime." // "metatime.<key>": each time in spi.TimeLayout (fixed width: term ranges)
	fieldMetaKeys = "_metakeys" // each metadata key, indexed verbatim ($exists)
	fieldMetaJSON = "_metadata" // JSON of the metadata map, stored only
	fieldUpdated  = "_updated"  // RFC 3339 UpdatedAt, stored only
)

// schemaVersion changes whenever the field layout above changes; an index
// of another version is rebuilt rather than misread. A lean index
// (Config.Lean: title and text neither stored nor with term vectors, the
// terms' hashes in _terms instead, terms.go) is leanSchemaVersion, so a
// release that knows only full indexes refuses it instead of hydrating
// empty texts; a full index is still version 2, and a lean index opened
// as a full one (or the reverse) is ErrIncompatible.
const (
	schemaVersion     = 2
	leanSchemaVersion = 3
)

// schemaKey is the bleve internal key holding the schema record.
var schemaKey = []byte("ragd.keyword.schema")

type schema struct {
	Version  int    `json:"version"`
	Analyzer string `json:"analyzer"`
}

// schemaOf is the schema an index made with cfg records.
func schemaOf(cfg Config) schema {
	if cfg.Lean {
		return schema{Version: leanSchemaVersion, Analyzer: cfg.Analyzer}
	}
	return schema{Version: schemaVersion, Analyzer: cfg.Analyzer}
}

func (s schema) encode() []byte {
	b, _ := json.Marshal(s) // cannot fail: two plain fields
	return b
}

// builtinAnalyzers are the analyzers this package defines on top of
// bleve's registry; each is stored in the index mapping it is used in.
func builtinAnalyzers() map[string]map[string]any {
	en := func(stemmer ...string) map[string]any {
		filters := append([]any{"possessive_en", "to_lower", "stop_en"}, toAny(stemmer)...)
		return map[string]any{"type": "custom", "tokenizer": "unicode", "token_filters": filters}
	}
	return map[string]map[string]any{
		"en_snowball": en("stemmer_en_snowball"),
		"en_plural":   en("stemmer_en_plural"),
		"en_nostem":   en(),
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// newMapping declares the layout above to bleve, so that query-string
// searches (Syntax) analyse each field as it was indexed and BM25 is used.
func newMapping(analyzer string) *mapping.IndexMappingImpl { return newMappingLayout(analyzer, false) }

// newMappingLayout is newMapping of a lean index when lean is set.
func newMappingLayout(analyzer string, lean bool) *mapping.IndexMappingImpl {
	im := bleve.NewIndexMapping()
	if def, ok := builtinAnalyzers()[analyzer]; ok {
		if err := im.AddCustomAnalyzer(analyzer, def); err != nil {
			panic(fmt.Sprintf("keyword: builtin analyzer %s: %v", analyzer, err)) // a bug in builtinAnalyzers
		}
	}
	im.ScoringModel = index.BM25Scoring
	im.DefaultAnalyzer = "keyword" // metadata.* fields in query strings
	im.DefaultField = fieldText
	im.IndexDynamic = false
	im.StoreDynamic = false
	im.DocValuesDynamic = false

	text := func() *mapping.FieldMapping {
		f := bleve.NewTextFieldMapping()
		f.Analyzer = analyzer
		f.Store = !lean
		f.IncludeTermVectors = !lean
		f.IncludeInAll = false
		f.DocValues = false
		return f
	}
	tenant := bleve.NewKeywordFieldMapping()
	tenant.Store = true
	tenant.IncludeInAll = false
	tenant.DocValues = false

	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt(fieldTitle, text())
	dm.AddFieldMappingsAt(fieldText, text())
	dm.AddFieldMappingsAt(fieldTenant, tenant)
	im.DefaultMapping = dm
	return im
}

const (
	optsText    = index.IndexField | index.StoreField | index.IncludeTermVectors
	optsLean    = index.IndexField // title and text of a lean index
	optsKeyword = index.IndexField | index.StoreField
	optsFilter  = index.IndexField
	optsStored  = index.StoreField
)

// validateDoc reports a document the index cannot hold; the error wraps
// spi.ErrInvalidQuery.
func validateDoc(d spi.Document) error {
	if d.ID == "" {
		return fmt.Errorf("%w: document id must not be empty", spi.ErrInvalidQuery)
	}
	if len(d.ID) > idtable.MaxLen {
		return fmt.Errorf("%w: document id is longer than %d bytes", spi.ErrInvalidQuery, idtable.MaxLen)
	}
	for k := range d.Metadata {
		if k == "" {
			return fmt.Errorf("%w: document %q has an empty metadata key", spi.ErrInvalidQuery, d.ID)
		}
	}
	return nil
}

// analyzedField is a text field analysed by buildDoc, so its token count
// is known before the batch; scorch's own Analyze call is then a no-op
// instead of analysing the text a second time.
type analyzedField struct{ *document.TextField }

func (analyzedField) Analyze() {}

// buildDoc turns d into a bleve document with the layout above (of a full
// index) and returns the token counts of title and text; textAn analyses
// title and text, a nil analyzer indexes a value as one term.
func buildDoc(d spi.Document, textAn analysis.Analyzer) (*document.Document, docLens) {
	return buildDocLayout(d, textAn, false)
}

// buildDocLayout is buildDoc of a lean index (terms.go) when lean is set.
func buildDocLayout(d spi.Document, textAn analysis.Analyzer, lean bool) (*document.Document, docLens) {
	doc := document.NewDocument(d.ID)
	doc.AddField(document.NewTextFieldCustom(fieldTenant, nil, []byte(d.Tenant), optsKeyword, nil))
	opts := optsText
	if lean {
		opts = optsLean
	}
	title := document.NewTextFieldCustom(fieldTitle, nil, []byte(d.Title), opts, textAn)
	text := document.NewTextFieldCustom(fieldText, nil, []byte(d.Text), opts, textAn)
	title.Analyze()
	text.Analyze()
	lens := docLens{title: title.AnalyzedLength(), text: text.AnalyzedLength()}
	doc.AddField(analyzedField{title})
	doc.AddField(analyzedField{text})
	doc.AddField(document.NewTextFieldCustom(fieldLens, nil, lens.encode(), optsStored, nil))
	if lean {
		terms := encodeTermHashes(func(fn func(string)) {
			for term := range title.AnalyzedTokenFrequencies() {
				fn(term)
			}
			for term := range text.AnalyzedTokenFrequencies() {
				fn(term)
			}
		})
		doc.AddField(document.NewTextFieldCustom(fieldTerms, nil, terms, optsStored, nil))
	}
	if len(d.Metadata) > 0 {
		for _, k := range slices.Sorted(maps.Keys(d.Metadata)) {
			doc.AddField(document.NewTextFieldCustom(fieldMetaKeys, nil, []byte(k), optsFilter, nil))
			for _, it := range d.Metadata[k].Scalars() {
				if it.Kind() == spi.KindString {
					doc.AddField(document.NewTextFieldCustom(fieldMetaPref+k, nil, []byte(it.Str()), optsFilter, nil))
				} else {
					doc.AddField(document.NewTextFieldCustom(fieldMetaEq+k, nil, []byte(it.EqualityKey()), optsFilter, nil))
				}
				switch it.Kind() {
				case spi.KindInt:
					doc.AddField(document.NewNumericFieldWithIndexingOptions(fieldMetaNum+k, nil, float64(it.IntValue()), optsFilter))
				case spi.KindFloat:
					doc.AddField(document.NewNumericFieldWithIndexingOptions(fieldMetaNum+k, nil, it.FloatValue(), optsFilter))
				case spi.KindTime:
					doc.AddField(document.NewTextFieldCustom(fieldMetaTime+k, nil, []byte(it.TimeValue().Format(spi.TimeLayout)), optsFilter, nil))
				}
			}
		}
		md, _ := json.Marshal(d.Metadata) // validated values always marshal
		doc.AddField(document.NewTextFieldCustom(fieldMetaJSON, nil, md, optsStored, nil))
	}
	if !d.UpdatedAt.IsZero() {
		doc.AddField(document.NewTextFieldCustom(fieldUpdated, nil,
			[]byte(d.UpdatedAt.UTC().Format(time.RFC3339Nano)), optsStored, nil))
	}
	return doc, lens
}

// readDoc rebuilds an spi.Document from a stored bleve document.
func readDoc(id string, stored index.Document) (spi.Document, error) {
	d := spi.Document{ID: id}
	var err error
	stored.VisitFields(func(f index.Field) {
		switch f.Name() {
		case fieldTenant:
			d.Tenant = string(f.Value())
		case fieldTitle:
			d.Title = string(f.Value())
		case fieldText:
			d.Text = string(f.Value())
		case fieldMetaJSON:
			if e := json.Unmarshal(f.Value(), &d.Metadata); e != nil && err == nil {
				err = fmt.Errorf("%w: document %q: metadata: %v", ErrCorrupt, id, e)
			}
		case fieldUpdated:
			t, e := time.Parse(time.RFC3339Nano, string(f.Value()))
			if e != nil && err == nil {
				err = fmt.Errorf("%w: document %q: updated_at: %v", ErrCorrupt, id, e)
			}
			d.UpdatedAt = t
		}
	})
	return d, err
}
