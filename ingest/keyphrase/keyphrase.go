// Package keyphrase is a deterministic, offline entity extractor for corpora
// that carry no entities: a keyphrase heuristic over the title and the lead
// of the text (see Extractor). It plugs into the write path as an
// ingest.EntityExtractor and reads words with package internal/analysis, as
// the hashing embedder does.
package keyphrase

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/internal/analysis"
	"github.com/ragd/ragd/spi"
)

// Defaults of Config.
const (
	DefaultMaxPhrases  = 8
	DefaultMaxUnigrams = 2
	DefaultLeadWords   = 150
)

// Config tunes Extractor. Zero fields take defaults.
type Config struct {
	// MaxPhrases caps the two-word phrases returned (default 8).
	MaxPhrases int `yaml:"max_phrases" json:"max_phrases"`
	// MaxUnigrams caps the single words returned after the phrases
	// (default 2); -1 returns none.
	MaxUnigrams int `yaml:"max_unigrams" json:"max_unigrams"`
	// LeadWords is how many words of the text are read after the title
	// (default 150): the lead of a document names its topic.
	LeadWords int `yaml:"lead_words" json:"lead_words"`
}

// ErrConfig is wrapped by Config.Validate errors.
var ErrConfig = errors.New("keyphrase: invalid config")

// Validate rejects negative values (other than MaxUnigrams = -1).
func (c Config) Validate() error {
	if c.MaxPhrases < 0 || c.LeadWords < 0 || c.MaxUnigrams < -1 {
		return fmt.Errorf("%w: keyphrase settings must be >= 0", ErrConfig)
	}
	return nil
}

// Extractor is a deterministic, offline ingest.EntityExtractor for
// corpora without entities (Cranfield, most BEIR sets). It is a keyphrase
// heuristic, not named-entity recognition:
//
//  1. Read the title and the first LeadWords words of the text, lowercased,
//     split into clauses at punctuation (. , ; : ! ? brackets quotes).
//  2. Within a clause, stop words, a few generic words of scientific prose
//     ("results", "method", "present", ...) and numbers break the word runs.
//  3. Candidates are adjacent word pairs inside a run, plurals folded
//     ("boundary layers" → "boundary layer"). A pair scores 2 per title
//     occurrence and 1 per text occurrence.
//  4. Return up to MaxPhrases pairs by score (ties: first occurrence), then
//     up to MaxUnigrams single words of at least 4 letters that score at
//     least 2 and are not already part of a returned phrase.
//
// Documents that share a phrase ("boundary layer", "heat transfer") become
// neighbours in the graph; that is all it is meant to do.
type Extractor struct {
	cfg Config
}

var _ ingest.EntityExtractor = (*Extractor)(nil)

// New returns an extractor for cfg.
func New(cfg Config) (*Extractor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.MaxPhrases = cmp.Or(cfg.MaxPhrases, DefaultMaxPhrases)
	cfg.LeadWords = cmp.Or(cfg.LeadWords, DefaultLeadWords)
	switch cfg.MaxUnigrams {
	case 0:
		cfg.MaxUnigrams = DefaultMaxUnigrams
	case -1:
		cfg.MaxUnigrams = 0
	}
	return &Extractor{cfg: cfg}, nil
}

// Extract implements ingest.EntityExtractor; it never fails.
func (k *Extractor) Extract(_ context.Context, doc spi.Document) ([]string, error) {
	return k.Phrases(doc.Title, doc.Text), nil
}

