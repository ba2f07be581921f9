package opensearch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/blevesearch/bleve/v2/analysis"
	_ "github.com/blevesearch/bleve/v2/analysis/analyzer/simple"   // registers "simple"
	_ "github.com/blevesearch/bleve/v2/analysis/analyzer/standard" // registers "standard"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/registry"

	"github.com/ragd/ragd/spi"
)

// Indexes and their layout.
//
//	<prefix>-t-<slug>-<hash>  one per tenant ("" included): the documents
//	<prefix>-ids              one per id: where it lives, its version, and
//	                          tombstones (the durable ones; see apply.go)
//	<prefix>-meta             log epochs and checkpoints (apply.go)
//
// An index per tenant keeps every tenant's BM25 statistics its own, as
// the bleve backend's per-tenant statistics do: a tenant's scores never
// depend on another tenant's documents. A scoped query names its tenant's
// index, so the scope is the server's, not a filter a query could lose.
// Tenant indexes are made on first write from the index template
// <prefix>-tenants, which fixes their settings and mapping.
//
// A tenant document:
//
//	id          keyword (sorted on: ties, Versions' order)
//	tenant      keyword
//	title, text text, analysed by "ragd" (the configured analyzer)
//	meta        keyword, one "<len(key)>:<key>=<value>" per metadata entry:
//	            one field for every key (no mapping growth, any key)
//	metadata    object, not indexed: the map as written, for Hydrate
//	updated_at  keyword, not indexed
//
// Its _version is the change log's (external versioning), epoch-tagged
// (apply.go). schemaVersion changes with this layout; an index of another
// version, analyzer or BM25 parameters is refused (ErrIncompatible).
const schemaVersion = 1

const (
	tenantInfix  = "-t-"
	idsSuffix    = "-ids"
	metaSuffix   = "-meta"
	templateName = "-tenants"
	// hashedIDPrefix marks an _id that is a hash of the document id: ids
	// longer than OpenSearch's 512-byte _id, and ids starting with it.
	hashedIDPrefix = "~"
	maxIDBytes     = 512
)

// names derives every index name from the prefix.
type names struct{ prefix string }

func (n names) tenantPattern() string { return n.prefix + tenantInfix + "*" }
func (n names) ids() string           { return n.prefix + idsSuffix }
func (n names) meta() string          { return n.prefix + metaSuffix }
func (n names) template() string      { return n.prefix + templateName }

// tenant returns the index of tenant t: a readable slug of the name and a
// hash of all of it, so two tenants never share an index.
func (n names) tenant(t string) string {
	var slug strings.Builder
	for _, r := range strings.ToLower(t) {
		if slug.Len() >= 32 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			slug.WriteRune(r)
		}
	}
	h := sha256.Sum256([]byte(t))
	return n.prefix + tenantInfix + slug.String() + "-" + hex.EncodeToString(h[:6])
}

// docKey is the _id of document id.
func docKey(id string) string {
	if len(id) <= maxIDBytes && !strings.HasPrefix(id, hashedIDPrefix) {
		return id
	}
	h := sha256.Sum256([]byte(id))
	return hashedIDPrefix + hex.EncodeToString(h[:])
}

// metaTerm is one metadata entry as the meta field indexes it: the key's
// length makes the pair unambiguous whatever the key holds.
func metaTerm(k, v string) string {
	return strconv.Itoa(len(k)) + ":" + k + "=" + v
}

// metaTerms are the meta field's terms of metadata m: per key its
// presence (metaTerm(k, "\x00")), each string (a list's too) as itself, as
// before typed metadata, and each other scalar as "\x00" and its
// spi.Value.EqualityKey, which no string starts with (ingest refuses NUL
// in metadata), so a string never matches a number.
func metaTerms(m spi.Metadata) []string {
	out := make([]string, 0, 2*len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, metaTerm(k, "\x00"))
		for _, it := range m[k].Scalars() {
			out = append(out, metaTerm(k, valueTerm(it)))
		}
	}
	return slices.Compact(out)
}

// valueTerm is the part of a meta term that stands for scalar v.
func valueTerm(v spi.Value) string {
	if v.Kind() == spi.KindString {
		return v.Str()
	}
	return "\x00" + v.EqualityKey()
}

// filterQuery is e as an OpenSearch query over the meta terms: $in a terms
// query, $exists the presence term, $and/$or/$not bool queries. Ranges
// are not answered here (the meta field holds terms, not numbers or
// times): a filter with one wraps spi.ErrInvalidQuery.
func filterQuery(e *spi.Expr) (map[string]any, error) {
	switch e.Kind {
	case spi.ExprAnd, spi.ExprOr:
		subs := make([]any, len(e.Args))
		for i, a := range e.Args {
			q, err := filterQuery(a)
			if err != nil {
				return nil, err
			}
			subs[i] = q
		}
		if e.Kind == spi.ExprAnd {
			return map[string]any{"bool": map[string]any{"filter": subs}}, nil
		}
		return map[string]any{"bool": map[string]any{"should": subs, "minimum_should_match": 1}}, nil
	case spi.ExprNot:
		q, err := filterQuery(e.Args[0])
		if err != nil {
			return nil, err
		}
		return map[string]any{"bool": map[string]any{"must_not": []any{q}}}, nil
	case spi.ExprExists:
		return map[string]any{"terms": map[string]any{"meta": []string{metaTerm(e.Key, "\x00")}}}, nil
	case spi.ExprIn:
		terms := make([]string, len(e.Values))
		for i, v := range e.Values {
			terms[i] = metaTerm(e.Key, valueTerm(v))
		}
		return map[string]any{"terms": map[string]any{"meta": terms}}, nil
	}
	return nil, fmt.Errorf("%w: the OpenSearch keyword store does not answer range filters ($gt, $gte, $lt, $lte)", spi.ErrInvalidQuery)
}

