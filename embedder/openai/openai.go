// Package openai is an spi.Embedder that calls an OpenAI-compatible
// embeddings endpoint (POST {base}/v1/embeddings): OpenAI itself, Ollama,
// vLLM and Hugging Face text-embeddings-inference all speak it.
//
// Inputs are sent in batches of Config.BatchSize; every request has its own
// timeout and is retried with exponential backoff and jitter only when a
// retry can help: HTTP 408, 429, 500, 502, 503, 504, network errors and
// timeouts, honouring Retry-After. Other statuses are never retried.
//
// Errors classify for the circuit breaker that the wiring puts around the
// embedder: spi.ErrUnavailable for an unreachable or failing server (5xx,
// timeouts, 401/403/404 configuration problems, a malformed response or the
// wrong dimension); spi.ErrOverloaded (and spi.ErrUnavailable) for a 429
// that outlasted the retries and the Retry-After waits, which a breaker
// does not count: the server is busy, not broken; spi.ErrInvalidQuery for a
// request the server refuses (400, 413, 422: typically an input longer than
// the model's context). A cancelled caller context is returned as such.
package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/ragd/ragd/internal/retryafter"
	"github.com/ragd/ragd/spi"
)

var _ spi.Embedder = (*Embedder)(nil)

// ErrDimensionMismatch means the server returned vectors of another length
// than Config.Dimension. Errors wrapping it also wrap spi.ErrUnavailable.
var ErrDimensionMismatch = errors.New("openai: embedding dimension mismatch")

