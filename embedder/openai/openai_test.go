package openai_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/embedder/openai"
	"github.com/ragd/ragd/spi"
)

// server speaks the embeddings wire format. handle may override a request
// by writing its own response and returning true.
type server struct {
	*httptest.Server
	dim      int
	mu       sync.Mutex
	requests []wireRequest
	headers  []http.Header
	handle   func(n int, w http.ResponseWriter, req wireRequest) bool
	reverse  bool // return data in reverse order
}

type wireRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions"`
	InputType      string   `json:"input_type"`
}

func newServer(t *testing.T, dim int) *server {
	s := &server{dim: dim}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// vecFor is the deterministic embedding of a text.
func vecFor(text string, dim int) []float32 {
	v := make([]float32, dim)
	v[0] = float32(len(text))
	return v
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	var req wireRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.headers = append(s.headers, r.Header.Clone())
	n := len(s.requests)
	s.mu.Unlock()
	if s.handle != nil && s.handle(n, w, req) {
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	data := make([]item, len(req.Input))
	for i, in := range req.Input {
		data[i] = item{"embedding", i, vecFor(in, s.dim)}
	}
	if s.reverse {
		for i, j := 0, len(data)-1; i < j; i, j = i+1, j-1 {
			data[i], data[j] = data[j], data[i]
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "model": req.Model, "data": data,
		"usage": map[string]int{"prompt_tokens": 1, "total_tokens": 1}})
}

func (s *server) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// sleeper records the delays instead of sleeping.
type sleeper struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (sl *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	sl.mu.Lock()
	sl.delays = append(sl.delays, d)
	sl.mu.Unlock()
	return ctx.Err()
}

func newEmbedder(t *testing.T, s *server, mod func(*openai.Config)) (*openai.Embedder, *sleeper) {
	t.Helper()
	sl := &sleeper{}
	cfg := openai.Config{
		BaseURL:   s.URL,
		Model:     "test-model",
		Dimension: s.dim,
		Getenv:    func(k string) string { return map[string]string{"OPENAI_API_KEY": "sk-test"}[k] },
		Sleep:     sl.Sleep,
		Rand:      func() float64 { return 1 },
		Now:       func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) },
	}
	if mod != nil {
		mod(&cfg)
	}
	e, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e, sl
}

func TestEmbedSuccess(t *testing.T) {
	s := newServer(t, 3)
	e, _ := newEmbedder(t, s, func(c *openai.Config) { c.SendDimensions = true })
	vs, err := e.Embed(context.Background(), []string{"a", "bb", ""})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 || vs[0][0] != 1 || vs[1][0] != 2 || vs[2][0] != 1 || len(vs[0]) != 3 {
		t.Fatalf("vectors = %v", vs)
	}
	req, h := s.requests[0], s.headers[0]
	if req.Model != "test-model" || req.EncodingFormat != "float" || req.Dimensions != 3 {
		t.Fatalf("request = %+v", req)
	}
	if req.Input[2] != " " {
		t.Fatalf("empty input sent as %q, want a space", req.Input[2])
	}
	if got := h.Get("Authorization"); got != "Bearer sk-test" {
		t.Fatalf("Authorization = %q", got)
	}
	if got := h.Get("Content-Type"); got != "application/json" {
		t.Fatalf("Content-Type = %q", got)
	}
	if e.Dimension() != 3 || e.Endpoint() != s.URL+"/v1/embeddings" {
		t.Fatalf("Dimension/Endpoint = %d %s", e.Dimension(), e.Endpoint())
	}
	if vs, err := e.Embed(context.Background(), nil); err != nil || len(vs) != 0 || s.count() != 1 {
		t.Fatalf("Embed(nil) = %v, %v after %d requests", vs, err, s.count())
	}
}

func TestNoKeyAndNoDimensionsByDefault(t *testing.T) {
	s := newServer(t, 2)
	e, _ := newEmbedder(t, s, func(c *openai.Config) { c.Getenv = func(string) string { return "" } })
	if _, err := e.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if got := s.headers[0].Get("Authorization"); got != "" {
		t.Fatalf("Authorization sent without a key: %q", got)
	}
	if s.requests[0].Dimensions != 0 {
		t.Fatal("dimensions sent without SendDimensions")
	}
}