// analyzers maps each supported analyzer name to its OpenSearch
// definition, built on the same steps as the bleve analyzer of that name:
// Unicode word segmentation (Lucene's standard tokenizer and bleve's
// unicode tokenizer both follow UAX #29), then the filters in bleve's
// order. The stop words are bleve's English list itself (stopWords).
var analyzers = map[string]func() map[string]any{
	"en": func() map[string]any {
		return custom("standard", "ragd_possessive", "lowercase", "ragd_stop", "porter_stem")
	},
	"en_snowball": func() map[string]any {
		return custom("standard", "ragd_possessive", "lowercase", "ragd_stop", "ragd_snowball")
	},
	"en_nostem": func() map[string]any { return custom("standard", "ragd_possessive", "lowercase", "ragd_stop") },
	"standard":  func() map[string]any { return custom("standard", "lowercase", "ragd_stop") },
	"simple":    func() map[string]any { return custom("letter", "lowercase") },
}

func custom(tokenizer string, filters ...string) map[string]any {
	return map[string]any{"type": "custom", "tokenizer": tokenizer, "filter": filters}
}

// analysisSettings is the index settings' analysis section for analyzer.
func analysisSettings(analyzer string) map[string]any {
	return map[string]any{
		"filter": map[string]any{
			"ragd_possessive": map[string]any{"type": "stemmer", "language": "possessive_english"},
			"ragd_stop":       map[string]any{"type": "stop", "stopwords": stopWords()},
			"ragd_snowball":   map[string]any{"type": "snowball", "language": "English"},
		},
		"analyzer": map[string]any{"ragd": analyzers[analyzer]()},
	}
}

// stopWords is the bleve backend's English stop list (bleve's stop_en).
func stopWords() []string {
	m := analysis.NewTokenMap()
	if err := m.LoadBytes(en.EnglishStopWords); err != nil {
		panic(fmt.Sprintf("keyword/opensearch: bleve's English stop words: %v", err)) // a bleve bug
	}
	return slices.Sorted(maps.Keys(m))
}

// localAnalyzer is the bleve analyzer of the same name, used before a
// search to tell a text with nothing to search and to count its terms
// without a round trip.
func localAnalyzer(name string) (analysis.Analyzer, error) {
	c := registry.NewCache()
	filters := map[string][]any{
		"en_snowball": {"possessive_en", "to_lower", "stop_en", "stemmer_en_snowball"},
		"en_nostem":   {"possessive_en", "to_lower", "stop_en"},
	}
	if f, ok := filters[name]; ok {
		return c.DefineAnalyzer(name, map[string]any{"type": "custom", "tokenizer": "unicode", "token_filters": f})
	}
	return c.AnalyzerNamed(name)
}

// schemaMeta is what every tenant index records in its mapping's _meta:
// the settings its documents were indexed with.
func (c Config) schemaMeta() map[string]any {
	return map[string]any{"ragd_schema": schemaVersion, "analyzer": c.Analyzer, "k1": c.K1, "b": c.B}
}

// tenantTemplate is the index template of the tenant indexes.
func (c Config) tenantTemplate(n names) map[string]any {
	return map[string]any{
		"index_patterns": []string{n.tenantPattern()},
		"priority":       100,
		"template": map[string]any{
			"settings": map[string]any{
				"number_of_shards":   c.Shards,
				"number_of_replicas": c.Replicas,
				"refresh_interval":   durationSetting(c.RefreshInterval),
				"analysis":           analysisSettings(c.Analyzer),
				"similarity": map[string]any{
					"default": map[string]any{"type": "BM25", "k1": c.K1, "b": c.B},
				},
			},
			"mappings": map[string]any{
				"dynamic": "strict",
				"_meta":   c.schemaMeta(),
				"properties": map[string]any{
					"id":         map[string]any{"type": "keyword"},
					"tenant":     map[string]any{"type": "keyword"},
					"title":      map[string]any{"type": "text", "analyzer": "ragd"},
					"text":       map[string]any{"type": "text", "analyzer": "ragd"},
					"meta":       map[string]any{"type": "keyword"},
					"metadata":   map[string]any{"type": "object", "enabled": false},
					"updated_at": map[string]any{"type": "keyword", "index": false, "doc_values": false},
				},
			},
		},
	}
}

// idsIndex is the body that creates <prefix>-ids.
func (c Config) idsIndex() map[string]any {
	return map[string]any{
		"settings": map[string]any{"number_of_shards": 1, "number_of_replicas": c.Replicas},
		"mappings": map[string]any{
			"dynamic": "strict",
			"properties": map[string]any{
				"ver":     map[string]any{"type": "long"},
				"tenant":  map[string]any{"type": "keyword"},
				"deleted": map[string]any{"type": "boolean"},
				"epoch":   map[string]any{"type": "long"},
				"seq":     map[string]any{"type": "long"},
				"at":      map[string]any{"type": "date", "format": "epoch_millis"},
			},
		},
	}
}

// metaIndex is the body that creates <prefix>-meta.
func (c Config) metaIndex() map[string]any {
	return map[string]any{
		"settings": map[string]any{"number_of_shards": 1, "number_of_replicas": c.Replicas},
		"mappings": map[string]any{
			"dynamic": "strict",
			"properties": map[string]any{
				"log":   map[string]any{"type": "keyword"},
				"epoch": map[string]any{"type": "long"},
				"next":  map[string]any{"type": "long"},
			},
		},
	}
}

// durationSetting writes d as an OpenSearch time value.
func durationSetting(d interface{ Milliseconds() int64 }) string {
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}
