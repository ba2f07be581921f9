package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"syscall"

	"github.com/labstack/echo/v4"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/internal/strictjson"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// Error codes answered by the API. Per-document codes of batch results
// are listed with DocumentResult.
const (
	CodeMalformedJSON         = strictjson.CodeMalformed
	CodeUnknownField          = strictjson.CodeUnknownField
	CodeDuplicateField        = strictjson.CodeDuplicateField
	CodeInvalidBody           = strictjson.CodeInvalidBody
	CodeInvalidQuery          = "invalid_query"
	CodeEmptyQuery            = "empty_query"
	CodeEmptyBatch            = "empty_batch"
	CodeTooManyDocuments      = "too_many_documents"
	CodeTooManyIDs            = "too_many_ids"
	CodeDuplicateID           = "duplicate_id"
	CodeInvalidID             = "invalid_id"
	CodeNoChangeLog           = "no_change_log"
	CodeUnauthorized          = "unauthorized"
	CodeForbidden             = "forbidden"
	CodeTenantForbidden       = "tenant_forbidden"
	CodeNotFound              = "not_found"
	CodeUnknownBreaker        = "unknown_breaker"
	CodeMethodNotAllowed      = "method_not_allowed"
	CodeMethodNotFound        = "method_not_found" // /mcp only: a JSON-RPC method the MCP server does not serve
	CodeUnknownTool           = "unknown_tool"     // /mcp only: a tools/call of a tool the MCP server does not have
	CodeBodyTooLarge          = "body_too_large"
	CodeUnsupportedMedia      = "unsupported_media_type"
	CodeUnsupportedEncoding   = "unsupported_content_encoding"
	CodeTooManyRequests       = "too_many_requests"
	CodeClientClosedRequest   = "client_closed_request"
	CodeInternal              = "internal"
	CodeNotEnoughSources      = "not_enough_sources"
	CodeUnavailable           = "unavailable"
	CodeTimeout               = "timeout"
	CodeInvalidRequest        = "invalid_request" // /mcp: the MCP layer refused the headers
	statusClientClosedRequest = 499
)

// apiError is an error the handlers raise with its answer already decided.
type apiError struct {
	Status int
	Detail ErrorDetail
	// cause is logged (for 5xx) but never answered.
	cause error
	// logged marks a 5xx that was logged where it happened (a panic).
	logged bool
}

func (e *apiError) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("api: %d %s: %s: %v", e.Status, e.Detail.Code, e.Detail.Message, e.cause)
	}
	return fmt.Sprintf("api: %d %s: %s", e.Status, e.Detail.Code, e.Detail.Message)
}

func (e *apiError) Unwrap() error { return e.cause }

func newError(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Detail: ErrorDetail{Code: code, Message: fmt.Sprintf(format, args...)}}
}

func fieldError(code, field, format string, args ...any) *apiError {
	e := newError(http.StatusBadRequest, code, format, args...)
	e.Detail.Field = field
	return e
}

// translate maps any error a handler or middleware returns to its answer.
// It is the one place domain errors become status codes.
func translate(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return fromEchoError(he)
	}
	var qe *retriever.QueryError
	if errors.As(err, &qe) {
		return queryError(qe)
	}
	var ne *retriever.NotEnoughSourcesError
	if errors.As(err, &ne) && rejectedAsInvalid(ne.Sources) {
		// The client's query, not the backends, is at fault.
		e := newError(http.StatusBadRequest, CodeInvalidQuery, "a retrieval source rejected the query as invalid; see sources")
		e.Detail.Sources = ne.Sources
		return e
	}
	if ne != nil && ne.CallerDeadline() {
		// The query's own deadline cut the sources off, not the backends:
		// a timeout the client chose, never a 503 with a Retry-After.
		healthy := ne.Healthy
		e := newError(http.StatusGatewayTimeout, CodeTimeout,
			"the query's own deadline (budget_ms or sources.NAME.timeout_ms) ran out before %d retrieval source(s) answered; see sources", ne.Required)
		e.Detail.Required, e.Detail.Healthy, e.Detail.Sources = ne.Required, &healthy, ne.Sources
		return e
	}
	if ne != nil {
		healthy := ne.Healthy
		e := newError(http.StatusServiceUnavailable, CodeNotEnoughSources,
			"%d of the required %d retrieval sources answered; see sources", ne.Healthy, ne.Required)
		e.Detail.Required, e.Detail.Healthy, e.Detail.Sources = ne.Required, &healthy, ne.Sources
		return e
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return newError(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "request body exceeds %d bytes", mbe.Limit)
	case errors.Is(err, retriever.ErrNotEnoughSources):
		return newError(http.StatusServiceUnavailable, CodeNotEnoughSources, "not enough retrieval sources are healthy")
	case errors.Is(err, spi.ErrInvalidQuery):
		// A backend's message may quote the query: answer a generic one.
		return newError(http.StatusBadRequest, CodeInvalidQuery, "the query was rejected as invalid")
	case errors.Is(err, spi.ErrNotFound):
		return newError(http.StatusNotFound, CodeNotFound, "not found")
	case errors.Is(err, breaker.ErrUnknownBreaker):
		return newError(http.StatusNotFound, CodeUnknownBreaker, "no such circuit breaker")
	case errors.Is(err, context.DeadlineExceeded):
		return &apiError{Status: http.StatusGatewayTimeout, Detail: ErrorDetail{Code: CodeTimeout, Message: "the request did not finish within its deadline"}, cause: err}
	case errors.Is(err, context.Canceled), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET):
		// Canceled, or the answer could not be written: the client went
		// away, which is no server error.
		return &apiError{Status: statusClientClosedRequest, Detail: ErrorDetail{Code: CodeClientClosedRequest, Message: "the client closed the request"}, cause: err}
	case errors.Is(err, spi.ErrUnavailable):
		return &apiError{Status: http.StatusServiceUnavailable, Detail: ErrorDetail{Code: CodeUnavailable, Message: "a backend is unavailable; retry later"}, cause: err}
	}
	return &apiError{Status: http.StatusInternalServerError, Detail: ErrorDetail{Code: CodeInternal, Message: "internal error"}, cause: err}
}

