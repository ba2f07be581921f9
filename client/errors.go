package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ragd/ragd/internal/retryafter"
	"github.com/ragd/ragd/wire"
)

// Sentinels an *Error matches with errors.Is, by HTTP status.
var (
	ErrUnauthorized = errors.New("ragd: unauthorized")           // 401: missing or unknown key
	ErrForbidden    = errors.New("ragd: forbidden")              // 403: the key's role or tenant may not do this
	ErrNotFound     = errors.New("ragd: not found")              // 404
	ErrRateLimited  = errors.New("ragd: too many requests")      // 429
	ErrUnavailable  = errors.New("ragd: unavailable")            // 502, 503, 504
	ErrBadRequest   = errors.New("ragd: request rejected (4xx)") // any other 4xx
)

// Error is an answer from ragd (or a proxy in front of it) with a non-2xx
// status, after any retries.
type Error struct {
	Method, Path string
	StatusCode   int
	// Detail is the API's error body: a stable Code, a Message for people,
	// the RequestID to quote in a report, and the offending Field. When the
	// answer was not ragd's error shape (a proxy's page), Detail.Code is
	// empty and Raw holds the start of the body.
	Detail wire.ErrorDetail
	Raw    string
	// Body is the whole answer (a 503 not_enough_sources carries every
	// source's status).
	Body []byte
	// RetryAfter is the server's Retry-After, zero when absent or
	// malformed, the largest time.Duration past a million seconds (a wait
	// no retry takes).
	RetryAfter time.Duration
}

// Code is the API's error code, or "http_NNN" when the answer had none.
func (e *Error) Code() string {
	if e.Detail.Code != "" {
		return e.Detail.Code
	}
	return "http_" + strconv.Itoa(e.StatusCode)
}

// RequestID is the id ragd gave the request, empty when the answer had none.
func (e *Error) RequestID() string { return e.Detail.RequestID }

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "server answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
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
	return b.String()
}

// Is matches the sentinel of e's status.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized
	case ErrForbidden:
		return e.StatusCode == http.StatusForbidden
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests
	case ErrUnavailable:
		return e.StatusCode == http.StatusBadGateway || e.StatusCode == http.StatusServiceUnavailable ||
			e.StatusCode == http.StatusGatewayTimeout
	case ErrBadRequest:
		return e.StatusCode >= 400 && e.StatusCode < 500
	}
	return false
}

func newError(method, path string, resp *http.Response, body []byte) *Error {
	e := &Error{Method: method, Path: path, StatusCode: resp.StatusCode, Body: body}
	var er wire.ErrorResponse
	if json.Unmarshal(body, &er) == nil && er.Error.Code != "" {
		e.Detail = er.Error
	} else {
		e.Raw = snippet(body)
	}
	e.RetryAfter = retryafter.Parse(resp.Header.Get("Retry-After"), time.Now())
	return e
}

// TransportError means no answer arrived: the server is not reachable, the
// connection broke, or the attempt timed out.
type TransportError struct {
	BaseURL, Method, Path string
	Err                   error
}

func (e *TransportError) Error() string {
	var ne net.Error
	hint := ""
	switch {
	case errors.As(e.Err, &ne) && ne.Timeout():
		hint = " (the request timed out)"
	case ConnRefused(e):
		hint = " (is `ragd serve` running there?)"
	}
	return fmt.Sprintf("cannot reach ragd at %s: %s %s: %v%s", e.BaseURL, e.Method, e.Path, e.Err, hint)
}

func (e *TransportError) Unwrap() error { return e.Err }

// ConnRefused reports whether err is a failure to connect (nothing was
// sent).
func ConnRefused(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// snippet returns the start of a body for error messages.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if s == "" {
		return "(empty body)"
	}
	if r := []rune(s); len(r) > 200 {
		return string(r[:199]) + "…"
	}
	return s
}
