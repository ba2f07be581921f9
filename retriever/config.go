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

// Built-in limits, used where Config.Limits leaves a field zero.
const (
	DefaultMaxLimit       = 100
	DefaultMaxOffset      = 1000
	DefaultMaxWindow      = 1000
	DefaultMaxK           = 1000
	DefaultMaxTextBytes   = 8192
	DefaultMaxBudget      = 30 * time.Second
	DefaultMaxExpandSeeds = 100
	DefaultMaxHops        = 2
)

// stage1 is spi.RetrievalSources as an array, so per-query state can be
// sized at compile time (a test keeps the two equal).
var stage1 = [...]string{spi.SourceVector, spi.SourceKeyword, spi.SourceGraph}

// knownSource reports whether name is a source a query may configure.
func knownSource(name string) bool { return slices.Contains(spi.QuerySources(), name) }

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

// Limits bound what a query may ask for. Zero fields fall back to the
// built-in DefaultMax* constants.
type Limits struct {
	MaxLimit       int
	MaxOffset      int
	MaxWindow      int
	MaxK           int
	MaxTextBytes   int
	MaxBudget      time.Duration
	MaxExpandSeeds int
	MaxHops        int
	// VectorDimension, when non-zero, is the length a caller-supplied query
	// vector must have. New fills it from the embedder (or the vector store
	// when it reports spi.Dimensioner) when left zero.
	VectorDimension int
}

// DefaultLimits returns the built-in limits.
func DefaultLimits() Limits {
	return Limits{}.withDefaults()
}

func (l Limits) withDefaults() Limits {
	l.MaxLimit = orInt(l.MaxLimit, DefaultMaxLimit)
	l.MaxOffset = orInt(l.MaxOffset, DefaultMaxOffset)
	l.MaxWindow = orInt(l.MaxWindow, DefaultMaxWindow)
	l.MaxK = orInt(l.MaxK, DefaultMaxK)
	l.MaxTextBytes = orInt(l.MaxTextBytes, DefaultMaxTextBytes)
	l.MaxBudget = orDur(l.MaxBudget, DefaultMaxBudget)
	l.MaxExpandSeeds = orInt(l.MaxExpandSeeds, DefaultMaxExpandSeeds)
	l.MaxHops = orInt(l.MaxHops, DefaultMaxHops)
	return l
}

// Validate rejects negative limits and a MaxHops above 2 (the spi bound).
func (l Limits) Validate() error {
	for _, c := range []struct {
		name string
		v    int64
	}{
		{"MaxLimit", int64(l.MaxLimit)}, {"MaxOffset", int64(l.MaxOffset)},
		{"MaxWindow", int64(l.MaxWindow)}, {"MaxK", int64(l.MaxK)},
		{"MaxTextBytes", int64(l.MaxTextBytes)}, {"MaxBudget", int64(l.MaxBudget)},
		{"MaxExpandSeeds", int64(l.MaxExpandSeeds)}, {"MaxHops", int64(l.MaxHops)},
		{"VectorDimension", int64(l.VectorDimension)},
	} {
		if c.v < 0 {
			return fmt.Errorf("retriever: limits: %s must not be negative", c.name)
		}
	}
	if l.MaxHops > DefaultMaxHops {
		return fmt.Errorf("retriever: limits: MaxHops %d above %d", l.MaxHops, DefaultMaxHops)
	}
	return nil
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
	lim := c.Limits.withDefaults()
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
	if err := q.validateSettings(lim); err != nil {
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
