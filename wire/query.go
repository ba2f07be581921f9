package wire

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/ragd/ragd/spi"
)

// Query is one retrieval request; it is also the JSON body of the HTTP
// search endpoint. Zero fields take the server's defaults
// (retriever.Defaults).
type Query struct {
	// Text feeds the keyword and graph sources, and the embedder when Vector
	// is empty. At least one of Text and Vector is required.
	Text string `json:"text,omitempty"`
	// Vector, when set, is used by the vector source instead of embedding Text.
	Vector []float32 `json:"vector,omitempty"`
	// Limit is the page size (default 10), Offset the page start within the
	// fused window.
	Limit  int `json:"limit,omitempty"`
	Offset int `json:"offset,omitempty"`
	// Window is the number of candidates asked from each source and the
	// length of the fused ranking that pages are cut from (default 100).
	Window int        `json:"window,omitempty"`
	Filter spi.Filter `json:"filter,omitzero"`
	Tenant string     `json:"tenant,omitempty"`
	// Sources holds per-source options keyed by spi.Source* name. Sources
	// not listed keep their defaults (enabled when configured).
	Sources map[string]SourceOptions `json:"sources,omitempty"`
	Fusion  FusionOptions            `json:"fusion,omitzero"`
	Expand  ExpandOptions            `json:"expand,omitzero"`
	// MinSources is the number of stage-1 sources that must answer ok
	// (default 1); fewer fails the query with *retriever.NotEnoughSourcesError.
	MinSources int `json:"min_sources,omitempty"`
	// Explain adds the per-source breakdown to every hit.
	Explain bool `json:"explain,omitempty"`
	// BudgetMS bounds the whole request in milliseconds.
	BudgetMS int `json:"budget_ms,omitempty"`
}

// SourceOptions tunes one source for one query. Zero fields take defaults.
type SourceOptions struct {
	// Enabled switches the source on or off; nil keeps the default.
	Enabled *bool `json:"enabled,omitempty"`
	// K is the number of candidates asked from the source (default Window).
	K int `json:"k,omitempty"`
	// Weight scales the source's contribution to the fused score (default
	// 1.0; 0.5 for graph_expand). Zero means default: disable a source to
	// remove it from the ranking.
	Weight float64 `json:"weight,omitempty"`
	// TimeoutMS is the source's own deadline in milliseconds.
	TimeoutMS int `json:"timeout_ms,omitempty"`
}

// Fusion modes accepted in FusionOptions.Mode.
const (
	// FusionRRF is weighted Reciprocal Rank Fusion: Σ w_s / (k + rank_s).
	FusionRRF = "rrf"
	// FusionScore is a weighted sum of per-source min-max normalised scores.
	FusionScore = "score"
	// FusionDBSF is Distribution-Based Score Fusion: a weighted sum of
	// per-source scores normalised with mean ± 3σ and clipped to [0, 1].
	FusionDBSF = "dbsf"
)

// FusionOptions selects the fusion method.
type FusionOptions struct {
	// Mode is "rrf" (default), "score" or "dbsf".
	Mode string `json:"mode,omitempty"`
	// K is the RRF rank constant (default 60).
	K int `json:"k,omitempty"`
}

// ExpandOptions controls stage 2, the graph expansion from the top fused
// seeds. A field set here wins over the same setting in
// Sources["graph_expand"] (K there is Limit here).
type ExpandOptions struct {
	// Enabled switches stage 2 on or off; nil means on whenever the graph
	// source is enabled for this query.
	Enabled *bool `json:"enabled,omitempty"`
	// Seeds is the number of top fused stage-1 hits to expand from (default 10).
	Seeds int `json:"seeds,omitempty"`
	// Hops is 1 (default) or 2.
	Hops int `json:"hops,omitempty"`
	// Limit caps the expansion list (default Window).
	Limit int `json:"limit,omitempty"`
	// Weight is the expansion list's fusion weight (default 0.5).
	Weight float64 `json:"weight,omitempty"`
}