// HTTPError is a non-2xx answer. It unwraps to spi.ErrUnavailable or
// spi.ErrInvalidQuery according to the status.
type HTTPError struct {
	StatusCode int
	// Message is the server's error message, shortened; servers do not echo
	// the inputs in it.
	Message string
	// RetryAfter is the parsed Retry-After header, zero when absent.
	RetryAfter time.Duration
	kind       error
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("openai: HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// Unwrap returns spi.ErrUnavailable or spi.ErrInvalidQuery; a 429 matches
// spi.ErrOverloaded as well as spi.ErrUnavailable.
func (e *HTTPError) Unwrap() error { return e.kind }

// errOverloaded is the kind of a 429: the server is rate limiting, which
// guards treat as load, not as a failure.
var errOverloaded = fmt.Errorf("%w: %w", spi.ErrOverloaded, spi.ErrUnavailable)

// Embedder implements spi.Embedder over HTTP. It is safe for concurrent use.
type Embedder struct {
	cfg    Config
	url    string
	apiKey string
	client *http.Client
	sleep  func(context.Context, time.Duration) error
	rand   func() float64
	now    func() time.Time
}

// New validates cfg, reads the API key from the environment and returns an
// Embedder. It does not contact the server; call Probe for that.
func New(cfg Config) (*Embedder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// OPENAI_API_KEY may be unset (local servers need no key); a variable
	// the operator named on purpose must hold one.
	explicitKey := cfg.APIKeyEnv != "" && cfg.APIKeyEnv != DefaultAPIKeyEnv
	cfg = cfg.withDefaults()
	if cfg.APIKeyEnv == "" {
		cfg.APIKeyEnv = DefaultAPIKeyEnv
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	e := &Embedder{
		cfg:    cfg,
		url:    endpoint(cfg.BaseURL),
		apiKey: strings.TrimSpace(getenv(cfg.APIKeyEnv)),
		client: cfg.HTTPClient,
		sleep:  cfg.Sleep,
		rand:   cfg.Rand,
		now:    cfg.Now,
	}
	if explicitKey && e.apiKey == "" {
		return nil, fmt.Errorf("%w: api_key_env names $%s, which is empty", ErrConfig, cfg.APIKeyEnv)
	}
	if e.client == nil {
		e.client = &http.Client{}
	}
	if e.sleep == nil {
		e.sleep = sleepCtx
	}
	if e.rand == nil {
		e.rand = rand.Float64
	}
	if e.now == nil {
		e.now = time.Now
	}
	return e, nil
}

// Dimension implements spi.Embedder.
func (e *Embedder) Dimension() int { return e.cfg.Dimension }

// Endpoint is the URL requests go to.
func (e *Embedder) Endpoint() string { return e.url }

// Probe embeds one short text to check, at start, that the server answers
// and that the model's dimension matches the configuration.
func (e *Embedder) Probe(ctx context.Context) error {
	_, err := e.Embed(ctx, []string{"ragd dimension probe"})
	return err
}

// Identity names the vector space the embedder produces: kind, model,
// dimension and how queries and documents are marked. Vectors from
// embedders of different identities are not comparable; stores record it
// with their vectors.
func (e *Embedder) Identity() string {
	id := fmt.Sprintf("kind=openai model=%q dimension=%d", e.cfg.Model, e.cfg.Dimension)
	for _, kv := range []struct{ k, v string }{
		{"query_prefix", e.cfg.QueryPrefix}, {"document_prefix", e.cfg.DocumentPrefix},
		{"query_input_type", e.cfg.QueryInputType}, {"document_input_type", e.cfg.DocumentInputType},
	} {
		if kv.v != "" {
			id += fmt.Sprintf(" %s=%q", kv.k, kv.v)
		}
	}
	return id
}

// Embed implements spi.Embedder for document texts: each gets
// Config.DocumentPrefix, and requests carry Config.DocumentInputType.
// Texts are sent in batches; an empty text is sent as a single space, since
// some servers reject empty inputs.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embed(ctx, texts, e.cfg.DocumentPrefix, e.cfg.DocumentInputType)
}

// ForQueries returns the embedder for query texts: it shares e's client and
// settings but uses Config.QueryPrefix and Config.QueryInputType.
func (e *Embedder) ForQueries() spi.Embedder { return queryEmbedder{e} }

type queryEmbedder struct{ e *Embedder }

func (q queryEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return q.e.embed(ctx, texts, q.e.cfg.QueryPrefix, q.e.cfg.QueryInputType)
}

func (q queryEmbedder) Dimension() int { return q.e.cfg.Dimension }

func (e *Embedder) embed(ctx context.Context, texts []string, prefix, inputType string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.cfg.BatchSize {
		batch := texts[start:min(start+e.cfg.BatchSize, len(texts))]
		vecs, err := e.embedBatch(ctx, batch, prefix, inputType)
		if err != nil {
			return nil, fmt.Errorf("openai: embed inputs %d-%d of %d: %w", start, start+len(batch)-1, len(texts), err)
		}
		out = append(out, vecs...)
	}
	return out, nil
}

type request struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
	InputType      string   `json:"input_type,omitempty"`
}

// embedBatch sends one batch, retrying what may succeed on a retry.
func (e *Embedder) embedBatch(ctx context.Context, batch []string, prefix, inputType string) ([][]float32, error) {
	req := request{Model: e.cfg.Model, Input: make([]string, len(batch)), EncodingFormat: "float", InputType: inputType}
	for i, t := range batch {
		if t = prefix + t; t == "" {
			t = " "
		}
		req.Input[i] = t
	}
	if e.cfg.SendDimensions {
		req.Dimensions = e.cfg.Dimension
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%w: encode request: %v", spi.ErrInvalidQuery, err)
	}
	for attempt := 1; ; attempt++ {
		vecs, err := e.post(ctx, body, len(batch))
		if err == nil {
			return vecs, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (last error: %v)", context.Cause(ctx), err)
		}
		delay, retry := e.retryDelay(err, attempt)
		if !retry {
			return nil, err
		}
		if attempt >= e.cfg.MaxAttempts {
			return nil, fmt.Errorf("giving up after %d attempts: %w", attempt, err)
		}
		if e.cfg.OnRetry != nil {
			e.cfg.OnRetry(attempt, err, delay)
		}
		if serr := e.sleep(ctx, delay); serr != nil {
			return nil, fmt.Errorf("%w (last error: %v)", serr, err)
		}
	}
}

// retryableError marks transport failures and per-request timeouts.
type retryableError struct{ err error }

func (r *retryableError) Error() string { return r.err.Error() }
func (r *retryableError) Unwrap() error { return r.err }

// retryDelay decides whether err is worth another attempt and how long to
// wait first.
func (e *Embedder) retryDelay(err error, attempt int) (time.Duration, bool) {
	var he *HTTPError
	var re *retryableError
	switch {
	case errors.As(err, &he):
		switch he.StatusCode {
		case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
			http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		default:
			return 0, false
		}
		if he.RetryAfter > 0 {
			if he.RetryAfter > e.cfg.MaxRetryAfter {
				return 0, false
			}
			return he.RetryAfter, true
		}
	case errors.As(err, &re):
	default:
		return 0, false
	}
	d := e.cfg.BackoffBase << (attempt - 1)
	if d > e.cfg.BackoffMax || d <= 0 { // <= 0: shift overflow
		d = e.cfg.BackoffMax
	}
	return d/2 + time.Duration(e.rand()*float64(d/2)), true
}

// post makes one HTTP request under its own timeout.
func (e *Embedder) post(ctx context.Context, body []byte, n int) ([][]float32, error) {
	rctx, cancel := context.WithTimeoutCause(ctx, e.cfg.Timeout,
		fmt.Errorf("%w: request timed out after %v", context.DeadlineExceeded, e.cfg.Timeout))
	defer cancel()
	hreq, err := http.NewRequestWithContext(rctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: build request: %v", spi.ErrUnavailable, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if e.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+e.apiKey)
	}
	resp, err := e.client.Do(hreq)
	if err != nil {
		return nil, e.transportError(rctx, err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // keep the connection reusable
		resp.Body.Close()
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, e.httpError(resp)
	}
	// JSON floats take at most ~25 bytes each; allow generous headroom.
	limit := int64(n)*int64(e.cfg.Dimension)*32 + 1<<20
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, e.transportError(rctx, err)
	}
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("%w: response larger than %d bytes", spi.ErrUnavailable, limit)
	}
	return e.decode(raw, n)
}

