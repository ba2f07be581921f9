package retriever

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/ragd/ragd/spi"
)

// Built-in defaults, used where Config.Defaults leaves a field zero.
const (
	DefaultLimit          = 10
	DefaultWindow         = 100
	DefaultMinSources     = 1
	DefaultBudget         = 2 * time.Second
	DefaultSourceTimeout  = time.Second
	DefaultHydrateTimeout = 500 * time.Millisecond
	DefaultEmbedTimeout   = time.Second
	DefaultWeight         = 1.0
	DefaultExpandWeight   = 0.5
	DefaultExpandSeeds    = 10
	DefaultExpandHops     = 1
)

// stage1 is spi.RetrievalSources as an array, so per-query state can be
// sized at compile time (a test keeps the two equal).
var stage1 = [...]string{spi.SourceVector, spi.SourceKeyword, spi.SourceGraph}

// NamedHydrator is a document store consulted to hydrate the returned page,
// under the name used in logs, metrics and Result.Hydration.
type NamedHydrator struct {
	Name     string
	Hydrator spi.Hydrator
}

// Defaults are the server-side query settings a Query inherits for every
// field it leaves zero. Zero fields here fall back to the built-in Default*
// constants. Sources and Expand have the same shape and meaning as in Query.
type Defaults struct {
	Limit      int
	Window     int
	Fusion     FusionOptions
	Sources    map[string]SourceOptions
	Expand     ExpandOptions
	MinSources int
	// Budget bounds a whole Retrieve call (stage 1, stage 2 and hydration).
	Budget time.Duration
	// SourceTimeout is each source's own deadline unless Sources sets
	// TimeoutMS for it; it is always cut short by the budget.
	SourceTimeout time.Duration
	// HydrateTimeout is each hydrator's deadline, inside the budget.
	HydrateTimeout time.Duration
	// EmbedTimeout is the deadline for embedding the query text, inside
	// the budget and before the vector source's own deadline starts.
	EmbedTimeout time.Duration
}

// Config wires a HybridRetriever. Any backend may be nil (not configured),
// but at least one of Vector, Keyword and Graph must be set.
type Config struct {
	Vector   spi.VectorRetrievalBackend
	Keyword  spi.KeywordRetrievalBackend
	Graph    spi.GraphRetrievalBackend
	Embedder spi.Embedder
	// Gates admit the calls to each source, keyed by spi.GatedSources
	// names (vector, keyword, graph, graph_expand, embedder); a source
	// without a gate is called unguarded. Hydrators are checked against
	// the gate of their own name: an open circuit skips them at once.
	Gates map[string]spi.Gate
	// Hydrators are consulted in order for the returned page: the system of
	// record first, then fallbacks. Ids missing from one, or all ids when one
	// fails, go to the next.
	Hydrators []NamedHydrator
	Defaults  Defaults
	Limits    Limits
	// Registerer receives the retriever's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger receives operational logs (never query text); nil discards.
	Logger *slog.Logger
	// Now is the clock used for took_ms figures; nil means time.Now.
	Now func() time.Time
	// TracerProvider makes the spans of each query (see trace.go); nil
	// makes none.
	TracerProvider trace.TracerProvider
}

// Validate checks the configuration as given (zero values mean defaults).
func (c Config) Validate() error {
	if c.Vector == nil && c.Keyword == nil && c.Graph == nil {
		return errors.New("retriever: config: no retrieval backend configured")
	}
	for name, g := range c.Gates {
		if !slices.Contains(spi.GatedSources(), name) {
			return fmt.Errorf("retriever: config: gate for unknown source %q", name)
		}
		if g == nil {
			return fmt.Errorf("retriever: config: gate %q is nil", name)
		}
	}
	seen := make(map[string]bool, len(c.Hydrators))
	for i, h := range c.Hydrators {
		if h.Name == "" {
			return fmt.Errorf("retriever: config: hydrator %d has no name", i)
		}
		if h.Hydrator == nil {
			return fmt.Errorf("retriever: config: hydrator %q is nil", h.Name)
		}
		if seen[h.Name] {
			return fmt.Errorf("retriever: config: hydrator %q listed twice", h.Name)
		}
		seen[h.Name] = true
	}
	if err := c.Limits.Validate(); err != nil {
		return err
	}
	lim := c.Limits.WithDefaults()
	if c.Embedder != nil && c.Embedder.Dimension() < 1 {
		return fmt.Errorf("retriever: config: embedder dimension %d", c.Embedder.Dimension())
	}
	if ed, vd := c.embedderDim(), c.storeDim(); ed > 0 && vd > 0 && ed != vd {
		return fmt.Errorf("retriever: config: embedder dimension %d does not match vector store dimension %d", ed, vd)
	}
	if d := c.Limits.VectorDimension; d > 0 {
		if ed := c.embedderDim(); ed > 0 && ed != d {
			return fmt.Errorf("retriever: config: Limits.VectorDimension %d does not match embedder dimension %d", d, ed)
		}
		if vd := c.storeDim(); vd > 0 && vd != d {
			return fmt.Errorf("retriever: config: Limits.VectorDimension %d does not match vector store dimension %d", d, vd)
		}
	}
	if err := c.Defaults.validate(lim); err != nil {
		return err
	}
	return nil
}

func (c Config) embedderDim() int {
	if c.Embedder == nil {
		return 0
	}
	return c.Embedder.Dimension()
}

// storeDim is the vector store's dimension when it reports one, looking
// through wrappers that offer Unwrap() spi.VectorRetrievalBackend.
func (c Config) storeDim() int {
	var v spi.VectorRetrievalBackend = c.Vector
	for range 8 {
		if v == nil {
			return 0
		}
		if d, ok := v.(spi.Dimensioner); ok {
			return d.Dimension()
		}
		u, ok := v.(interface {
			Unwrap() spi.VectorRetrievalBackend
		})
		if !ok {
			return 0
		}
		v = u.Unwrap()
	}
	return 0
}

// validate checks the defaults against the limits, reusing the query checks
// (a Defaults is a Query without text).
func (d Defaults) validate(lim Limits) error {
	for _, c := range []struct {
		name string
		v    time.Duration
	}{{"Budget", d.Budget}, {"SourceTimeout", d.SourceTimeout}, {"HydrateTimeout", d.HydrateTimeout}, {"EmbedTimeout", d.EmbedTimeout}} {
		if c.v < 0 {
			return fmt.Errorf("retriever: config: Defaults.%s must not be negative", c.name)
		}
		if c.v > lim.MaxBudget {
			return fmt.Errorf("retriever: config: Defaults.%s %v above Limits.MaxBudget %v", c.name, c.v, lim.MaxBudget)
		}
	}
	q := Query{
		Limit: d.Limit, Window: d.Window, Fusion: d.Fusion, Sources: d.Sources,
		Expand: d.Expand, MinSources: d.MinSources,
	}
	if err := q.ValidateSettings(lim); err != nil {
		return fmt.Errorf("retriever: config: Defaults: %w", err)
	}
	return nil
}

func orInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func orDur(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}

func orFloat(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}
