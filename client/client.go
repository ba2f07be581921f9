// Package client is the Go client of ragd's HTTP API: typed calls for
// queries, document writes and reads, status and the admin actions, with
// the request and answer types the server itself encodes (package wire:
// wire.Query and wire.Result, wire.BatchResponse, ...; retriever.Query,
// api.BatchResponse and the like are the same types under their server
// packages' names), so the client and the server cannot drift apart. It
// links the standard library, spi and wire, not the server (see
// TestClientDependencies).
//
// Every call takes a context and honours its cancellation and deadline,
// also while waiting to retry. A call that fails with an answer from ragd
// returns an *Error carrying the API's error code, message and request id;
// errors.Is matches it against ErrNotFound, ErrUnauthorized, ErrForbidden,
// ErrRateLimited and ErrUnavailable. A call that got no answer returns a
// *TransportError.
//
// Retries: an answer of 429 Too Many Requests or 502/503/504, and a request
// that got no answer at all, are sent again after a jittered exponential
// backoff (Config.MinBackoff doubling up to Config.MaxBackoff), or after the
// server's Retry-After when it sends one, up to Config.MaxRetries times.
// Every ragd call is idempotent (a query reads; an upsert or delete of the
// same ids leaves the same state), so a retry after a lost answer is safe.
// Other 4xx answers are never retried: the same request would fail again.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultBaseURL       = "http://127.0.0.1:8080"
	DefaultTimeout       = 60 * time.Second
	DefaultMaxRetries    = 3
	DefaultMinBackoff    = 250 * time.Millisecond
	DefaultMaxBackoff    = 8 * time.Second
	DefaultMaxRetryAfter = 30 * time.Second
	// MaxResponseBytes bounds an answer body the client reads.
	MaxResponseBytes = 256 << 20
)

// Config describes a client. Zero values take the defaults above.
type Config struct {
	// BaseURL is the server's root, e.g. http://127.0.0.1:8080 (host:port
	// alone means http://host:port).
	BaseURL string
	// APIKey is sent as "Authorization: Bearer KEY" when set.
	APIKey string
	// HTTPClient sends the requests; nil means a client whose Timeout is
	// Timeout. A given client's own Timeout applies instead.
	HTTPClient *http.Client
	// Timeout bounds one attempt (request and answer), default 60 s.
	Timeout time.Duration
	// MaxRetries is the number of retries after the first attempt: 0 means
	// DefaultMaxRetries, a negative value none.
	MaxRetries int
	// MinBackoff is the first wait between attempts; it doubles up to
	// MaxBackoff. Each wait is jittered: a random point between half and
	// all of it ("equal jitter").
	MinBackoff, MaxBackoff time.Duration
	// MaxRetryAfter bounds a server's Retry-After the client will wait
	// for; an answer asking for longer is returned at once.
	MaxRetryAfter time.Duration
	// UserAgent is sent as User-Agent, default "ragd-go-client".
	UserAgent string

	// OnRetry, when set, is called before each wait for a retry with the
	// error that caused it, the retry's number (1 for the first) and the
	// wait. It must not block.
	OnRetry func(err error, retry int, wait time.Duration)

	// Sleep waits d or until ctx ends; nil means a timer. Tests inject it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a number in [0, 1); nil means math/rand/v2.
	Jitter func() float64
}

// Client calls one ragd server. It is safe for concurrent use.
type Client struct {
	base *url.URL
	cfg  Config
	http *http.Client
}

// New checks cfg and returns a client.
func New(cfg Config) (*Client, error) {
	raw := cfg.BaseURL
	if raw == "" {
		raw = DefaultBaseURL
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q is not an http(s) URL such as %s", cfg.BaseURL, DefaultBaseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("client: base URL %q must not have a query or fragment", cfg.BaseURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	if cfg.Timeout < 0 || cfg.MinBackoff < 0 || cfg.MaxBackoff < 0 || cfg.MaxRetryAfter < 0 {
		return nil, errors.New("client: durations must not be negative")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.MinBackoff)
	if cfg.MaxRetryAfter == 0 {
		cfg.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "ragd-go-client"
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: cfg.Timeout}
	}
	return &Client{base: u, cfg: cfg, http: hc}, nil
}

