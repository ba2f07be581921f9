package vecgen

import (
	"math/rand/v2"
	"regexp"
	"strings"
)

// Kinds of pool texts.
const (
	KindTitle    = "title"    // a document's title
	KindSentence = "sentence" // a sentence of a document's text
	KindVariant  = "variant"  // a sentence with words swapped
	KindQuery    = "query"    // one of the collection's queries (embedded as a query)
)

// Source is one document or query of the collection.
type Source struct {
	ID    string `json:"_id"`
	Title string `json:"title,omitempty"`
	Text  string `json:"text"`
}

// Text is one real text of the pool, embedded by the model.
type Text struct {
	Text string `json:"text"`
	// Doc is the id of the collection document it comes from; empty for
	// queries.
	Doc  string `json:"doc,omitempty"`
	Kind string `json:"kind"`
	// Held texts are never mixed into documents: they are queries.
	Held bool `json:"held,omitempty"`
}

// TextParams shape the pool of texts. Zero values take the defaults.
type TextParams struct {
	Seed uint64
	// MinWords is the fewest words a sentence keeps (4).
	MinWords int
	// VariantShare of the sentences get a variant with words swapped (0.5),
	// each word with probability Swap (0.2) for a word drawn from the
	// collection by frequency.
	VariantShare float64
	Swap         float64
	// HeldShare of the sentences are held out as queries (0.05).
	HeldShare float64
}

func (p TextParams) withDefaults() TextParams {
	if p.MinWords == 0 {
		p.MinWords = 4
	}
	if p.VariantShare == 0 {
		p.VariantShare = 0.5
	}
	if p.Swap == 0 {
		p.Swap = 0.2
	}
	if p.HeldShare == 0 {
		p.HeldShare = 0.05
	}
	return p
}

// sentenceEnd splits a text into sentences: Cranfield's texts are
// tokenised ("word . word"), others are not ("word. Word").
var sentenceEnd = regexp.MustCompile(`\s*[.?!]+(\s+|$)`)

// sentences returns the sentences of s with at least minWords words,
// whitespace collapsed, without the final punctuation.
func sentences(s string, minWords int) []string {
	var out []string
	for _, part := range sentenceEnd.Split(s, -1) {
		words := strings.Fields(part)
		if len(words) >= minWords {
			out = append(out, strings.Join(words, " "))
		}
	}
	return out
}

// PoolTexts returns the distinct texts of the pool, in a deterministic
// order: each document's title and sentences (a text met before is not
// repeated), variants of VariantShare of them, then the collection's
// queries (held). HeldShare of the sentences are held out as queries.
func PoolTexts(docs, queries []Source, p TextParams) []Text {
	p = p.withDefaults()
	rnd := rand.New(rand.NewPCG(p.Seed, 0x706f6f6c)) // "pool"
	seen := map[string]bool{}
	var out []Text
	add := func(t Text) bool {
		if t.Text == "" || seen[t.Text] {
			return false
		}
		seen[t.Text] = true
		out = append(out, t)
		return true
	}
	var vocab []string
	for _, d := range docs {
		vocab = append(vocab, strings.Fields(d.Title+" "+d.Text)...)
	}
	for _, d := range docs {
		for _, s := range sentences(d.Title, p.MinWords) {
			add(Text{Text: s, Doc: d.ID, Kind: KindTitle})
		}
		for _, s := range sentences(d.Text, p.MinWords) {
			if !add(Text{Text: s, Doc: d.ID, Kind: KindSentence}) {
				continue
			}
			if rnd.Float64() < p.HeldShare {
				out[len(out)-1].Held = true
				continue
			}
			if len(vocab) > 0 && rnd.Float64() < p.VariantShare {
				words := strings.Fields(s)
				for i := range words {
					if rnd.Float64() < p.Swap {
						words[i] = vocab[rnd.IntN(len(vocab))]
					}
				}
				add(Text{Text: strings.Join(words, " "), Doc: d.ID, Kind: KindVariant})
			}
		}
	}
	for _, q := range queries {
		if t := strings.Join(strings.Fields(q.Text), " "); t != "" && !seen[t] {
			seen[t] = true
			out = append(out, Text{Text: t, Kind: KindQuery, Held: true})
		}
	}
	return out
}
