package opensearch

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	opensearchgo "github.com/opensearch-project/opensearch-go/v4"

	"github.com/ragd/ragd/spi"
)

// maxBody bounds how much of a response is read: a search of MaxK hits
// with ids of 512 bytes fits many times over.
const maxBody = 64 << 20

// client sends requests through opensearch-go's transport with its
// retries, node discovery and health checks off: ragd's guard decides when
// a node is called again, and one call is one attempt.
type client struct {
	os      *opensearchgo.Client
	timeout time.Duration
}

func newClient(c Config) (*client, error) {
	tr := c.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.DialContext = (&net.Dialer{Timeout: c.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext
		t.TLSHandshakeTimeout = c.ConnectTimeout
		t.MaxIdleConnsPerHost = c.MaxConns
		t.MaxConnsPerHost = c.MaxConns
		t.TLSClientConfig = &tls.Config{InsecureSkipVerify: c.InsecureSkipVerify} //nolint:gosec // an operator's explicit choice
		if len(c.CACert) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(c.CACert) {
				return nil, errors.New("keyword/opensearch: the CA certificate holds no PEM certificate")
			}
			t.TLSClientConfig.RootCAs = pool
		}
		tr = t
	}
	off := false
	osc, err := opensearchgo.NewClient(opensearchgo.Config{
		Addresses:             c.Hosts,
		Username:              c.Username,
		Password:              c.Password,
		Transport:             tr,
		DisableRetry:          true,
		DiscoverNodesOnStart:  &off,
		HealthCheckMaxRetries: -1,
		MaxRetryClusterHealth: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("keyword/opensearch: client: %w", err)
	}
	return &client{os: osc, timeout: c.CallTimeout}, nil
}

// response is a request's answer: the HTTP status and the body.
type response struct {
	status int
	body   []byte
}

// do sends one request and reads the answer. A transport failure (the
// node unreachable, hung past the deadline, the connection lost) wraps
// spi.ErrUnavailable, or ctx's error when the caller's context ended; a
// call without a deadline gets Config.CallTimeout. An HTTP error status is
// not an error here: callers read it with failure.
func (c *client) do(ctx context.Context, method, path string, query url.Values, body any) (response, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.timeout,
			fmt.Errorf("keyword/opensearch: call timeout %v: %w", c.timeout, context.DeadlineExceeded))
		defer cancel()
	}
	var rd io.Reader
	ndjson := false
	switch b := body.(type) {
	case nil:
	case []byte: // a bulk body, already NDJSON
		rd, ndjson = bytes.NewReader(b), true
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			return response{}, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(buf)
	}
	u := path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return response{}, err
	}
	req.Header = http.Header{}
	if rd != nil {
		if ndjson {
			req.Header.Set("Content-Type", "application/x-ndjson")
		} else {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	res, err := c.os.Stream(req)
	if err != nil {
		return response{}, transportError(ctx, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil {
		return response{}, transportError(ctx, err)
	}
	return response{status: res.StatusCode, body: b}, nil
}

// transportError wraps a failure to get an answer: the caller's context
// ending (its deadline, or it gave up) keeps its own error, so gates can
// tell a source timeout from the caller's; anything else means the node
// did not answer.
func transportError(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
		return err
	}
	return fmt.Errorf("%w: %v", spi.ErrUnavailable, err)
}

// ErrAuth means the cluster refused the credentials (HTTP 401 or 403): a
// configuration error, which fails Open rather than being retried.
var ErrAuth = errors.New("keyword/opensearch: the cluster refused the credentials")

// failure classifies an error status, the one place the backend decides
// whose fault an answer is: 429 (a rejected execution, a tripped circuit
// breaker of the cluster) is overload, spi.ErrOverloaded, which gates
// count as neither success nor failure; 400 is the request's fault,
// spi.ErrInvalidQuery; 401/403 wrap ErrAuth; everything else, 5xx
// included, wraps spi.ErrUnavailable. The error holds the cluster's error
// type and reason, never the request.
func failure(r response) error {
	reason := errorReason(r.body)
	switch {
	case r.status == http.StatusTooManyRequests:
		return fmt.Errorf("%w: %w: HTTP 429: %s", spi.ErrOverloaded, spi.ErrUnavailable, reason)
	case r.status == http.StatusBadRequest:
		// Only the type: a parse error's reason may quote the query.
		return fmt.Errorf("%w: HTTP 400: %s", spi.ErrInvalidQuery, errorTypes(r.body))
	case r.status == http.StatusUnauthorized || r.status == http.StatusForbidden:
		return fmt.Errorf("%w: HTTP %d: %s", ErrAuth, r.status, reason)
	default:
		return fmt.Errorf("%w: HTTP %d: %s", spi.ErrUnavailable, r.status, reason)
	}
}

// itemFailure classifies one bulk item's error by its status, like
// failure: es_rejected_execution_exception comes as 429.
func itemFailure(status int, e *itemError) error {
	reason := "unknown"
	if e != nil {
		reason = e.Type + ": " + truncate(e.Reason, 200)
	}
	return failure(response{status: status, body: []byte(`{"error":{"type":` + quote(reason) + `}}`)})
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// errorReason extracts "type: reason" from an OpenSearch error body.
func errorReason(body []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || len(e.Error) == 0 {
		return truncate(strings.TrimSpace(string(body)), 200)
	}
	var s string
	if json.Unmarshal(e.Error, &s) == nil {
		return truncate(s, 200)
	}
	var d struct {
		Type      string `json:"type"`
		Reason    string `json:"reason"`
		RootCause []struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		} `json:"root_cause"`
	}
	if json.Unmarshal(e.Error, &d) != nil {
		return "unreadable error"
	}
	if len(d.RootCause) > 0 && d.RootCause[0].Type != d.Type {
		return truncate(d.Type+": "+d.RootCause[0].Type+": "+d.RootCause[0].Reason, 200)
	}
	if d.Reason == "" {
		return d.Type
	}
	return truncate(d.Type+": "+d.Reason, 200)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// errorTypes is "type" or "type: root cause type" of an error body.
func errorTypes(body []byte) string {
	var e struct {
		Error struct {
			Type      string `json:"type"`
			RootCause []struct {
				Type string `json:"type"`
			} `json:"root_cause"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	if len(e.Error.RootCause) > 0 && e.Error.RootCause[0].Type != e.Error.Type {
		return e.Error.Type + ": " + e.Error.RootCause[0].Type
	}
	if e.Error.Type == "" {
		return "unknown error"
	}
	return e.Error.Type
}

// errorType is the error type of an OpenSearch error body ("" when none).
func errorType(body []byte) string {
	var e struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Error.Type
}

// itemError is a bulk item's error.
type itemError struct {
	Type   string `json:"type"`
	Reason string `json:"reason"`
}
