package embedded

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"
)

// Distance is the similarity metric.
type Distance string

// Supported distances; the names match package vector and rag.yaml.
const (
	Cosine       Distance = "cosine"
	L2           Distance = "l2"
	InnerProduct Distance = "inner_product"
)

// FileName is the store's file inside Config.Dir.
const FileName = "vectors.db"

// MaxDimension bounds Config.Dimension.
const MaxDimension = 65536

// MaxK is the largest K a Retrieve may ask for; larger wraps
// spi.ErrInvalidQuery.
const MaxK = 10000

// DefaultLockTimeout is how long Open waits for another process to release
// the file.
const DefaultLockTimeout = time.Second

// Config configures a Store. Dir and Dimension are required.
type Config struct {
	// Dir is the directory holding vectors.db; created if missing.
	Dir string
	// Dimension is the length of every stored and query vector. It is
	// recorded in the file at creation; reopening with another dimension is
	// an error naming both.
	Dimension int
	// Embedder is the identity of the embedder whose vectors the store
	// holds (its kind, model, dimension and query/document marking). Open
	// records it in a new or empty store and fails with
	// *EmbedderChangedError when the store records another; a store that
	// records none (built before identities were kept) takes it. Empty
	// skips the check.
	Embedder string
	// Distance is the similarity metric; cosine when empty. Vectors are
	// stored raw, so the distance may change between runs.
	Distance Distance
	// LockTimeout bounds the wait for a file held by another process; 1s
	// when zero.
	LockTimeout time.Duration
	// Parallelism caps the goroutines one Retrieve uses; GOMAXPROCS when
	// zero, 1 disables splitting.
	Parallelism int
	// ANN configures the approximate index a large store searches
	// (docs/vector.md, "Approximate search").
	ANN ANN
	// NoSync skips fsync on commit. Only for tests and benchmarks: a crash
	// may then lose or corrupt recent writes.
	NoSync bool
	// Now stamps documents that carry no UpdatedAt; time.Now when nil.
	Now func() time.Time
	// Logger receives open events; nil discards. Document bodies and query
	// vectors are never logged.
	Logger *slog.Logger
}

// Validate reports a configuration Open would reject.
func (c Config) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("Config.Dir is required"))
	}
	if c.Dimension < 1 || c.Dimension > MaxDimension {
		errs = append(errs, fmt.Errorf("Config.Dimension must be in [1, %d], got %d", MaxDimension, c.Dimension))
	}
	switch c.Distance {
	case "", Cosine, L2, InnerProduct:
	default:
		errs = append(errs, fmt.Errorf("Config.Distance must be %q, %q or %q, got %q", Cosine, L2, InnerProduct, c.Distance))
	}
	if c.LockTimeout < 0 {
		errs = append(errs, fmt.Errorf("Config.LockTimeout must be >= 0, got %s", c.LockTimeout))
	}
	if c.ANN.MinRows < -1 {
		errs = append(errs, fmt.Errorf("Config.ANN.MinRows must be >= -1, got %d", c.ANN.MinRows))
	}
	if c.ANN.Probe < 0 || math.IsNaN(c.ANN.Probe) || math.IsInf(c.ANN.Probe, 0) {
		errs = append(errs, fmt.Errorf("Config.ANN.Probe must be a finite number >= 0, got %v", c.ANN.Probe))
	}
	if c.Parallelism < 0 {
		errs = append(errs, fmt.Errorf("Config.Parallelism must be >= 0, got %d", c.Parallelism))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("vector/embedded: config: %w", err)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Distance == "" {
		c.Distance = Cosine
	}
	if c.LockTimeout == 0 {
		c.LockTimeout = DefaultLockTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// ANN configures the approximate (IVF) index of a large store.
type ANN struct {
	// MinRows is the number of documents from which the store builds an
	// IVF index, in the background, and searches it instead of every row;
	// 0 takes DefaultANNMinRows, -1 keeps every search exact.
	MinRows int
	// Probe scales the share of the index a search visits: 2 visits
	// twice the lists of the default (1 when zero), for higher recall at
	// a higher cost; 0.5 half of them.
	Probe float64
	// IdleRegroup is how long the store waits after its last write before
	// it lays the rows written since the last regroup into their lists'
	// runs, when they are more than 1/256 of the rows (a bulk load leaves
	// up to a sixteenth outside, which every probe pays for: annbuild.go);
	// 0 takes DefaultIdleRegroup, -1 never regroups for idleness.
	IdleRegroup time.Duration
}

// DefaultIdleRegroup is ANN.IdleRegroup when zero.
const DefaultIdleRegroup = 5 * time.Second

// DefaultANNMinRows is ANN.MinRows when zero.
const DefaultANNMinRows = 150_000

func (a ANN) params() annParams {
	p := defaultANN
	switch {
	case a.MinRows < 0:
		p.minRows = 0
	case a.MinRows > 0:
		p.minRows = a.MinRows
	default:
		p.minRows = DefaultANNMinRows
	}
	if a.Probe > 0 {
		p.probeLists *= a.Probe
		p.minVisit *= a.Probe
	}
	switch {
	case a.IdleRegroup < 0:
		p.idleAfter = 0
	case a.IdleRegroup > 0:
		p.idleAfter = a.IdleRegroup
	}
	return p
}