func TestBatchingAndOrderByIndex(t *testing.T) {
	s := newServer(t, 2)
	s.reverse = true
	e, _ := newEmbedder(t, s, func(c *openai.Config) { c.BatchSize = 2 })
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	vs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		if int(v[0]) != len(texts[i]) {
			t.Fatalf("vector %d belongs to another input: %v", i, vs)
		}
	}
	if s.count() != 3 {
		t.Fatalf("%d requests, want 3 batches of at most 2", s.count())
	}
	if got := fmt.Sprint(s.requests[2].Input); got != "[eeeee]" {
		t.Fatalf("last batch = %s", got)
	}
}

func TestRetryAfterThenSuccess(t *testing.T) {
	s := newServer(t, 2)
	s.handle = func(n int, w http.ResponseWriter, _ wireRequest) bool {
		if n == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"Rate limit reached","type":"requests"}}`)
			return true
		}
		return false
	}
	var retries []string
	e, sl := newEmbedder(t, s, func(c *openai.Config) {
		c.OnRetry = func(attempt int, err error, d time.Duration) {
			retries = append(retries, fmt.Sprintf("%d %v", attempt, d))
		}
	})
	vs, err := e.Embed(context.Background(), []string{"x"})
	if err != nil || len(vs) != 1 {
		t.Fatalf("Embed = %v, %v", vs, err)
	}
	if s.count() != 2 || fmt.Sprint(sl.delays) != "[2s]" {
		t.Fatalf("requests %d, delays %v; want 2 requests and one 2s wait", s.count(), sl.delays)
	}
	if fmt.Sprint(retries) != "[1 2s]" {
		t.Fatalf("OnRetry calls = %v", retries)
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	s := newServer(t, 2)
	s.handle = func(n int, w http.ResponseWriter, _ wireRequest) bool {
		if n == 1 {
			w.Header().Set("Retry-After", "Thu, 01 Jan 2026 00:00:05 GMT") // Now is 00:00:00
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	}
	e, sl := newEmbedder(t, s, nil)
	if _, err := e.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sl.delays) != "[5s]" {
		t.Fatalf("delays = %v, want [5s]", sl.delays)
	}
}

func TestRetryAfterTooLongFailsFast(t *testing.T) {
	s := newServer(t, 2)
	s.handle = func(n int, w http.ResponseWriter, _ wireRequest) bool {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
		return true
	}
	e, sl := newEmbedder(t, s, nil)
	_, err := e.Embed(context.Background(), []string{"x"})
	var he *openai.HTTPError
	if !errors.Is(err, spi.ErrUnavailable) || !errors.Is(err, spi.ErrOverloaded) || !errors.As(err, &he) || he.RetryAfter != time.Hour {
		t.Fatalf("err = %v, want an overload", err)
	}
	if s.count() != 1 || len(sl.delays) != 0 {
		t.Fatalf("%d requests, delays %v; want no retry", s.count(), sl.delays)
	}
}

func TestServerErrorsExhaustRetries(t *testing.T) {
	for _, code := range []int{500, 502, 503, 504, 429, 408} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			s := newServer(t, 2)
			s.handle = func(_ int, w http.ResponseWriter, _ wireRequest) bool {
				w.WriteHeader(code)
				fmt.Fprint(w, `{"error":"overloaded"}`)
				return true
			}
			e, sl := newEmbedder(t, s, func(c *openai.Config) {
				c.MaxAttempts = 4
				c.BackoffBase = 100 * time.Millisecond
				c.BackoffMax = 300 * time.Millisecond
			})
			_, err := e.Embed(context.Background(), []string{"x"})
			if !errors.Is(err, spi.ErrUnavailable) || errors.Is(err, spi.ErrInvalidQuery) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			// Only a rate limit is overload, which no breaker counts; a
			// server error that outlasts the retries is a failure.
			overload := code == http.StatusTooManyRequests
			if errors.Is(err, spi.ErrOverloaded) != overload {
				t.Fatalf("err = %v: matches ErrOverloaded = %v, want %v", err, !overload, overload)
			}
			if want := map[bool]spi.Outcome{true: spi.OutcomeNeutral, false: spi.OutcomeFailure}[overload]; spi.OutcomeOf(context.Background(), err) != want {
				t.Fatalf("outcome of %v = %v, want %v", err, spi.OutcomeOf(context.Background(), err), want)
			}
			if !strings.Contains(err.Error(), "overloaded") || !strings.Contains(err.Error(), "4 attempts") {
				t.Fatalf("err = %v", err)
			}
			// Rand = 1: the full exponential delay, capped at BackoffMax.
			if s.count() != 4 || fmt.Sprint(sl.delays) != "[100ms 200ms 300ms]" {
				t.Fatalf("requests %d, delays %v", s.count(), sl.delays)
			}
		})
	}
}

func TestJitterRange(t *testing.T) {
	s := newServer(t, 2)
	s.handle = func(_ int, w http.ResponseWriter, _ wireRequest) bool {
		w.WriteHeader(http.StatusBadGateway)
		return true
	}
	e, sl := newEmbedder(t, s, func(c *openai.Config) {
		c.MaxAttempts = 2
		c.BackoffBase = time.Second
		c.Rand = func() float64 { return 0 }
	})
	_, _ = e.Embed(context.Background(), []string{"x"})
	if fmt.Sprint(sl.delays) != "[500ms]" {
		t.Fatalf("delays = %v, want half the backoff with Rand = 0", sl.delays)
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	cases := []struct {
		code    int
		body    string
		invalid bool
		want    string
	}{
		{400, `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error"}}`, true, "maximum context length"},
		{413, `{"error":"Input validation error: inputs must have less than 512 tokens","error_type":"Validation"}`, true, "512 tokens"},
		{422, `{"detail":"bad input"}`, true, "bad input"},
		{401, `{"error":{"message":"Incorrect API key provided"}}`, false, "OPENAI_API_KEY"},
		{403, ``, false, "authentication failed"},
		{404, `{"error":"model \"nope\" not found, try pulling it first"}`, false, "check base_url"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.code), func(t *testing.T) {
			s := newServer(t, 2)
			s.handle = func(_ int, w http.ResponseWriter, _ wireRequest) bool {
				w.WriteHeader(c.code)
				fmt.Fprint(w, c.body)
				return true
			}
			e, sl := newEmbedder(t, s, nil)
			_, err := e.Embed(context.Background(), []string{"x"})
			if got := errors.Is(err, spi.ErrInvalidQuery); got != c.invalid {
				t.Fatalf("err = %v: ErrInvalidQuery = %v, want %v", err, got, c.invalid)
			}
			if !c.invalid && !errors.Is(err, spi.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			var he *openai.HTTPError
			if !errors.As(err, &he) || he.StatusCode != c.code || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want HTTPError %d mentioning %q", err, c.code, c.want)
			}
			if s.count() != 1 || len(sl.delays) != 0 {
				t.Fatalf("%d requests, delays %v: must not retry", s.count(), sl.delays)
			}
		})
	}
}