func (e *Embedder) transportError(rctx context.Context, err error) error {
	if cause := context.Cause(rctx); cause != nil && errors.Is(cause, context.DeadlineExceeded) {
		err = cause
	}
	return &retryableError{fmt.Errorf("%w: %v", spi.ErrUnavailable, err)}
}

func (e *Embedder) httpError(resp *http.Response) *HTTPError {
	he := &HTTPError{StatusCode: resp.StatusCode, kind: spi.ErrUnavailable}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
	he.Message = errorMessage(b)
	he.RetryAfter = retryafter.Parse(resp.Header.Get("Retry-After"), e.now())
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		he.Message = strings.TrimSpace(fmt.Sprintf("authentication failed: check $%s. %s", e.cfg.APIKeyEnv, he.Message))
	case http.StatusNotFound:
		he.Message = strings.TrimSpace(fmt.Sprintf("check base_url (%s) and model (%q). %s", e.url, e.cfg.Model, he.Message))
	case http.StatusTooManyRequests:
		he.kind = errOverloaded
	case http.StatusRequestTimeout:
	default:
		if resp.StatusCode >= 400 && resp.StatusCode < 500 {
			he.kind = spi.ErrInvalidQuery
		}
	}
	return he
}

// errorMessage extracts the message from the error bodies of OpenAI
// ({"error":{"message"}}), Ollama and TEI ({"error": "..."}) and others
// ({"message"} / {"detail"}), shortened to 200 bytes.
func errorMessage(b []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	msg := ""
	if json.Unmarshal(b, &v) == nil {
		var s string
		var obj struct {
			Message string `json:"message"`
		}
		switch {
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			msg = s
		case json.Unmarshal(v.Error, &obj) == nil && obj.Message != "":
			msg = obj.Message
		case v.Message != "":
			msg = v.Message
		case json.Unmarshal(v.Detail, &s) == nil:
			msg = s
		}
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	return msg
}

type response struct {
	Data []struct {
		Index     *int            `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
}

// decode parses the response, puts embeddings in input order by their
// "index", and checks their number and dimension.
func (e *Embedder) decode(raw []byte, n int) ([][]float32, error) {
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%w: malformed response: %v", spi.ErrUnavailable, err)
	}
	if len(r.Data) != n {
		return nil, fmt.Errorf("%w: server returned %d embeddings for %d inputs", spi.ErrUnavailable, len(r.Data), n)
	}
	out := make([][]float32, n)
	for pos, d := range r.Data {
		i := pos
		if d.Index != nil {
			i = *d.Index
		}
		if i < 0 || i >= n || out[i] != nil {
			return nil, fmt.Errorf("%w: embedding index %d is out of range or repeated", spi.ErrUnavailable, i)
		}
		v, err := decodeVector(d.Embedding)
		if err != nil {
			return nil, fmt.Errorf("%w: embedding %d: %v", spi.ErrUnavailable, i, err)
		}
		if len(v) != e.cfg.Dimension {
			return nil, fmt.Errorf("%w: %w: model %q returned %d-dimensional vectors, configured dimension is %d: set the embedder dimension to %d (and re-create the vector store) or choose another model",
				spi.ErrUnavailable, ErrDimensionMismatch, e.cfg.Model, len(v), e.cfg.Dimension, len(v))
		}
		out[i] = v
	}
	return out, nil
}

// decodeVector accepts a JSON array of numbers or, from servers that ignore
// encoding_format, a base64 string of little-endian float32s.
func decodeVector(raw json.RawMessage) ([]float32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b)%4 != 0 {
			return nil, errors.New("invalid base64 embedding")
		}
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return v, validFloats(v)
	}
	var v []float32
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("embedding is not an array of numbers: %v", err)
	}
	if len(v) == 0 {
		return nil, errors.New("empty embedding")
	}
	return v, validFloats(v)
}

func validFloats(v []float32) error {
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return errors.New("embedding holds NaN or Inf")
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
