package vector

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Distance is the metric the HNSW index and Retrieve use.
type Distance string

// Supported distances. Their names match rag.yaml's backends.vector.distance.
const (
	Cosine       Distance = "cosine"
	L2           Distance = "l2"
	InnerProduct Distance = "inner_product"
)

// IterativeScan values for Config.IterativeScan (pgvector's
// hnsw.iterative_scan setting).
const (
	IterativeRelaxed = "relaxed_order"
	IterativeStrict  = "strict_order"
	IterativeOff     = "off"
)

// Defaults applied by Open to zero-valued Config fields.
const (
	DefaultTable          = "ragd_documents"
	DefaultDistance       = Cosine
	DefaultM              = 16
	DefaultEfConstruction = 64
	DefaultEfSearch       = 100
	DefaultConnectTimeout = 2 * time.Second
	DefaultScanPageSize   = 500
	DefaultIterativeScan  = IterativeRelaxed
)

// MaxDimension is the largest dimension pgvector's HNSW index accepts for
// the vector type.
const MaxDimension = 2000

// MaxK is the largest K a Retrieve may ask for; larger wraps
// spi.ErrInvalidQuery.
const MaxK = 10000

// maxEfSearch is pgvector's upper bound for hnsw.ef_search.
const maxEfSearch = 1000

// HNSW holds the index build and search parameters. Zero values take the
// defaults above. M and EfConstruction only matter when the index is first
// created; EfSearch is set per query.
type HNSW struct {
	M              int
	EfConstruction int
	EfSearch       int
	// MaxScanTuples caps how many index tuples an iterative scan visits
	// before giving up on filling k (pgvector's hnsw.max_scan_tuples);
	// pgvector's default (20,000) when zero. Raise it when filters are very
	// selective on large tables.
	MaxScanTuples int
}

// Config configures a Backend. DSN and Dimension are required.
type Config struct {
	// DSN is a PostgreSQL connection string (URL or key=value form).
	DSN string
	// Dimension is the length of every stored and query vector. It must
	// match the embedding column of an existing table.
	Dimension int
	// Embedder is the identity of the embedder whose vectors the table
	// holds (its kind, model, dimension and query/document marking), kept
	// in the ragd_meta table of the same schema. Open records it for a new
	// or empty table and fails with *EmbedderChangedError when the table
	// records another; a table that records none (built before identities
	// were kept) takes it. Empty skips the check.
	Embedder string
	// Distance is the similarity metric; cosine when empty.
	Distance Distance
	// Table is the documents table, optionally schema-qualified
	// ("ragd.documents"); ragd_documents when empty.
	Table string
	// HNSW tunes the index.
	HNSW HNSW
	// Index tunes how written rows reach the HNSW index (index.go).
	Index IndexConfig
	// IterativeScan is pgvector's hnsw.iterative_scan mode for filtered
	// queries: relaxed_order (default; results are re-sorted in Go),
	// strict_order or off.
	IterativeScan string
	// MaxConns bounds the connection pool; pgxpool's default when zero.
	MaxConns int32
	// MinConns keeps that many connections open; zero by default.
	MinConns int32
	// ConnectTimeout bounds one connection attempt so that a down server
	// fails fast; 2s when zero.
	ConnectTimeout time.Duration
	// ScanPageSize is the number of documents Scan reads per query; 500
	// when zero.
	ScanPageSize int
	// Now stamps updated_at for documents that carry none; time.Now when nil.
	Now func() time.Time
	// Logger receives schema setup events; nil discards. Queries and
	// document bodies are never logged.
	Logger *slog.Logger
}

var tableRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$`)

// Validate reports a configuration Open would reject. Zero values that have
// defaults are valid.
func (c Config) Validate() error {
	var errs []error
	if c.DSN == "" {
		errs = append(errs, errors.New("Config.DSN is required"))
	} else if _, err := pgxpool.ParseConfig(c.DSN); err != nil {
		// The parse error can echo the DSN, which may hold a password.
		errs = append(errs, errors.New("Config.DSN does not parse as a PostgreSQL connection string"))
	}
	if c.Dimension < 1 || c.Dimension > MaxDimension {
		errs = append(errs, fmt.Errorf("Config.Dimension must be in [1, %d], got %d", MaxDimension, c.Dimension))
	}
	switch c.Distance {
	case "", Cosine, L2, InnerProduct:
	default:
		errs = append(errs, fmt.Errorf("Config.Distance must be %q, %q or %q, got %q", Cosine, L2, InnerProduct, c.Distance))
	}
	if c.Table != "" && !tableRE.MatchString(c.Table) {
		errs = append(errs, fmt.Errorf("Config.Table must be a plain identifier, optionally schema-qualified, got %q", c.Table))
	}
	h := c.withDefaults().HNSW
	if h.M < 2 || h.M > 100 {
		errs = append(errs, fmt.Errorf("Config.HNSW.M must be in [2, 100], got %d", h.M))
	}
	if h.EfConstruction < 2*h.M || h.EfConstruction > 1000 {
		errs = append(errs, fmt.Errorf("Config.HNSW.EfConstruction must be in [2*M, 1000], got %d", h.EfConstruction))
	}
	if h.EfSearch < 1 || h.EfSearch > maxEfSearch {
		errs = append(errs, fmt.Errorf("Config.HNSW.EfSearch must be in [1, %d], got %d", maxEfSearch, h.EfSearch))
	}
	if h.MaxScanTuples < 0 {
		errs = append(errs, fmt.Errorf("Config.HNSW.MaxScanTuples must be >= 0, got %d", h.MaxScanTuples))
	}
	switch c.IterativeScan {
	case "", IterativeRelaxed, IterativeStrict, IterativeOff:
	default:
		errs = append(errs, fmt.Errorf("Config.IterativeScan must be %q, %q or %q, got %q", IterativeRelaxed, IterativeStrict, IterativeOff, c.IterativeScan))
	}
	if c.MaxConns < 0 || c.MinConns < 0 || (c.MaxConns > 0 && c.MinConns > c.MaxConns) {
		errs = append(errs, fmt.Errorf("Config.MaxConns and MinConns must be >= 0 with MinConns <= MaxConns, got %d and %d", c.MaxConns, c.MinConns))
	}
	if c.ConnectTimeout < 0 {
		errs = append(errs, fmt.Errorf("Config.ConnectTimeout must be >= 0, got %s", c.ConnectTimeout))
	}
	if c.ScanPageSize < 0 {
		errs = append(errs, fmt.Errorf("Config.ScanPageSize must be >= 0, got %d", c.ScanPageSize))
	}
	errs = append(errs, c.Index.validate()...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("vector: config: %w", err)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Distance == "" {
		c.Distance = DefaultDistance
	}
	if c.Table == "" {
		c.Table = DefaultTable
	}
	if c.HNSW.M == 0 {
		c.HNSW.M = DefaultM
	}
	if c.HNSW.EfConstruction == 0 {
		c.HNSW.EfConstruction = max(DefaultEfConstruction, 2*c.HNSW.M)
	}
	if c.HNSW.EfSearch == 0 {
		c.HNSW.EfSearch = DefaultEfSearch
	}
	if c.IterativeScan == "" {
		c.IterativeScan = DefaultIterativeScan
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.ScanPageSize == 0 {
		c.ScanPageSize = DefaultScanPageSize
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Index = c.Index.withDefaults()
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// operator returns the pgvector distance operator and index opclass.
func (d Distance) operator() (op, opclass string) {
	switch d {
	case L2:
		return "<->", "vector_l2_ops"
	case InnerProduct:
		return "<#>", "vector_ip_ops"
	default:
		return "<=>", "vector_cosine_ops"
	}
}

// score turns a pgvector distance into the similarity Retrieve reports.
func (d Distance) score(dist float64) float64 {
	switch d {
	case L2:
		return 1 / (1 + dist)
	case InnerProduct:
		return -dist
	default:
		return 1 - dist
	}
}