// Only returns Sources options that enable exactly the named sources and
// disable every other one, graph expansion included unless named:
// Only(spi.SourceKeyword) is a keyword-only query.
func Only(names ...string) map[string]SourceOptions {
	m := make(map[string]SourceOptions, 4)
	for _, s := range spi.QuerySources() {
		on := slices.Contains(names, s)
		m[s] = SourceOptions{Enabled: &on}
	}
	return m
}

// MaxWeight bounds a source's or the expansion's fusion weight: weights
// are relative, and since each list adds at most its weight times 1 (a
// score normalised to [0, 1], or 1/(k+rank) under RRF) to a document, a
// bound keeps every fused score finite.
const MaxWeight = 1000

// MaxQueryTerms bounds the words of Text. It is the keyword backend's
// limit (keyword.DefaultMaxTerms), checked here so that a query the
// keyword source would reject is refused as a whole instead of being
// answered without it. Words are counted as the most finely splitting of
// the keyword analyzers would split them, at least: every run of letters,
// every run of digits and every CJK ideograph is one word.
const MaxQueryTerms = 1024

// ReasonInvalidQuery is the SourceStatus.Error of a source that rejected
// the query as invalid (spi.ErrInvalidQuery).
const ReasonInvalidQuery = "rejected as invalid query"

// ReasonCanceled is the SourceStatus.Error of a source whose call the
// caller canceled (the client went away): no evidence about the source.
const ReasonCanceled = "canceled"

// ReasonNothingToSearch is the SourceStatus.Error of a source skipped
// because its backend found nothing to search in the query
// (spi.ErrNothingToSearch).
const ReasonNothingToSearch = "nothing to search"

// ReasonDormant is the SourceStatus.Error of a source whose store is
// dormant (the configuration reads it nowhere, so it is not built) and
// which this query may not wake (spi.ErrDormant): building it costs every
// tenant, so an operator decides.
const ReasonDormant = "dormant: not built; an operator wakes it (rag.yaml, or a query with an admin key of no tenant)"

// QueryError is a Query rejected by Validate. Field is the JSON path of the
// offending field ("limit", "sources.keyword.weight"); Message says what is
// wrong without echoing the query text. It matches spi.ErrInvalidQuery.
type QueryError struct {
	Field   string
	Message string
}

func (e *QueryError) Error() string {
	return "retriever: invalid query: " + e.Field + ": " + e.Message
}

// Unwrap returns spi.ErrInvalidQuery.
func (e *QueryError) Unwrap() error { return spi.ErrInvalidQuery }

