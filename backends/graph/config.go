package graph

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/ragd/ragd/backends/graph/graphspec"
)

// Defaults applied by Open to zero Config fields.
const (
	DefaultConnectTimeout      = 2 * time.Second
	DefaultRetryTime           = 2 * time.Second
	DefaultMaxEntityCandidates = 10000
	DefaultBatchSize           = 500
	DefaultMaxPoolSize         = 32
)

// Config configures the Neo4j graph backend. Zero values take the defaults
// documented on each field.
type Config struct {
	// URI is the Bolt URI, for example bolt://127.0.0.1:7687 or
	// neo4j://host:7687 (routing).
	URI string
	// User and Password authenticate with basic auth; an empty User means
	// no authentication.
	User, Password string
	// Database selects the database; empty means the server's default.
	Database string
	// ConnectTimeout bounds dialling a socket and acquiring a pooled
	// connection, so calls fail fast while the server is down
	// (DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// RetryTime is how long writes retry transient failures such as
	// deadlocks or a lost connection (DefaultRetryTime). Reads are not
	// retried: the retriever's breaker decides.
	RetryTime time.Duration
	// MaxDegree is the hub threshold: entities mentioned by more documents
	// connect nothing (graphspec.DefaultMaxDegree).
	MaxDegree int
	// MaxMatchEntities bounds the entities MatchEntities follows to their
	// documents (graphspec.DefaultMaxMatchEntities).
	MaxMatchEntities int
	// MaxEntityCandidates bounds the full-text hits MatchEntities weighs
	// (DefaultMaxEntityCandidates). Beyond it Lucene's best hits are kept,
	// which is the one place the embedded store may rank differently.
	MaxEntityCandidates int
	// BatchSize is the number of documents written per transaction
	// (DefaultBatchSize).
	BatchSize int
	// MaxPoolSize bounds the driver's connection pool (DefaultMaxPoolSize).
	MaxPoolSize int
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Now is the clock for Health latency; nil means time.Now.
	Now func() time.Time
}

// Validate reports a config Open would refuse.
func (c Config) Validate() error {
	if c.URI == "" {
		return errors.New("graph: config: uri must be set")
	}
	u, err := url.Parse(c.URI)
	if err != nil {
		return fmt.Errorf("graph: config: uri: %w", err)
	}
	switch u.Scheme {
	case "bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc":
	default:
		return fmt.Errorf("graph: config: uri scheme %q is not a Bolt scheme (bolt, neo4j, with +s or +ssc)", u.Scheme)
	}
	for name, d := range map[string]time.Duration{"connect_timeout": c.ConnectTimeout, "retry_time": c.RetryTime} {
		if d < 0 {
			return fmt.Errorf("graph: config: %s must not be negative, got %s", name, d)
		}
	}
	for name, n := range map[string]int{
		"max_degree": c.MaxDegree, "max_match_entities": c.MaxMatchEntities,
		"max_entity_candidates": c.MaxEntityCandidates, "batch_size": c.BatchSize, "max_pool_size": c.MaxPoolSize,
	} {
		if n < 0 {
			return fmt.Errorf("graph: config: %s must not be negative, got %d", name, n)
		}
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.RetryTime == 0 {
		c.RetryTime = DefaultRetryTime
	}
	if c.MaxDegree == 0 {
		c.MaxDegree = graphspec.DefaultMaxDegree
	}
	if c.MaxMatchEntities == 0 {
		c.MaxMatchEntities = graphspec.DefaultMaxMatchEntities
	}
	if c.MaxEntityCandidates == 0 {
		c.MaxEntityCandidates = DefaultMaxEntityCandidates
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.MaxPoolSize == 0 {
		c.MaxPoolSize = DefaultMaxPoolSize
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
