// Package graphspec is the data model and ranking rule shared by ragd's two
// graph backends: the Neo4j adapter (package graph) and the embedded bbolt
// store (package graph/embedded). Both call these functions, so entity
// normalisation, tokenisation, document validation and the Expand ranking
// cannot drift apart; the shared contract suite in spi/spitest checks the
// rest (MatchEntities, which Neo4j evaluates in Cypher).
//
// # Model
//
// A document mentions entities and links to other documents. Entity names are
// normalised with Normalize and split into terms with Tokens. A link names
// its target by id; a link to a document that does not exist (yet) is kept
// and takes effect once that document is upserted.
//
// # Expand ranking
//
// One hop is a step from document A to a different document B of the
// request's tenant, either through an entity both mention (A-MENTIONS->E
// <-MENTIONS-B) or through a link in either direction. Entities mentioned by
// more than MaxDegree documents are hubs and connect nothing; the documents
// are counted within the request's tenant (across all tenants for a
// request of none), so another tenant's writes never make an entity a hub
// for this one. Documents are ranked by
//
//  1. hop distance from the nearest seed, ascending (1 before 2);
//  2. paths, descending: at distance 1 the number of distinct (seed,
//     connector) pairs, where a connector is a shared entity or the link
//     between the two documents (both directions count once); at distance 2
//     the number of distinct (seed, intermediate document) pairs, the
//     intermediate document being at distance 1;
//  3. id, ascending.
//
// Ref.Score is ExpandScore(distance, paths) = (3 - distance) + paths/(paths+1),
// so one-hop documents score in [2.5, 3) and two-hop documents in [1.5, 2),
// and sorting by descending score then id reproduces the rule exactly.
//
// A metadata filter (spi.ExpandOptions.Filter) applies to returned documents
// only: a document that fails it is left out before the Limit cut but still
// lies at its distance, still connects the documents beyond it and still
// counts in their paths. So the filtered result is the unfiltered ranking
// with the failing documents removed, scores unchanged. The tenant, by
// contrast, bounds every document on a path.
//
// # Entity-match ranking
//
// The query text is split with QueryTokens. An entity matches when its terms
// share at least one query token; its weight is the number of distinct query
// tokens among its terms. Entities no document of the request's tenant
// mentions and hub entities (degree above MaxDegree, counted as for Expand)
// are dropped, then the MaxMatchEntities heaviest entities are kept (weight
// descending, name ascending). A document's score is the sum of the weights of the kept
// entities it mentions; documents are ranked by score descending, then id.
// Tenant and metadata filters apply to documents before the top-K cut.
package graphspec

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ragd/ragd/spi"
)

// Limits shared by both graph backends.
const (
	// DefaultMaxDegree is the default hub threshold: an entity mentioned by
	// more of a tenant's documents than this connects nothing in that
	// tenant's Expand and MatchEntities (rag.yaml backends.graph.max_degree).
	DefaultMaxDegree = 1000
	// DefaultMaxMatchEntities is the default number of matched entities
	// MatchEntities follows to their documents.
	DefaultMaxMatchEntities = 100
	// MaxQueryTokens bounds the distinct tokens taken from a query text; the
	// rest are ignored.
	MaxQueryTokens = 64
	// MaxTokenRunes is the longest term kept; longer ones are ignored.
	MaxTokenRunes = 64
	// MaxHops is the largest ExpandOptions.Hops accepted.
	MaxHops = 2
)

// Normalize returns the canonical form of an entity name: lower case,
// surrounding space trimmed, every run of white space or control characters
// collapsed into one space. Two names denote the same entity exactly when
// their normalised forms are equal.
func Normalize(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	space := false
	for _, r := range strings.ToLower(name) {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Tokens splits s into its distinct lower-case terms, in order of first
// occurrence. A term is a maximal run of letters, digits and combining marks;
// everything else separates terms. Terms longer than MaxTokenRunes runes are
// dropped.
func Tokens(s string) []string {
	var out []string
	seen := map[string]bool{}
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r) }
	for _, f := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !isWord(r) }) {
		if utf8.RuneCountInString(f) > MaxTokenRunes || seen[f] {
			continue
		}
		seen[f] = true
		out = append(out, f)
	}
	return out
}

// QueryTokens is Tokens limited to the first MaxQueryTokens terms.
func QueryTokens(text string) []string {
	t := Tokens(text)
	if len(t) > MaxQueryTokens {
		t = t[:MaxQueryTokens]
	}
	return t
}

// Prepare validates documents for a graph upsert and returns them
// normalised: entities normalised, de-duplicated and sorted, empty names
// dropped; links de-duplicated and sorted, empty ids and self-links dropped.
// When ids repeat, the last document with that id wins. An empty id or an id
// containing a NUL byte wraps spi.ErrInvalidQuery.
func Prepare(docs []spi.Document) ([]spi.Document, error) {
	for _, d := range docs {
		if err := ValidateID(d.ID); err != nil {
			return nil, err
		}
	}
	docs = spi.LastByID(docs, spi.DocumentID)
	out := make([]spi.Document, 0, len(docs))
	for _, d := range docs {
		d.Entities = normEntities(d.Entities)
		d.Links = normLinks(d.ID, d.Links)
		d.Vector = nil
		out = append(out, d)
	}
	return out, nil
}

// ValidateID reports an id no graph backend stores: empty, or containing NUL.
func ValidateID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: document id must not be empty", spi.ErrInvalidQuery)
	}
	if strings.IndexByte(id, 0) >= 0 {
		return fmt.Errorf("%w: document id must not contain NUL", spi.ErrInvalidQuery)
	}
	return nil
}

func normEntities(in []string) []string {
	set := make(map[string]bool, len(in))
	for _, e := range in {
		if n := Normalize(e); n != "" {
			set[n] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func normLinks(self string, in []string) []string {
	set := make(map[string]bool, len(in))
	for _, l := range in {
		if l != "" && l != self && strings.IndexByte(l, 0) < 0 {
			set[l] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// Dedupe returns ids without repeats, keeping first occurrences in order.
func Dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// PrepareChanges keeps the last change of each id (spi.LastByID) and
// prepares the documents of those that carry one, returned by id: the
// common first step of both stores' spi.ChangeApplier.
func PrepareChanges(changes []spi.Change) ([]spi.Change, map[string]spi.Document, error) {
	states := spi.LastByID(changes, spi.ChangeID)
	var docs []spi.Document
	for _, c := range states {
		if c.Doc != nil {
			docs = append(docs, *c.Doc)
		}
	}
	prepared, err := Prepare(docs)
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[string]spi.Document, len(prepared))
	for _, d := range prepared {
		byID[d.ID] = d
	}
	return states, byID, nil
}