func TestTimeoutIsRetriedThenUnavailable(t *testing.T) {
	s := newServer(t, 2)
	// The server answers only when the test ends, so only the client's
	// request timeout can end a request, however slow the machine is.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // runs before the server's Close
	s.handle = func(_ int, w http.ResponseWriter, _ wireRequest) bool {
		<-release
		return false
	}
	e, sl := newEmbedder(t, s, func(c *openai.Config) {
		c.Timeout = 20 * time.Millisecond
		c.MaxAttempts = 2
	})
	// Without the request timeout, this deadline would end Embed instead.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := e.Embed(ctx, []string{"x"})
	if !errors.Is(err, spi.ErrUnavailable) || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v, want a timeout classified ErrUnavailable", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a per-request timeout must not look like the caller's deadline: %v", err)
	}
	if len(sl.delays) != 1 {
		t.Fatalf("delays = %v, want one retry", sl.delays)
	}
}

func TestNetworkErrorIsRetried(t *testing.T) {
	s := newServer(t, 2)
	url := s.URL
	s.Close() // connection refused from now on
	sl := &sleeper{}
	e, err := openai.New(openai.Config{BaseURL: url, Model: "m", Dimension: 2, MaxAttempts: 3, Sleep: sl.Sleep,
		Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Embed(context.Background(), []string{"x"})
	if !errors.Is(err, spi.ErrUnavailable) || len(sl.delays) != 2 {
		t.Fatalf("err = %v, delays %v; want ErrUnavailable after 3 attempts", err, sl.delays)
	}
}

func TestCallerCancellationStopsRetries(t *testing.T) {
	s := newServer(t, 2)
	s.handle = func(_ int, w http.ResponseWriter, _ wireRequest) bool {
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	}
	ctx, cancel := context.WithCancel(context.Background())
	e, err := openai.New(openai.Config{BaseURL: s.URL, Model: "m", Dimension: 2, MaxAttempts: 10,
		Getenv: func(string) string { return "" },
		Sleep: func(ctx context.Context, d time.Duration) error {
			cancel() // the caller gives up while we back off
			<-ctx.Done()
			return ctx.Err()
		}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Embed(ctx, []string{"x"})
	if !errors.Is(err, context.Canceled) || s.count() != 1 {
		t.Fatalf("err = %v after %d requests; want context.Canceled after 1", err, s.count())
	}
}

func TestDimensionMismatch(t *testing.T) {
	s := newServer(t, 768)
	e, _ := newEmbedder(t, s, func(c *openai.Config) { c.Dimension = 384; c.Model = "nomic-embed-text" })
	err := e.Probe(context.Background())
	if !errors.Is(err, openai.ErrDimensionMismatch) || !errors.Is(err, spi.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrDimensionMismatch", err)
	}
	for _, want := range []string{"768", "384", "nomic-embed-text"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if s.count() != 1 {
		t.Fatalf("%d requests: a mismatch must not be retried", s.count())
	}
}

func TestMalformedResponses(t *testing.T) {
	cases := map[string]string{
		"wrong count":     `{"data":[{"index":0,"embedding":[1,2]}]}`,
		"repeated index":  `{"data":[{"index":0,"embedding":[1,2]},{"index":0,"embedding":[1,2]}]}`,
		"index too large": `{"data":[{"index":0,"embedding":[1,2]},{"index":5,"embedding":[1,2]}]}`,
		"not json":        `<html>proxy error</html>`,
		"not numbers":     `{"data":[{"index":0,"embedding":["a"]},{"index":1,"embedding":[1,2]}]}`,
		"empty embedding": `{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[1,2]}]}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, 2)
			s.handle = func(_ int, w http.ResponseWriter, _ wireRequest) bool {
				fmt.Fprint(w, body)
				return true
			}
			e, _ := newEmbedder(t, s, nil)
			_, err := e.Embed(context.Background(), []string{"a", "b"})
			if !errors.Is(err, spi.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			if s.count() != 1 {
				t.Fatalf("%d requests; a malformed answer is not retried", s.count())
			}
		})
	}
}

func TestBase64Embeddings(t *testing.T) {
	s := newServer(t, 2)
	enc := func(v ...float32) string {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	s.handle = func(_ int, w http.ResponseWriter, _ wireRequest) bool {
		fmt.Fprintf(w, `{"data":[{"index":1,"embedding":%q},{"index":0,"embedding":%q}]}`, enc(3, 4), enc(1, 2))
		return true
	}
	e, _ := newEmbedder(t, s, nil)
	vs, err := e.Embed(context.Background(), []string{"a", "b"})
	if err != nil || fmt.Sprint(vs) != "[[1 2] [3 4]]" {
		t.Fatalf("Embed = %v, %v", vs, err)
	}
}

func TestConfig(t *testing.T) {
	ok := openai.Config{BaseURL: "http://localhost:11434", Model: "m", Dimension: 8}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*openai.Config){
		"no url":         func(c *openai.Config) { c.BaseURL = "" },
		"bad scheme":     func(c *openai.Config) { c.BaseURL = "ftp://x" },
		"no host":        func(c *openai.Config) { c.BaseURL = "http://" },
		"query":          func(c *openai.Config) { c.BaseURL = "http://x/?a=b" },
		"no model":       func(c *openai.Config) { c.Model = " " },
		"no dimension":   func(c *openai.Config) { c.Dimension = 0 },
		"neg batch":      func(c *openai.Config) { c.BatchSize = -1 },
		"neg attempts":   func(c *openai.Config) { c.MaxAttempts = -1 },
		"backoff order":  func(c *openai.Config) { c.BackoffBase = time.Minute; c.BackoffMax = time.Second },
		"neg timeout":    func(c *openai.Config) { c.Timeout = -time.Second },
		"neg retryafter": func(c *openai.Config) { c.MaxRetryAfter = -time.Second },
	}
	for name, mod := range bad {
		c := ok
		mod(&c)
		if err := c.Validate(); !errors.Is(err, openai.ErrConfig) {
			t.Errorf("%s: Validate = %v, want ErrConfig", name, err)
		}
	}
	// An explicitly named key variable must be set.
	c := ok
	c.APIKeyEnv = "MY_EMBED_KEY"
	c.Getenv = func(string) string { return "" }
	if _, err := openai.New(c); !errors.Is(err, openai.ErrConfig) || !strings.Contains(err.Error(), "MY_EMBED_KEY") {
		t.Fatalf("empty explicit key: %v", err)
	}
	c.APIKeyEnv = "OPENAI_API_KEY" // the default name may be unset
	if _, err := openai.New(c); err != nil {
		t.Fatalf("unset OPENAI_API_KEY: %v", err)
	}
	for base, want := range map[string]string{
		"http://h:1":                   "http://h:1/v1/embeddings",
		"http://h:1/":                  "http://h:1/v1/embeddings",
		"https://api.openai.com/v1":    "https://api.openai.com/v1/embeddings",
		"https://api.openai.com/v1/":   "https://api.openai.com/v1/embeddings",
		"http://gateway/openai":        "http://gateway/openai/v1/embeddings",
		"http://localhost:11434/v1///": "http://localhost:11434/v1/embeddings",
	} {
		c := ok
		c.BaseURL = base
		e, err := openai.New(c)
		if err != nil {
			t.Fatal(err)
		}
		if e.Endpoint() != want {
			t.Errorf("Endpoint(%q) = %q, want %q", base, e.Endpoint(), want)
		}
	}
}

func TestConcurrentEmbeds(t *testing.T) {
	s := newServer(t, 2)
	e, _ := newEmbedder(t, s, func(c *openai.Config) { c.BatchSize = 3 })
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			texts := []string{strings.Repeat("x", g+1), "yy", "zzz", "w"}
			vs, err := e.Embed(context.Background(), texts)
			if err != nil {
				errs <- err
				return
			}
			for i, v := range vs {
				if int(v[0]) != len(texts[i]) {
					errs <- fmt.Errorf("goroutine %d: vector %d mismatched", g, i)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Queries and documents are marked as configured: prefixes on the texts
// and input_type on the request; the identity names every setting.
func TestQueryAndDocumentRoles(t *testing.T) {
	s := newServer(t, 3)
	e, _ := newEmbedder(t, s, func(c *openai.Config) {
		c.QueryPrefix, c.DocumentPrefix = "query: ", "passage: "
		c.QueryInputType, c.DocumentInputType = "query", "passage"
		c.BatchSize = 2
	})
	if _, err := e.Embed(context.Background(), []string{"wing", "", "flap"}); err != nil {
		t.Fatal(err)
	}
	q := e.ForQueries()
	if q.Dimension() != 3 {
		t.Fatalf("query embedder dimension %d", q.Dimension())
	}
	if _, err := q.Embed(context.Background(), []string{"lift"}); err != nil {
		t.Fatal(err)
	}
	want := []wireRequest{
		{Input: []string{"passage: wing", "passage: "}, InputType: "passage"},
		{Input: []string{"passage: flap"}, InputType: "passage"},
		{Input: []string{"query: lift"}, InputType: "query"},
	}
	if len(s.requests) != len(want) {
		t.Fatalf("%d requests, want %d", len(s.requests), len(want))
	}
	for i, w := range want {
		if r := s.requests[i]; !slices.Equal(r.Input, w.Input) || r.InputType != w.InputType {
			t.Errorf("request %d: input %q input_type %q, want %q %q", i, r.Input, r.InputType, w.Input, w.InputType)
		}
	}
	id := e.Identity()
	for _, part := range []string{`kind=openai`, `model="test-model"`, `dimension=3`, `query_prefix="query: "`, `document_prefix="passage: "`, `query_input_type="query"`, `document_input_type="passage"`} {
		if !strings.Contains(id, part) {
			t.Errorf("identity %s lacks %s", id, part)
		}
	}
	plain, _ := newEmbedder(t, s, nil)
	if plain.Identity() == id || strings.Contains(plain.Identity(), "prefix") {
		t.Errorf("identity without prefixes: %s", plain.Identity())
	}
}
