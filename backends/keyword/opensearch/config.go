package opensearch

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"github.com/ragd/ragd/backends/keyword"
)

// Defaults applied to zero Config fields.
const (
	DefaultIndexPrefix     = "ragd"
	DefaultShards          = 1
	DefaultAnalyzer        = "en"
	DefaultRefreshInterval = time.Second
	DefaultConnectTimeout  = 2 * time.Second
	DefaultCallTimeout     = 10 * time.Second
	DefaultMaxConns        = 32
)

// Config configures the OpenSearch keyword backend. Zero values take the
// defaults documented on each field.
type Config struct {
	// Hosts are the nodes' base URLs (http:// or https://); at least one.
	Hosts []string
	// IndexPrefix names every index and template this backend makes
	// (DefaultIndexPrefix): <prefix>-t-* per tenant, <prefix>-ids,
	// <prefix>-meta. One record (change log) per prefix. Lower case
	// letters, digits, '_' and '-', starting with a letter or digit.
	IndexPrefix string
	// Shards (DefaultShards) and Replicas (0) apply to indexes created
	// from now on. A tenant index of one shard scores with exact
	// statistics; with more, searches ask for distributed statistics
	// (dfs_query_then_fetch).
	Shards, Replicas int
	// Username and Password authenticate with HTTP basic auth when
	// Username is set.
	Username, Password string
	// CACert is PEM of the certificate authorities to trust for https
	// hosts (nil: the system's). InsecureSkipVerify turns verification off.
	CACert             []byte
	InsecureSkipVerify bool
	// TitleBoost weighs title matches against text matches (query time;
	// 0 selects keyword.DefaultTitleBoost).
	TitleBoost float64
	// K1 and B are BM25's parameters (0 selects Lucene's 1.2 and 0.75).
	// They are an index setting: indexes made with others are refused.
	K1, B float64
	// Analyzer is one of en (default: possessive, lower case, the English
	// stop words of the bleve backend, Porter stemming), en_snowball,
	// en_nostem, standard or simple: the same names, and the same
	// analysis, as the bleve backend. Fixed when an index is made.
	Analyzer string
	// MaxK bounds KeywordRequest.K (keyword.DefaultMaxK; at most 10000,
	// OpenSearch's result window).
	MaxK int
	// MaxTerms bounds a query's analysed terms (keyword.DefaultMaxTerms;
	// at most 1024, OpenSearch's clause limit).
	MaxTerms int
	// RefreshInterval is how often new writes become searchable
	// (DefaultRefreshInterval). An apply returns once its writes are.
	RefreshInterval time.Duration
	// ConnectTimeout bounds dialling a node (DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// CallTimeout bounds every call whose context has no earlier deadline
	// (DefaultCallTimeout): a hung node never holds a caller forever.
	CallTimeout time.Duration
	// MaxConns bounds the connections per host (DefaultMaxConns).
	MaxConns int
	// Transport replaces the HTTP transport (tests inject faults with it).
	Transport http.RoundTripper
	// Logger receives operational events (never query text or document
	// bodies). Nil discards.
	Logger *slog.Logger
	// Now is the clock for health latency and tombstone ages. Nil means
	// time.Now.
	Now func() time.Time
}

var prefixRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Validate reports a configuration Open cannot use.
func (c Config) Validate() error {
	var errs []error
	if len(c.Hosts) == 0 {
		errs = append(errs, errors.New("hosts must name at least one node"))
	}
	for _, h := range c.Hosts {
		u, err := url.Parse(h)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("host %q must be an http:// or https:// URL", h))
		}
	}
	if c.IndexPrefix != "" && !prefixRE.MatchString(c.IndexPrefix) {
		errs = append(errs, fmt.Errorf("index prefix %q must be 1-64 of a-z, 0-9, '_', '-', starting with a letter or digit", c.IndexPrefix))
	}
	if c.Shards < 0 || c.Replicas < 0 {
		errs = append(errs, fmt.Errorf("shards %d and replicas %d must not be negative", c.Shards, c.Replicas))
	}
	if c.TitleBoost < 0 {
		errs = append(errs, fmt.Errorf("title boost %v must not be negative", c.TitleBoost))
	}
	if c.K1 < 0 || c.B < 0 || c.B > 1 {
		errs = append(errs, fmt.Errorf("bm25 k1 %v must be >= 0 and b %v within 0..1", c.K1, c.B))
	}
	if _, ok := analyzers[c.Analyzer]; c.Analyzer != "" && !ok {
		errs = append(errs, fmt.Errorf("analyzer %q is not one of en, en_snowball, en_nostem, standard, simple", c.Analyzer))
	}
	if c.MaxK < 0 || c.MaxK > maxWindow {
		errs = append(errs, fmt.Errorf("max k %d must be within 0..%d", c.MaxK, maxWindow))
	}
	if c.MaxTerms < 0 || c.MaxTerms > maxClauses {
		errs = append(errs, fmt.Errorf("max terms %d must be within 0..%d", c.MaxTerms, maxClauses))
	}
	if c.RefreshInterval < 0 || c.ConnectTimeout < 0 || c.CallTimeout < 0 || c.MaxConns < 0 {
		errs = append(errs, errors.New("refresh interval, timeouts and max conns must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("keyword/opensearch: config: %w", err)
	}
	return nil
}

// OpenSearch's own bounds: index.max_result_window and
// indices.query.bool.max_clause_count at their defaults.
const (
	maxWindow  = 10000
	maxClauses = 1024
)

func (c Config) withDefaults() Config {
	if c.IndexPrefix == "" {
		c.IndexPrefix = DefaultIndexPrefix
	}
	if c.Shards == 0 {
		c.Shards = DefaultShards
	}
	if c.TitleBoost == 0 {
		c.TitleBoost = keyword.DefaultTitleBoost
	}
	if c.K1 == 0 {
		c.K1 = keyword.DefaultK1
	}
	if c.B == 0 {
		c.B = keyword.DefaultB
	}
	if c.Analyzer == "" {
		c.Analyzer = DefaultAnalyzer
	}
	if c.MaxK == 0 {
		c.MaxK = min(keyword.DefaultMaxK, maxWindow)
	}
	if c.MaxTerms == 0 {
		c.MaxTerms = min(keyword.DefaultMaxTerms, maxClauses)
	}
	if c.RefreshInterval == 0 {
		c.RefreshInterval = DefaultRefreshInterval
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
