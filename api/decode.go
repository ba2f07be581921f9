package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ragd/ragd/internal/strictjson"
)

// bodyLimit is the body limit of the route at path: the query's own,
// smaller one for POST /v1/query and /mcp, whose tool calls are queries
// (0 in the config: the general one).
func (s *Server) bodyLimit(path string) int64 {
	if (path == "/v1/query" || path == PathMCP) && s.cfg.Server.QueryBodyLimitBytes > 0 {
		return s.cfg.Server.QueryBodyLimitBytes
	}
	return s.cfg.Server.BodyLimitBytes
}

// readBody reads a JSON request body into memory before the handler runs:
// the content type must be JSON, the body at most limit bytes (checked
// against Content-Length before reading, and enforced while reading so a
// lying or chunked client cannot make the server read more). The whole
// read is bounded by the server's read timeout.
func (s *Server) readBody(limit int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc { return readBodyUpTo(limit, next) }
}

func readBodyUpTo(limit int64, next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if err := checkJSONContentType(r.Header.Get(echo.HeaderContentType)); err != nil {
			return err
		}
		if err := checkIdentityEncoding(c); err != nil {
			return err
		}
		if r.ContentLength > limit {
			return newError(http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
				"request body of %d bytes exceeds the limit of %d bytes", r.ContentLength, limit)
		}
		body, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, limit))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return newError(http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
					"request body exceeds the limit of %d bytes", limit)
			}
			// The client went away, stalled past the read timeout, or
			// the connection broke mid-body.
			return newError(http.StatusBadRequest, CodeMalformedJSON, "could not read the request body")
		}
		c.Set(ctxBody, body)
		return next(c)
	}
}

// decodeJSON decodes the body readBody read into dst: one JSON object
// with no unknown fields and nothing after it.
func (s *Server) decodeJSON(c echo.Context, dst any) error {
	body, ok := c.Get(ctxBody).([]byte)
	if !ok {
		return errors.New("api: decodeJSON on a route without readBody")
	}
	return decodeBody(body, dst)
}

// decodeBody decodes one JSON object from body into dst, strictly
// (strictjson.Decode: valid UTF-8, no unknown field, no field name in
// another case, no name twice in one object, nothing after the object),
// refusing anything else with a 400.
func decodeBody(body []byte, dst any) error {
	if e := strictjson.Decode(body, dst, "request body"); e != nil {
		return badJSON(e)
	}
	return nil
}

// badJSON is a strictjson error as the API's 400.
func badJSON(e *strictjson.Error) *apiError {
	ae := newError(http.StatusBadRequest, e.Code, "%s", e.Message)
	ae.Detail.Field, ae.Detail.Offset = e.Field, e.Offset
	return ae
}

// checkJSONContentType accepts application/json and any +json type, with
// parameters (charset) allowed.
func checkJSONContentType(ct string) error {
	if ct == "" {
		return newError(http.StatusUnsupportedMediaType, CodeUnsupportedMedia, "Content-Type is required and must be application/json")
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !(mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))) {
		return newError(http.StatusUnsupportedMediaType, CodeUnsupportedMedia,
			"Content-Type must be application/json, got %s", truncate(ct, 64))
	}
	return nil
}

// checkIdentityEncoding refuses a compressed body (Content-Encoding other
// than identity) with 415 and Accept-Encoding: identity (RFC 7694). ragd
// does not decompress request bodies: the body limit would bound the
// compressed size only, and a decompression bomb would cost memory
// before any check; bulk clients on a slow link compress at the TLS
// terminator or proxy instead.
func checkIdentityEncoding(c echo.Context) error {
	for _, v := range c.Request().Header.Values(echo.HeaderContentEncoding) {
		for coding := range strings.SplitSeq(v, ",") {
			if coding = strings.TrimSpace(coding); coding != "" && !strings.EqualFold(coding, "identity") {
				c.Response().Header().Set(echo.HeaderAcceptEncoding, "identity")
				return newError(http.StatusUnsupportedMediaType, CodeUnsupportedEncoding,
					"a compressed body (Content-Encoding other than identity) is not supported: send it uncompressed")
			}
		}
	}
	return nil
}

// truncate cuts s for a message (strictjson.Truncate).
func truncate(s string, n int) string { return strictjson.Truncate(s, n) }

// writeJSON marshals v before writing anything, so an encoding failure is
// still answered as a clean 500 instead of a truncated 200.
func (s *Server) writeJSON(c echo.Context, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("api: encode response: %w", err)
	}
	b = append(b, '\n')
	if c.Request().Method == http.MethodHead {
		c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		c.Response().WriteHeader(status)
		return nil
	}
	return c.Blob(status, echo.MIMEApplicationJSON, b)
}
