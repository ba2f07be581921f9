package hashing

import (
	"errors"
	"fmt"
	"math"
)

// Defaults used for zero Config fields.
const (
	DefaultDimension    = 384
	DefaultMinN         = 3
	DefaultMaxN         = 5
	DefaultWordWeight   = 1.0
	DefaultBigramWeight = 0.5
	DefaultCharWeight   = 0.3
	// MaxWordRunes bounds the words that produce character n-grams; longer
	// tokens (hashes, base64, chemical formulas) still count as words.
	MaxWordRunes = 40
)

// ErrConfig is wrapped by every Config.Validate error.
var ErrConfig = errors.New("hashing: invalid config")

// Config selects the feature space. The zero value is the documented default:
// 384 dimensions, word unigrams and bigrams, character 3- to 5-grams.
//
// Vectors from two Configs that differ are not comparable; Fingerprint names
// the configuration so a store can detect a change.
type Config struct {
	// Dimension is the vector length. Default 384.
	Dimension int `yaml:"dimension" json:"dimension"`
	// MinN and MaxN bound the character n-gram lengths, counted in runes of
	// the word with '<' and '>' boundary markers. Default 3 and 5.
	MinN int `yaml:"min_n" json:"min_n"`
	MaxN int `yaml:"max_n" json:"max_n"`
	// WordWeight, BigramWeight and CharWeight scale each feature family
	// before normalisation. Zero means the default (1.0, 0.5, 0.3).
	WordWeight   float64 `yaml:"word_weight" json:"word_weight"`
	BigramWeight float64 `yaml:"bigram_weight" json:"bigram_weight"`
	CharWeight   float64 `yaml:"char_weight" json:"char_weight"`
	// DisableBigrams and DisableCharNGrams switch a feature family off.
	DisableBigrams    bool `yaml:"disable_bigrams" json:"disable_bigrams"`
	DisableCharNGrams bool `yaml:"disable_char_ngrams" json:"disable_char_ngrams"`
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Dimension == 0 {
		c.Dimension = DefaultDimension
	}
	if c.MinN == 0 && c.MaxN == 0 {
		c.MinN, c.MaxN = DefaultMinN, DefaultMaxN
	}
	if c.WordWeight == 0 {
		c.WordWeight = DefaultWordWeight
	}
	if c.BigramWeight == 0 {
		c.BigramWeight = DefaultBigramWeight
	}
	if c.CharWeight == 0 {
		c.CharWeight = DefaultCharWeight
	}
	return c
}

// Validate reports a configuration New would reject, after defaults.
func (c Config) Validate() error {
	c = c.WithDefaults()
	if c.Dimension < 8 || c.Dimension > 1<<16 {
		return fmt.Errorf("%w: dimension %d out of range [8, 65536]", ErrConfig, c.Dimension)
	}
	if c.MinN < 1 || c.MaxN < c.MinN || c.MaxN > 8 {
		return fmt.Errorf("%w: char n-gram range [%d, %d] must satisfy 1 <= min_n <= max_n <= 8", ErrConfig, c.MinN, c.MaxN)
	}
	for _, w := range []struct {
		name string
		v    float64
	}{{"word_weight", c.WordWeight}, {"bigram_weight", c.BigramWeight}, {"char_weight", c.CharWeight}} {
		if w.v < 0 || math.IsNaN(w.v) || math.IsInf(w.v, 0) {
			return fmt.Errorf("%w: %s must be a finite number >= 0, got %v", ErrConfig, w.name, w.v)
		}
	}
	return nil
}
