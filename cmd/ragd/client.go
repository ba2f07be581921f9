package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ragd/ragd/api"
)

// Environment variables read by the commands that talk to a running server.
const (
	envServer = "RAGD_SERVER"
	envAPIKey = "RAGD_API_KEY"
)

const (
	defaultServer  = "http://127.0.0.1:8080"
	defaultTimeout = 60 * time.Second
	// maxResponseBytes bounds a response body the client reads.
	maxResponseBytes = 256 << 20
)

// clientFlags are the connection flags of ingest, query and status.
type clientFlags struct {
	server  string
	apiKey  string
	timeout time.Duration
}

// addClientFlags registers --server, --api-key and --timeout on cmd.
func addClientFlags(cmd *cobra.Command) *clientFlags {
	f := &clientFlags{}
	cmd.Flags().StringVar(&f.server, "server", "", "base URL of the ragd server (default $"+envServer+", else "+defaultServer+")")
	cmd.Flags().StringVar(&f.apiKey, "api-key", "", "API key sent as a bearer token (default $"+envAPIKey+"; prefer the variable, flags show in ps)")
	cmd.Flags().DurationVar(&f.timeout, "timeout", defaultTimeout, "timeout of one HTTP request")
	return f
}

// client returns the HTTP client the flags describe. Flags win over the
// environment.
func (f *clientFlags) client() (*client, error) {
	server := f.server
	if server == "" {
		server = os.Getenv(envServer)
	}
	if server == "" {
		server = defaultServer
	}
	if !strings.Contains(server, "://") {
		server = "http://" + server
	}
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageError{fmt.Errorf("--server %q is not an http(s) URL such as %s", server, defaultServer)}
	}
	if f.timeout <= 0 {
		return nil, usageError{fmt.Errorf("--timeout must be positive, got %s", f.timeout)}
	}
	key := f.apiKey
	if key == "" {
		key = os.Getenv(envAPIKey)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &client{
		base: u,
		key:  key,
		http: &http.Client{Timeout: f.timeout},
	}, nil
}

// client calls ragd's HTTP API.
type client struct {
	base *url.URL
	key  string
	http *http.Client
}

// response is a successful (2xx) answer.
type response struct {
	Status int
	Body   []byte
}

// do sends a request with body encoded as JSON (none when nil) and
// returns the answer when its status is 2xx, or an error: a *httpError
// for any other status, a *transportError when no answer arrived, or
// ctx's error when the caller gave up.
func (c *client) do(ctx context.Context, method, path string, body any) (*response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, rd)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "ragd-cli/"+version)
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &transportError{URL: c.base.String(), Method: method, Path: path, Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &transportError{URL: c.base.String(), Method: method, Path: path, Err: fmt.Errorf("reading the answer: %w", err)}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return &response{Status: resp.StatusCode, Body: b}, nil
	}
	return nil, newHTTPError(method, path, resp, b)
}

// decodeBody decodes an answer of path into out.
func decodeBody(path string, b []byte, out any) error {
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("the answer to %s is not the expected JSON (%v): %s", path, err, snippet(b))
	}
	return nil
}

// transportError means no HTTP answer arrived: the server is not
// reachable, the connection broke, or the request timed out.
type transportError struct {
	URL, Method, Path string
	Err               error
}

func (e *transportError) Error() string {
	var ne net.Error
	hint := ""
	switch {
	case errors.As(e.Err, &ne) && ne.Timeout():
		hint = " (the request timed out; raise --timeout for large batches)"
	case isConnRefused(e.Err):
		hint = " (is `ragd serve` running there? set --server or $" + envServer + ")"
	}
	return fmt.Sprintf("cannot reach ragd at %s: %s %s: %v%s", e.URL, e.Method, e.Path, unwrapURLError(e.Err), hint)
}

func (e *transportError) Unwrap() error { return e.Err }

func isConnRefused(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
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

// httpError is a non-2xx answer. Detail is the API's error body; when the
// body was not one (a proxy's page, say), Detail.Code is empty and Raw
// holds the start of the body.
type httpError struct {
	Method, Path string
	Status       int
	Detail       api.ErrorDetail
	Raw          string
	// Body is the whole body, for answers that carry data on an error
	// status (GET /v1/status/health answers 503 with the health report).
	Body []byte
	// RetryAfter is the Retry-After header, zero when absent.
	RetryAfter time.Duration
}

func newHTTPError(method, path string, resp *http.Response, body []byte) *httpError {
	e := &httpError{Method: method, Path: path, Status: resp.StatusCode, Body: body}
	var er api.ErrorResponse
	if json.Unmarshal(body, &er) == nil && er.Error.Code != "" {
		e.Detail = er.Error
	} else {
		e.Raw = snippet(body)
	}
	if s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

func (e *httpError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "server answered %d %s", e.Status, http.StatusText(e.Status))
	if e.Detail.Code != "" {
		fmt.Fprintf(&b, ": %s: %s", e.Detail.Code, e.Detail.Message)
		if e.Detail.Field != "" && !strings.Contains(e.Detail.Message, e.Detail.Field) {
			fmt.Fprintf(&b, " (field %s)", e.Detail.Field)
		}
	} else if e.Raw != "" {
		fmt.Fprintf(&b, ": %s", e.Raw)
	}
	fmt.Fprintf(&b, " [%s %s", e.Method, e.Path)
	if e.Detail.RequestID != "" {
		fmt.Fprintf(&b, ", request id %s", e.Detail.RequestID)
	}
	b.WriteString("]")
	switch e.Status {
	case http.StatusUnauthorized:
		b.WriteString("; pass a valid key with --api-key or $" + envAPIKey)
	case http.StatusForbidden:
		if e.Detail.Code == api.CodeForbidden {
			b.WriteString("; this API key's role may not do this (writes need an admin key)")
		}
	case http.StatusNotFound:
		if e.Detail.Code == "" || e.Detail.Message == "no such route" {
			b.WriteString("; is --server a ragd server?")
		}
	}
	return b.String()
}

// code is the API error code, or "http_NNN" when the body had none.
func (e *httpError) code() string {
	if e.Detail.Code != "" {
		return e.Detail.Code
	}
	return "http_" + strconv.Itoa(e.Status)
}

// retryable reports whether err may pass if the same request is sent
// again: no answer arrived, or the server answered 429 or 5xx.
func retryable(err error) bool {
	var te *transportError
	if errors.As(err, &te) {
		return true
	}
	var he *httpError
	if errors.As(err, &he) {
		return he.Status == http.StatusTooManyRequests || he.Status >= 500
	}
	return false
}

// snippet returns the start of a body for error messages.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "(empty body)"
	}
	return truncateRunes(strings.Join(strings.Fields(s), " "), 200)
}

// truncateRunes cuts s to at most n runes, marking the cut with "…".
func truncateRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
