package embedded

import (
	"errors"
	"fmt"
	"log/slog"
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