// BaseURL is the server's root the client calls.
func (c *Client) BaseURL() string { return c.base.String() }

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// answer is a successful (2xx) answer, or an answer whose body the caller
// asked for on an error status.
type answer struct {
	Status int
	Body   []byte
}

// call sends method path (path already escaped, with its query string)
// with in encoded as JSON (no body when nil), retrying as the package doc
// says, and decodes a 2xx answer into out (ignored when nil). Answers whose
// status is in keep are decoded too instead of being errors.
func (c *Client) call(ctx context.Context, method, path string, in, out any, keep ...int) (int, error) {
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			var uv *json.UnsupportedValueError
			if errors.As(err, &uv) { // NaN or ±Inf in a vector or a weight
				return 0, fmt.Errorf("client: %s %s: a number is %s, which JSON cannot carry (nothing was sent)", method, path, uv.Str)
			}
			return 0, fmt.Errorf("client: encode %s %s: %w", method, path, err)
		}
		body = b
	}
	backoff := c.cfg.MinBackoff
	for attempt := 0; ; attempt++ {
		a, err := c.once(ctx, method, path, body, keep)
		if err == nil {
			if out != nil && len(a.Body) > 0 {
				if err := json.Unmarshal(a.Body, out); err != nil {
					return a.Status, fmt.Errorf("client: the answer to %s %s is not the expected JSON: %w", method, path, err)
				}
			}
			return a.Status, nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		wait, retry := c.retryWait(err, backoff)
		if !retry || attempt >= c.cfg.MaxRetries {
			return statusOf(err), err
		}
		if c.cfg.OnRetry != nil {
			c.cfg.OnRetry(err, attempt+1, wait)
		}
		if err := c.cfg.Sleep(ctx, wait); err != nil {
			return 0, err
		}
		backoff = min(2*backoff, c.cfg.MaxBackoff)
	}
}

// retryWait says whether err may pass on another attempt and how long to
// wait first: the server's Retry-After when it sent one, else backoff with
// equal jitter.
func (c *Client) retryWait(err error, backoff time.Duration) (time.Duration, bool) {
	var te *TransportError
	if errors.As(err, &te) {
		return c.jitter(backoff), true
	}
	var e *Error
	if !errors.As(err, &e) || !retryableStatus(e.StatusCode) {
		return 0, false
	}
	if e.RetryAfter > 0 {
		if e.RetryAfter > c.cfg.MaxRetryAfter {
			return 0, false
		}
		return e.RetryAfter, true
	}
	return c.jitter(backoff), true
}

func (c *Client) jitter(d time.Duration) time.Duration {
	half := d / 2
	return half + time.Duration(c.cfg.Jitter()*float64(d-half))
}

// retryableStatus: overload and a gateway or server that is not ready.
func retryableStatus(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

func statusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.StatusCode
	}
	return 0
}

// once sends one attempt.
func (c *Client) once(ctx context.Context, method, path string, body []byte, keep []int) (*answer, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, rd)
	if err != nil {
		return nil, fmt.Errorf("client: build request %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &TransportError{BaseURL: c.base.String(), Method: method, Path: path, Err: unwrapURLError(err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &TransportError{BaseURL: c.base.String(), Method: method, Path: path, Err: fmt.Errorf("reading the answer: %w", err)}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return &answer{Status: resp.StatusCode, Body: b}, nil
	}
	for _, k := range keep {
		if resp.StatusCode == k {
			return &answer{Status: resp.StatusCode, Body: b}, nil
		}
	}
	return nil, newError(method, path, resp, b)
}

// unwrapURLError drops the *url.Error wrapper, whose text repeats the
// method and URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