// rejectedAsInvalid reports whether some source rejected the query as
// invalid.
func rejectedAsInvalid(sources map[string]retriever.SourceStatus) bool {
	for _, st := range sources {
		if st.Status == retriever.StatusError && st.Error == retriever.ReasonInvalidQuery {
			return true
		}
	}
	return false
}

// queryError answers a retriever validation error with a code named after
// the offending top-level field: invalid_limit, invalid_sources, ...
func queryError(qe *retriever.QueryError) *apiError {
	code := CodeInvalidQuery
	if root := strictjson.RootField(qe.Field); root != "" {
		code = "invalid_" + root
	}
	msg := qe.Message
	if qe.Field != "" {
		msg = qe.Field + ": " + qe.Message
	}
	return fieldError(code, qe.Field, "%s", msg)
}

func fromEchoError(he *echo.HTTPError) *apiError {
	switch he.Code {
	case http.StatusNotFound:
		return newError(http.StatusNotFound, CodeNotFound, "no such route")
	case http.StatusMethodNotAllowed:
		return newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "method not allowed on this route")
	case http.StatusRequestEntityTooLarge:
		return newError(he.Code, CodeBodyTooLarge, "request body too large")
	case http.StatusUnsupportedMediaType:
		return newError(he.Code, CodeUnsupportedMedia, "unsupported media type")
	case http.StatusUnauthorized:
		return newError(he.Code, CodeUnauthorized, "missing or invalid API key")
	case http.StatusForbidden:
		return newError(he.Code, CodeForbidden, "forbidden")
	case http.StatusTooManyRequests:
		return newError(he.Code, CodeTooManyRequests, "too many requests in flight; retry later")
	}
	if he.Code >= 400 && he.Code < 500 {
		return newError(he.Code, strings.ReplaceAll(strings.ToLower(http.StatusText(he.Code)), " ", "_"), "%s", http.StatusText(he.Code))
	}
	return &apiError{Status: http.StatusInternalServerError, Detail: ErrorDetail{Code: CodeInternal, Message: "internal error"}, cause: he}
}

// handleError is the echo HTTPErrorHandler: translate, log server errors,
// answer with the JSON error body.
func (s *Server) handleError(err error, c echo.Context) {
	ae := translate(err)
	rid := requestID(c)
	if ae.Status >= 500 && !ae.logged {
		s.log.LogAttrs(c.Request().Context(), slog.LevelError, "api: request failed",
			slog.String("request_id", rid),
			slog.String("route", s.routeLabel(c)),
			slog.String("method", c.Request().Method),
			slog.Int("status", ae.Status),
			slog.String("code", ae.Detail.Code),
			slog.String("error", errString(ae.cause)))
	}
	c.Set(ctxErrorCode, ae.Detail.Code)
	if c.Response().Committed {
		return
	}
	detail := ae.Detail
	detail.RequestID = rid
	if detail.Code == CodeInternal {
		detail.Message = "internal error; quote request id " + rid + " when reporting it"
	}
	if ae.Status == http.StatusUnauthorized {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="ragd"`)
	}
	if ae.Status == http.StatusMethodNotAllowed {
		c.Response().Header().Set(echo.HeaderAllow, allowHeader(c))
	}
	if ae.Status == http.StatusTooManyRequests {
		c.Response().Header().Set("Retry-After", "1")
	}
	if ra := retryAfter(ae.Detail.Sources); ra > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(ra))
	}
	if err := s.writeJSON(c, ae.Status, ErrorResponse{Error: detail}); err != nil {
		s.log.LogAttrs(c.Request().Context(), slog.LevelWarn, "api: writing error response",
			slog.String("request_id", rid), slog.String("error", err.Error()))
	}
}

// retryAfter is the whole seconds until the first circuit-open source
// admits a trial call, or 0 when no source reports a retry time.
func retryAfter(sources map[string]retriever.SourceStatus) int {
	var minMS int64
	for _, st := range sources {
		if st.RetryInMS > 0 && (minMS == 0 || st.RetryInMS < minMS) {
			minMS = st.RetryInMS
		}
	}
	if minMS == 0 {
		return 0
	}
	return int((minMS + 999) / 1000)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