func qerr(field, format string, args ...any) *QueryError {
	return &QueryError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Validate checks q against limits (use retriever.HybridRetriever.Limits for the
// effective ones). The error is a *QueryError wrapping spi.ErrInvalidQuery.
func (q Query) Validate(limits Limits) error {
	lim := limits.WithDefaults()
	if strings.TrimSpace(q.Text) == "" && len(q.Vector) == 0 {
		return qerr("text", "text or vector is required")
	}
	if len(q.Text) > lim.MaxTextBytes {
		return qerr("text", "%d bytes, at most %d allowed", len(q.Text), lim.MaxTextBytes)
	}
	if n := countTerms(q.Text); n > MaxQueryTerms {
		return qerr("text", "%d words, at most %d allowed", n, MaxQueryTerms)
	}
	if len(q.Vector) > 0 {
		if lim.VectorDimension > 0 && len(q.Vector) != lim.VectorDimension {
			return qerr("vector", "dimension %d, want %d", len(q.Vector), lim.VectorDimension)
		}
		zero := true
		for i, x := range q.Vector {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return qerr("vector", "component %d is not a finite number", i)
			}
			zero = zero && x == 0
		}
		if zero {
			return qerr("vector", "every component is zero; a zero vector has no direction")
		}
	}
	if q.Tenant != "" {
		if err := spi.ValidateName(q.Tenant, spi.MaxNameBytes); err != nil {
			return qerr("tenant", "%s", strings.TrimPrefix(err.Error(), spi.ErrInvalidQuery.Error()+": "))
		}
	}
	if err := q.Filter.Validate(); err != nil {
		msg := strings.TrimPrefix(err.Error(), spi.ErrInvalidQuery.Error()+": ")
		return qerr("filter", "%s", msg)
	}
	if q.Offset < 0 {
		return qerr("offset", "must not be negative")
	}
	if q.Offset > lim.MaxOffset {
		return qerr("offset", "%d above the maximum %d", q.Offset, lim.MaxOffset)
	}
	if q.BudgetMS < 0 {
		return qerr("budget_ms", "must not be negative")
	}
	if int64(q.BudgetMS) > lim.MaxBudget.Milliseconds() { // in ms: a Duration would overflow
		return qerr("budget_ms", "%d above the maximum %d", q.BudgetMS, lim.MaxBudget.Milliseconds())
	}
	return q.ValidateSettings(lim)
}

// ValidateSettings checks the fields a retriever.Defaults shares with a
// Query against lim (already WithDefaults).
func (q Query) ValidateSettings(lim Limits) error {
	if err := checkRange("limit", q.Limit, lim.MaxLimit); err != nil {
		return err
	}
	if err := checkRange("window", q.Window, lim.MaxWindow); err != nil {
		return err
	}
	if err := checkRange("min_sources", q.MinSources, len(spi.RetrievalSources())); err != nil {
		return err
	}
	switch q.Fusion.Mode {
	case "", FusionRRF, FusionScore, FusionDBSF:
	default:
		return qerr("fusion.mode", "unknown mode %q (want rrf, score or dbsf)", truncate(q.Fusion.Mode, 32))
	}
	if q.Fusion.K < 0 {
		return qerr("fusion.k", "must not be negative")
	}
	for _, name := range slices.Sorted(maps.Keys(q.Sources)) {
		if !knownSource(name) {
			return qerr("sources", "unknown source %q (want vector, keyword, graph or graph_expand)", truncate(name, 32))
		}
		o := q.Sources[name]
		f := "sources." + name + "."
		if err := checkRange(f+"k", o.K, lim.MaxK); err != nil {
			return err
		}
		if err := checkWeight(f+"weight", o.Weight); err != nil {
			return err
		}
		if o.TimeoutMS < 0 {
			return qerr(f+"timeout_ms", "must not be negative")
		}
		if int64(o.TimeoutMS) > lim.MaxBudget.Milliseconds() { // in ms: a Duration would overflow
			return qerr(f+"timeout_ms", "%d above the maximum %d", o.TimeoutMS, lim.MaxBudget.Milliseconds())
		}
	}
	if err := checkRange("expand.seeds", q.Expand.Seeds, lim.MaxExpandSeeds); err != nil {
		return err
	}
	if err := checkRange("expand.hops", q.Expand.Hops, lim.MaxHops); err != nil {
		return err
	}
	if err := checkRange("expand.limit", q.Expand.Limit, lim.MaxK); err != nil {
		return err
	}
	return checkWeight("expand.weight", q.Expand.Weight)
}

func checkRange(field string, v, maxV int) error {
	if v < 0 {
		return qerr(field, "must not be negative")
	}
	if v > maxV {
		return qerr(field, "%d above the maximum %d", v, maxV)
	}
	return nil
}

func checkWeight(field string, w float64) error {
	if math.IsNaN(w) || math.IsInf(w, 0) {
		return qerr(field, "must be a finite number")
	}
	if w < 0 {
		return qerr(field, "must not be negative")
	}
	if w > MaxWeight {
		return qerr(field, "%g above the maximum %d", w, MaxWeight)
	}
	return nil
}

// countTerms counts the words of text as MaxQueryTerms defines them.
func countTerms(text string) int {
	n := 0
	var prev rune // 'L' in a run of letters, 'D' in a run of digits, 0 between
	for _, r := range text {
		class := rune(0)
		switch {
		case unicode.In(r, unicode.Han, unicode.Hiragana):
			n++ // one word each, whatever surrounds it
		case unicode.IsLetter(r):
			class = 'L'
		case unicode.IsDigit(r):
			class = 'D'
		}
		if class != 0 && class != prev {
			n++
		}
		prev = class
	}
	return n
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
