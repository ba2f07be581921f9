package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// client speaks ragd's HTTP API as any client would: JSON over HTTP with a
// bearer key. The wire types below are written from docs/api.md, not
// imported from package api, so a renamed JSON field fails these tests.
type client struct {
	base string
	key  string
	hc   *http.Client
}

func newClient(addr, key string) *client {
	return &client{
		base: "http://" + addr,
		key:  key,
		hc: &http.Client{
			Timeout:   60 * time.Second,
			Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 0, IdleConnTimeout: 30 * time.Second},
		},
	}
}

// call sends in (JSON-encoded unless nil) and decodes a 2xx answer into
// out (unless nil). It returns the status and the raw body.
func (c *client) call(ctx context.Context, method, path string, in, out any) (int, []byte, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return 0, nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, b, err
	}
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, b, fmt.Errorf("decode %s %s answer: %w", method, path, err)
		}
	}
	return resp.StatusCode, b, nil
}

func (c *client) close() { c.hc.CloseIdleConnections() }

// document is the wire form of a document (POST /v1/documents, hits).
type document struct {
	ID       string            `json:"id"`
	Tenant   string            `json:"tenant,omitempty"`
	Title    string            `json:"title,omitempty"`
	Text     string            `json:"text,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Entities []string          `json:"entities,omitempty"`
}

type upsertRequest struct {
	Documents []document `json:"documents"`
}

type docResult struct {
	ID        string            `json:"id"`
	Status    string            `json:"status"` // ok | failed | not_found
	Code      string            `json:"code"`
	Error     string            `json:"error"`
	Version   uint64            `json:"version"`
	Unchanged bool              `json:"unchanged"`
	Stores    map[string]string `json:"stores"` // vector: ok; keyword, graph: current | pending
}

type batchResponse struct {
	Results  []docResult `json:"results"`
	Total    int         `json:"total"`
	OK       int         `json:"ok"`
	Pending  int         `json:"pending"`
	Failed   int         `json:"failed"`
	NotFound int         `json:"not_found"`
}

type deleteRequest struct {
	IDs []string `json:"ids"`
}

type sourceOptions struct {
	Enabled *bool    `json:"enabled,omitempty"`
	Weight  *float64 `json:"weight,omitempty"`
}

type queryRequest struct {
	Text    string                   `json:"text"`
	Limit   int                      `json:"limit,omitempty"`
	Sources map[string]sourceOptions `json:"sources,omitempty"`
}

type sourceStatus struct {
	Status    string  `json:"status"`
	TookMS    float64 `json:"took_ms"`
	Returned  int     `json:"returned"`
	Error     string  `json:"error"`
	RetryInMS int64   `json:"retry_in_ms"`
}

type hit struct {
	ID       string    `json:"id"`
	Rank     int       `json:"rank"`
	Score    float64   `json:"score"`
	Document *document `json:"document"`
}

type queryResult struct {
	Hits      []hit                   `json:"hits"`
	Sources   map[string]sourceStatus `json:"sources"`
	Partial   bool                    `json:"partial"`
	Degraded  bool                    `json:"degraded"`
	Missing   []string                `json:"missing"`
	Hydration map[string]sourceStatus `json:"hydration"`
	Total     int                     `json:"total"`
}

type component struct {
	Status string `json:"status"`
	Detail string `json:"detail"`
	State  string `json:"state"`
}

type healthResponse struct {
	Status     string               `json:"status"`
	Components map[string]component `json:"components"`
	Usable     []string             `json:"usable"`
	Log        *logStatus           `json:"log"`
}

type logStatus struct {
	AsOf   time.Time `json:"as_of"`
	Head   uint64    `json:"head"`
	Stores []struct {
		Store      string  `json:"store"`
		Applied    uint64  `json:"applied"`
		Behind     uint64  `json:"behind"`
		LagSeconds float64 `json:"lag_seconds"`
		Error      string  `json:"error"`
		Dormant    bool    `json:"dormant"`
	} `json:"stores"`
}

// storeCheck is one store of POST /v1/status/check.
type storeCheck struct {
	Store     string `json:"store"`
	Missing   int    `json:"missing"`
	Stale     int    `json:"stale"`
	Extra     int    `json:"extra"`
	Repaired  int    `json:"repaired"`
	Remaining int    `json:"remaining"`
	Error     string `json:"error"`
}

type checkReport struct {
	Head   uint64       `json:"head"`
	Stores []storeCheck `json:"stores"`
}

type breakerSnapshot struct {
	Name         string `json:"name"`
	State        string `json:"state"`
	FailureCount int    `json:"failure_count"`
	OpenedTotal  uint64 `json:"opened_total"`
	RetryInMS    int64  `json:"retry_in_ms"`
}

type breakersResponse struct {
	Breakers []breakerSnapshot `json:"breakers"`
	Total    int               `json:"total"`
}

type forceCloseResponse struct {
	Breaker      breakerSnapshot `json:"breaker"`
	ForcedClosed bool            `json:"forced_closed"`
}

type errorResponse struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func errorCode(body []byte) string {
	var e errorResponse
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	return e.Error.Code
}
