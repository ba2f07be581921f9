package wire

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/ragd/ragd/spi"
)

// Built-in limits, used where retriever.Config.Limits leaves a field zero.
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
	return Limits{}.WithDefaults()
}

// WithDefaults fills the zero fields with the built-in DefaultMax*
// constants.
func (l Limits) WithDefaults() Limits {
	l.MaxLimit = cmp.Or(l.MaxLimit, DefaultMaxLimit)
	l.MaxOffset = cmp.Or(l.MaxOffset, DefaultMaxOffset)
	l.MaxWindow = cmp.Or(l.MaxWindow, DefaultMaxWindow)
	l.MaxK = cmp.Or(l.MaxK, DefaultMaxK)
	l.MaxTextBytes = cmp.Or(l.MaxTextBytes, DefaultMaxTextBytes)
	l.MaxBudget = cmp.Or(l.MaxBudget, DefaultMaxBudget)
	l.MaxExpandSeeds = cmp.Or(l.MaxExpandSeeds, DefaultMaxExpandSeeds)
	l.MaxHops = cmp.Or(l.MaxHops, DefaultMaxHops)
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

// knownSource reports whether name is a source a query may configure.
func knownSource(name string) bool { return slices.Contains(spi.QuerySources(), name) }