// genericWords are frequent in abstracts but name no topic.
var genericWords = map[string]bool{
	"paper": true, "present": true, "presented": true, "result": true, "results": true,
	"study": true, "studied": true, "method": true, "methods": true, "show": true,
	"shown": true, "shows": true, "given": true, "obtained": true, "used": true,
	"using": true, "use": true, "made": true, "found": true, "case": true, "cases": true,
	"problem": true, "problems": true, "investigation": true, "investigated": true,
	"discussed": true, "considered": true, "described": true, "determined": true,
	"new": true, "several": true, "various": true, "certain": true, "general": true,
	"based": true, "number": true, "data": true, "effect": true, "effects": true,
	"report": true, "reported": true, "approach": true, "well": true,
	"many": true, "much": true, "one": true, "two": true, "three": true,
	"due": true, "different": true, "past": true, "subjected": true, "gave": true,
	"recent": true, "small": true, "large": true, "good": true, "agreement": true,
	"compared": true, "comparison": true, "order": true, "type": true, "obtain": true,
	"particular": true, "possible": true, "respectively": true, "usually": true,
}

type candidate struct {
	name  string
	score int
	first int
}

// Phrases returns the keyphrases of a title and text (see
// Extractor).
func (k *Extractor) Phrases(title, text string) []string {
	pairs := map[string]*candidate{}
	words := map[string]*candidate{}
	pos := 0
	add := func(m map[string]*candidate, name string, w int) {
		c := m[name]
		if c == nil {
			c = &candidate{name: name, first: pos}
			m[name] = c
		}
		c.score += w
	}
	scan := func(s string, weight, budget int) {
		used := 0
		// Clause by clause, as strings.FieldsFunc(s, isClauseBreak) would
		// cut them, but lazily: the budget usually ends the scan long
		// before the text does.
		for s != "" {
			var clause string
			if clause, s = nextClause(s); clause == "" {
				continue
			}
			var prev string
			for _, tok := range analysis.Tokens(clause) {
				if budget > 0 && used >= budget {
					return
				}
				used++
				pos++
				if analysis.IsStopWord(tok) || genericWords[tok] || isNumber(tok) {
					prev = ""
					continue
				}
				w := analysis.Stem(tok)
				if len(w) >= 4 {
					add(words, w, weight)
				}
				if prev != "" {
					add(pairs, prev+" "+w, weight)
				}
				prev = w
			}
		}
	}
	scan(title, 2, 0)
	scan(text, 1, k.cfg.LeadWords)

	out := top(pairs, k.cfg.MaxPhrases, 1)
	inPhrase := map[string]bool{}
	for _, p := range out {
		for w := range strings.FieldsSeq(p) {
			inPhrase[w] = true
		}
	}
	for name := range words {
		if inPhrase[name] {
			delete(words, name)
		}
	}
	return append(out, top(words, k.cfg.MaxUnigrams, 2)...)
}

// top returns up to n candidate names scoring at least minScore, best first.
func top(m map[string]*candidate, n, minScore int) []string {
	cs := make([]*candidate, 0, len(m))
	for _, c := range m {
		if c.score >= minScore {
			cs = append(cs, c)
		}
	}
	slices.SortFunc(cs, func(a, b *candidate) int {
		if a.score != b.score {
			return b.score - a.score
		}
		if a.first != b.first {
			return a.first - b.first
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]string, 0, min(n, len(cs)))
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.name)
	}
	return out
}

// nextClause cuts s at its first clause break: the text before it (maybe
// empty) and the rest after it. Skipping the empty clauses, it yields
// what strings.FieldsFunc(s, isClauseBreak) returns, one at a time.
func nextClause(s string) (clause, rest string) {
	i := strings.IndexFunc(s, isClauseBreak)
	if i < 0 {
		return s, ""
	}
	_, n := utf8.DecodeRuneInString(s[i:])
	return s[:i], s[i+n:]
}

func isClauseBreak(r rune) bool {
	switch r {
	case '.', ',', ';', ':', '!', '?', '(', ')', '[', ']', '{', '}', '"', '\n':
		return true
	}
	return r >= utf8.RuneSelf && (unicode.Is(unicode.Pi, r) || unicode.Is(unicode.Pf, r)) // no ASCII rune is Pi or Pf
}

func isNumber(s string) bool {
	for _, r := range s {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}
