package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
)

// bodyLimit is the body limit of the route at path: the query's own,
// smaller one for POST /v1/query (0 in the config: the general one).
func (s *Server) bodyLimit(path string) int64 {
	if path == "/v1/query" && s.cfg.Server.QueryBodyLimitBytes > 0 {
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

// decodeBody decodes one JSON object from body into dst, strictly: no
// unknown field, no field name in another case, no name twice in one
// object (checkStrict), nothing after the object.
func decodeBody(body []byte, dst any) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return newError(http.StatusBadRequest, CodeMalformedJSON, "request body is empty; a JSON object is required")
	}
	if string(trimmed) == "null" {
		// encoding/json leaves dst untouched for null: it would pass as {}.
		off := int64(bytes.Index(body, trimmed))
		e := newError(http.StatusBadRequest, CodeInvalidBody, "the request body must be a JSON object, got null")
		e.Detail.Offset = &off
		return e
	}
	// encoding/json would turn invalid UTF-8 into U+FFFD silently, and an
	// id would then be stored under another name.
	if !utf8.Valid(body) {
		off := int64(invalidUTF8At(body))
		e := newError(http.StatusBadRequest, CodeMalformedJSON, "the body is not valid UTF-8 (byte %d)", off)
		e.Detail.Offset = &off
		return e
	}
	if e := checkStrict(body, reflect.TypeOf(dst)); e != nil {
		return e
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err, body, reflect.TypeOf(dst))
	}
	// Anything but whitespace after the object is an error.
	if off := dec.InputOffset(); len(bytes.TrimSpace(body[off:])) > 0 {
		e := newError(http.StatusBadRequest, CodeMalformedJSON, "unexpected data after the JSON object at byte %d", off)
		e.Detail.Offset = &off
		return e
	}
	return nil
}

// jsonError turns an encoding/json error from decoding body into a value
// of type t into a 400 that names the offending field by its full JSON
// path, or the byte offset, without echoing values.
func jsonError(err error, body []byte, t reflect.Type) *apiError {
	size := int64(len(body))
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off := se.Offset
		e := newError(http.StatusBadRequest, CodeMalformedJSON, "malformed JSON at byte %d: %s", off, se.Error())
		e.Detail.Offset = &off
		return e
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		e := newError(http.StatusBadRequest, CodeMalformedJSON, "malformed JSON: the body ends at byte %d before the JSON value does", size)
		e.Detail.Offset = &size
		return e
	case errors.As(err, &te):
		off := te.Offset
		if te.Field == "" {
			e := newError(http.StatusBadRequest, CodeInvalidBody, "the request body must be a JSON object, got %s", jsonKind(te.Value))
			e.Detail.Offset = &off
			return e
		}
		field := pathAt(body, t, off)
		if field == "" {
			field = te.Field
		}
		root := rootField(field)
		var e *apiError
		switch {
		case root == "filter":
			e = fieldError("invalid_filter", field,
				"%s: filter values must be arrays of strings, got %s at byte %d", field, jsonKind(te.Value), off)
		case strings.HasPrefix(te.Value, "number") && isNumberType(te.Type):
			e = fieldError("invalid_"+root, field,
				"%s: a number out of range or not allowed for %s, at byte %d", field, describeType(te.Type), off)
		default:
			e = fieldError("invalid_"+root, field,
				"%s: got %s, want %s, at byte %d", field, jsonKind(te.Value), describeType(te.Type), off)
		}
		e.Detail.Offset = &off
		return e
	}
	var pe *time.ParseError
	if errors.As(err, &pe) || strings.Contains(err.Error(), "Time.UnmarshalJSON") {
		field := badTimePath(body, t)
		if field == "" {
			field = "documents.updated_at" // the only timestamp a request body carries
		}
		return fieldError("invalid_"+rootField(field), field,
			"%s: must be an RFC 3339 timestamp string such as 2026-01-02T15:04:05Z", field)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		field := unknownKeyPath(body, t, name)
		if field == "" {
			field = name
		}
		e := newError(http.StatusBadRequest, CodeUnknownField, "unknown field %q", truncate(field, 64))
		e.Detail.Field = truncate(field, 256)
		return e
	}
	return newError(http.StatusBadRequest, CodeMalformedJSON, "malformed JSON")
}

// jsonKind reduces UnmarshalTypeError.Value ("number 1e999", "string") to
// the JSON kind, so values are never echoed.
func jsonKind(v string) string {
	if k, _, ok := strings.Cut(v, " "); ok {
		return k
	}
	return v
}

func isNumberType(t reflect.Type) bool {
	if t == nil {
		return false
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// describeType names the JSON shape a Go type expects.
func describeType(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32:
		return "a finite 32-bit number"
	case reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an ") + "s"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return describeType(t.Elem())
	}
	return "another type"
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

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary so the message stays valid UTF-8.
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

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

// invalidUTF8At is the offset of the first byte of b that is not valid
// UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}
