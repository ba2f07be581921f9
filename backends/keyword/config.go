package keyword

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/blevesearch/bleve/v2/registry"

	"github.com/ragd/ragd/spi"
)

// Default BM25 parameters: Lucene's and Elasticsearch's defaults.
const (
	DefaultK1 = 1.2
	DefaultB  = 0.75
)

// Defaults applied by Config.withDefaults for zero-valued fields.
const (
	DefaultTitleBoost  = 1.0
	DefaultAnalyzer    = "en"
	DefaultBatchSize   = 500
	DefaultMaxK        = 10000
	DefaultMaxTerms    = 1024
	DefaultLockTimeout = 2 * time.Second
	// The settle (docs/keyword.md, "Settling after a bulk load").
	DefaultSettleAfter  = 3 * time.Second
	DefaultSettleWithin = 10 * time.Minute
)

// Config configures a keyword Backend. The zero value of every field but Dir
// selects the default.
type Config struct {
	// Dir is the index directory. It is created when missing.
	Dir string
	// TitleBoost is the weight of title matches; text matches weigh 1
	// (>= 0; 0 selects DefaultTitleBoost, 1: the title is evidence like
	// any other text). It applies at query time, so it can be changed
	// without a rebuild.
	TitleBoost float64
	// K1 and B are BM25's term-frequency saturation and length
	// normalisation for plain-text queries (0 selects DefaultK1 and
	// DefaultB, Lucene's 1.2 and 0.75; B at most 1). Query time, no
	// rebuild needed.
	K1, B float64
	// Analyzer names the bleve analyzer for title and text ("en" by
	// default; "standard" or "simple" disable stemming). It is fixed when
	// the index is created: opening an index built with another analyzer
	// fails with ErrIncompatible.
	Analyzer string
	// BatchSize bounds the documents per bleve batch in Upsert and Rebuild.
	BatchSize int
	// MaxK bounds KeywordRequest.K; larger requests wrap spi.ErrInvalidQuery.
	MaxK int
	// MaxTerms bounds the analysed terms of a plain-text query (more wrap
	// spi.ErrInvalidQuery) and, for Syntax queries, the terms a wildcard,
	// regexp or fuzzy term may expand to.
	MaxTerms int
	// Lean keeps in the index only what plain-text search and the change
	// log need, for an index derived from a record that holds the
	// documents (ragd's embedded default): title and text are neither
	// stored nor indexed with term positions (about 1.4 KB per document
	// of disk less: docs/keyword.md, "Lean index"). Hydrate then asks
	// Bodies, or wraps spi.ErrUnsupported without it, and Syntax phrase
	// queries wrap spi.ErrInvalidQuery. Fixed when the index is created:
	// opening an index of the other kind fails with ErrIncompatible
	// (OpenOrRebuild makes it anew).
	Lean bool
	// Bodies hydrates in a lean index's place: the record that holds the
	// documents (ragd's embedded store). Ignored unless Lean.
	Bodies spi.Hydrator
	// SettleAfter and SettleWithin time the settle: once a thirty-second
	// of the documents were written since the postings' last rebuild in
	// bisected clustered order, or a rebuild for growth left them in the
	// cheaper order, they are rebuilt in bisected order after writes pause
	// for SettleAfter (0: DefaultSettleAfter), or SettleWithin after that
	// became due if writes never pause that long (0: DefaultSettleWithin;
	// negative: wait for a pause however long). At most one such rebuild
	// runs per SettleWithin while writes go on (about 18 s of CPU at
	// 1,000,000 documents).
	SettleAfter, SettleWithin time.Duration
	// LockTimeout bounds the wait for the index's file lock at open; an
	// index held by another process fails with ErrLocked instead of hanging.
	LockTimeout time.Duration
	// Logger receives operational events (never query text or document
	// bodies). Nil discards.
	Logger *slog.Logger
	// Now is the clock used for health latency. Nil means time.Now.
	Now func() time.Time
}

// Validate reports a configuration Open cannot use.
func (c Config) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("dir must be set"))
	}
	if c.TitleBoost < 0 {
		errs = append(errs, fmt.Errorf("title boost %v must not be negative", c.TitleBoost))
	}
	if c.K1 < 0 || c.B < 0 || c.B > 1 {
		errs = append(errs, fmt.Errorf("bm25 k1 %v must be >= 0 and b %v within 0..1", c.K1, c.B))
	}
	if c.BatchSize < 0 {
		errs = append(errs, fmt.Errorf("batch size %d must not be negative", c.BatchSize))
	}
	if c.MaxK < 0 {
		errs = append(errs, fmt.Errorf("max k %d must not be negative", c.MaxK))
	}
	if c.MaxTerms < 0 {
		errs = append(errs, fmt.Errorf("max terms %d must not be negative", c.MaxTerms))
	}
	if c.LockTimeout < 0 {
		errs = append(errs, fmt.Errorf("lock timeout %v must not be negative", c.LockTimeout))
	}
	if c.SettleAfter < 0 {
		errs = append(errs, fmt.Errorf("settle after %v must not be negative", c.SettleAfter))
	}
	if _, builtin := builtinAnalyzers()[c.Analyzer]; c.Analyzer != "" && !builtin {
		if _, err := registry.NewCache().AnalyzerNamed(c.Analyzer); err != nil {
			errs = append(errs, fmt.Errorf("unknown analyzer %q", c.Analyzer))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("keyword: config: %w", err)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.TitleBoost == 0 {
		c.TitleBoost = DefaultTitleBoost
	}
	if c.K1 == 0 {
		c.K1 = DefaultK1
	}
	if c.B == 0 {
		c.B = DefaultB
	}
	if c.Analyzer == "" {
		c.Analyzer = DefaultAnalyzer
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.MaxK == 0 {
		c.MaxK = DefaultMaxK
	}
	if c.MaxTerms == 0 {
		c.MaxTerms = DefaultMaxTerms
	}
	if c.LockTimeout == 0 {
		c.LockTimeout = DefaultLockTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
