package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/wire"
)

// Query runs a hybrid query (POST /v1/query). A partial answer (a source
// dropped) is a success: Result.Partial and Result.Sources say which source
// was dropped and why. When fewer sources answered than the query required,
// the error is an *Error with code not_enough_sources whose Body holds
// every source's status. A filter that cannot be sent (a zero spi.Value
// as an operand, a nil expression, more conditions than any ragd takes) is
// refused before sending, with the server's words: a *spi.FilterError
// wrapping spi.ErrInvalidQuery.
func (c *Client) Query(ctx context.Context, q wire.Query) (*wire.Result, error) {
	if err := q.Filter.Validate(); err != nil {
		return nil, fmt.Errorf("client: query: %w", err)
	}
	var res wire.Result
	if _, err := c.call(ctx, http.MethodPost, "/v1/query", q, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// WriteOptions are the optional parameters of Upsert and Delete.
type WriteOptions struct {
	// Wait makes the answer wait until every derived store (keyword,
	// graph) has applied the writes, at most this long (api.MaxWait).
	Wait time.Duration
}

func (o *WriteOptions) query() string {
	if o == nil || o.Wait <= 0 {
		return ""
	}
	return "?wait=" + url.QueryEscape(o.Wait.String())
}

// Upsert writes documents (POST /v1/documents). The answer has one result
// per document, in order; a document that failed is reported in its result
// (the HTTP status is then 207), not as an error. A metadata value that is
// not a value (the zero spi.Value) cannot be encoded: the batch is then not
// sent, and the error, wrapping spi.ErrInvalidMetadata, names the document
// by its index and the key.
func (c *Client) Upsert(ctx context.Context, docs []spi.Document, opts *WriteOptions) (*wire.BatchResponse, error) {
	for i, d := range docs {
		if err := d.Metadata.Validate(); err != nil {
			return nil, fmt.Errorf("client: documents[%d]: %w (nothing was sent)", i, err)
		}
	}
	var res wire.BatchResponse
	if _, err := c.call(ctx, http.MethodPost, "/v1/documents"+opts.query(), wire.UpsertRequest{Documents: docs}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Delete deletes documents by id (POST /v1/documents/delete); ids that do
// not exist are reported as not_found in their results.
func (c *Client) Delete(ctx context.Context, ids []string, opts *WriteOptions) (*wire.BatchResponse, error) {
	var res wire.BatchResponse
	if _, err := c.call(ctx, http.MethodPost, "/v1/documents/delete"+opts.query(), wire.DeleteRequest{IDs: ids}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// documentPath escapes id exactly once for its path segment.
func documentPath(id string) string { return "/v1/documents/" + url.PathEscape(id) }

// Document reads one document (GET /v1/documents/{id}), without its
// vector. A missing id (or another tenant's) is ErrNotFound.
func (c *Client) Document(ctx context.Context, id string) (*spi.Document, error) {
	var d spi.Document
	if _, err := c.call(ctx, http.MethodGet, documentPath(id), nil, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// DeleteDocument deletes one document (DELETE /v1/documents/{id}). A
// missing id (or another tenant's) is ErrNotFound.
func (c *Client) DeleteDocument(ctx context.Context, id string, opts *WriteOptions) (*wire.DocumentResult, error) {
	var res wire.DocumentResult
	if _, err := c.call(ctx, http.MethodDelete, documentPath(id)+opts.query(), nil, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Health reads the component health roll-up (GET /v1/status/health). An
// unhealthy server answers 503 with the same report: that is a report, not
// an error (its Status says so).
func (c *Client) Health(ctx context.Context) (*wire.HealthResponse, error) {
	var h wire.HealthResponse
	if _, err := c.call(ctx, http.MethodGet, "/v1/status/health", nil, &h, http.StatusServiceUnavailable); err != nil {
		return nil, err
	}
	return &h, nil
}

// Ready reads /readyz. A server that is not ready answers 503 with the
// report; Ready returns it with ready=false and no error.
func (c *Client) Ready(ctx context.Context) (*wire.ReadyResponse, bool, error) {
	var r wire.ReadyResponse
	st, err := c.call(ctx, http.MethodGet, "/readyz", nil, &r, http.StatusServiceUnavailable)
	if err != nil {
		return nil, false, err
	}
	return &r, st == http.StatusOK, nil
}

// Breakers lists the circuit breakers (GET /v1/status/breakers).
func (c *Client) Breakers(ctx context.Context) (*wire.BreakersResponse, error) {
	var b wire.BreakersResponse
	if _, err := c.call(ctx, http.MethodGet, "/v1/status/breakers", nil, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

func breakerPath(name, verb string) string {
	return "/v1/status/breakers/" + url.PathEscape(name) + "/" + verb
}

// ForceOpen opens a breaker now: the source leaves every query until it is
// closed or its reset timeout passes (admin key, not bound to a tenant).
func (c *Client) ForceOpen(ctx context.Context, name string) (*wire.ForceOpenResponse, error) {
	var r wire.ForceOpenResponse
	if _, err := c.call(ctx, http.MethodPost, breakerPath(name, "force-open"), nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ForceClose closes a breaker now (admin key, not bound to a tenant).
func (c *Client) ForceClose(ctx context.Context, name string) (*wire.ForceCloseResponse, error) {
	var r wire.ForceCloseResponse
	if _, err := c.call(ctx, http.MethodPost, breakerPath(name, "force-close"), nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Hold holds a breaker open for maintenance until ForceClose releases it:
// no cooldown, no trial call, no probe (admin key, not bound to a tenant).
// reason, which may be empty, is shown to everyone with the key's name.
// Holding a held breaker again replaces who and why, so a retry is safe.
func (c *Client) Hold(ctx context.Context, name, reason string) (*wire.HoldResponse, error) {
	var in any
	if reason != "" {
		in = wire.HoldRequest{Reason: reason}
	}
	var r wire.HoldResponse
	if _, err := c.call(ctx, http.MethodPost, breakerPath(name, "hold"), in, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Events reads the timeline after sequence number after, oldest first, at
// most limit events (0: the server's default); the answer's More says
// whether others follow (ask again after the last one's Seq)
// (GET /v1/status/events).
func (c *Client) Events(ctx context.Context, after uint64, limit int) (*wire.EventsResponse, error) {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatUint(after, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/v1/status/events"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var p wire.EventsResponse
	if _, err := c.call(ctx, http.MethodGet, path, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Sources reads each source's latency and share over the last minute of
// queries (GET /v1/status/sources).
func (c *Client) Sources(ctx context.Context) (*wire.SourcesResponse, error) {
	var s wire.SourcesResponse
	if _, err := c.call(ctx, http.MethodGet, "/v1/status/sources", nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Check compares every derived store with the record; repair rewrites what
// differs (POST /v1/status/check, admin key not bound to a tenant).
func (c *Client) Check(ctx context.Context, repair bool) (*wire.CheckReport, error) {
	path := "/v1/status/check"
	if repair {
		path += "?repair=true"
	}
	var rep wire.CheckReport
	if _, err := c.call(ctx, http.MethodPost, path, nil, &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}

// ServerInfo describes the server (GET /v1/status/server): its version,
// the caller's key, and its sources, stores and embedder.
func (c *Client) ServerInfo(ctx context.Context) (*wire.ServerResponse, error) {
	var s wire.ServerResponse
	if _, err := c.call(ctx, http.MethodGet, "/v1/status/server", nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}
