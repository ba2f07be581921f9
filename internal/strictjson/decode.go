// Package strictjson decodes JSON the one way ragd reads it from a client,
// whether the text is an API request body or a line `ragd ingest` reads:
// one JSON object, valid UTF-8, names matched exactly and never twice in
// one object, no unknown member, nothing after the object. encoding/json
// accepts each of these silently (turning invalid UTF-8 into U+FFFD,
// matching names in any case, keeping the last of two values), and an id
// would then be stored under another name than the client sent.
//
// Errors are *Error values: a stable code, the JSON path of the offending
// member and the byte, and a message for people that quotes no value.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
)

// Error codes. A wrong type or a value out of range is "invalid_" followed
// by the first segment of the member's path ("invalid_limit",
// "invalid_documents").
const (
	CodeMalformed      = "malformed_json"
	CodeUnknownField   = "unknown_field"
	CodeDuplicateField = "duplicate_field"
	CodeInvalidBody    = "invalid_body"
)

// Error is why a JSON text was refused.
type Error struct {
	// Code is one of the Code* constants or "invalid_" + RootField(Field).
	Code string
	// Field is the JSON path of the offending member ("documents[3].id",
	// "filter.lang"), "" when the error is not about one member.
	Field string
	// Offset is the byte of the text the error was found at, when known.
	Offset *int64
	// Message says what is wrong, for people; it quotes no value.
	Message string
	// Reason is what is wrong with the member at Field (or, when Field is
	// empty, with the whole value), for a message naming the place
	// otherwise: "got number, want a string". It is set for errors about
	// the decoded value (wrong types, unknown members, not an object), not
	// for errors of the text itself (syntax, encoding, a name twice).
	Reason string
}

// memberError is an error about the member at field: "field: reason" and,
// when off is known, the byte.
func memberError(code, field string, off *int64, reason string) *Error {
	e := &Error{Code: code, Field: field, Offset: off, Reason: reason, Message: field + ": " + reason}
	if off != nil {
		e.Message += fmt.Sprintf(", at byte %d", *off)
	}
	return e
}

func (e *Error) Error() string { return e.Message }

func newError(code string, off *int64, format string, args ...any) *Error {
	return &Error{Code: code, Offset: off, Message: fmt.Sprintf(format, args...)}
}

func at(off int64) *int64 { return &off }

// Decode decodes one JSON object from data into dst (a pointer), strictly:
// valid UTF-8, no escaped lone surrogate, no unknown member, no member name in another case, no name
// twice in one object (at any depth, map keys included), nothing after the
// object. subject names data in messages ("request body", "line").
func Decode(data []byte, dst any, subject string) *Error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return newError(CodeMalformed, nil, "the %s is empty; a JSON object is required", subject)
	}
	if string(trimmed) == "null" {
		// encoding/json leaves dst untouched for null: it would pass as {}.
		e := newError(CodeInvalidBody, at(int64(bytes.Index(data, trimmed))), "the %s must be a JSON object, got null", subject)
		e.Reason = "must be a JSON object, got null"
		return e
	}
	if e := textError(data, subject); e != nil {
		return e
	}
	t := reflect.TypeOf(dst)
	if e := Check(data, t); e != nil {
		return e
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err, data, t, subject)
	}
	// Anything but whitespace after the object is an error.
	if off := dec.InputOffset(); len(bytes.TrimSpace(data[off:])) > 0 {
		return newError(CodeMalformed, &off, "unexpected data after the JSON object at byte %d", off)
	}
	return nil
}

// TryDecode decodes data into dst as Decode does and reports whether it
// did, without working out what is wrong when it did not (Decode's error
// walks the text again to name the member): for a caller that will judge
// the parts of a failing text on their own.
//
// After the same checks of the text, it decodes with go-json-experiment's
// json (v2), which reads a 500-document batch of 384-dimensional vectors
// in about half encoding/json's CPU (docs/api.md): a caller's errors come
// from Decode, so only whether and what TryDecode decodes must agree with
// it. v2 is the stricter of the two where they differ (a time such as
// "03:04:05,5Z" or an offset of +24:00: v2 refuses, and the caller's
// Decode then judges the text); TestTryDecodeAgreesWithDecode holds the
// cases.
func TryDecode(data []byte, dst any) bool {
	if t := bytes.TrimSpace(data); len(t) == 0 || string(t) == "null" || textError(data, "") != nil || Check(data, reflect.TypeOf(dst)) != nil {
		return false
	}
	return jsonv2.Unmarshal(data, dst, jsonv2.RejectUnknownMembers(true)) == nil
}

// Unambiguous checks what makes a JSON text read as something else than
// its writer meant, without a Go type: invalid UTF-8, an escaped lone
// surrogate, a name twice in one object. It is for texts read leniently
// otherwise (a BEIR corpus line, whose unknown keys are ignored); Decode
// checks all of it.
func Unambiguous(data []byte, subject string) *Error {
	if e := textError(data, subject); e != nil {
		return e
	}
	return Check(data, nil)
}

// CheckText refuses data that is not valid UTF-8 or holds an escaped lone
// surrogate (malformed_json, with the byte), as Decode does first: for a
// caller that reads parts of a text on its own before decoding the rest.
func CheckText(data []byte, subject string) *Error { return textError(data, subject) }

// textError refuses text that is not valid UTF-8 or holds an escaped lone
// surrogate, which encoding/json would both read as U+FFFD.
func textError(data []byte, subject string) *Error {
	if !utf8.Valid(data) {
		off := int64(invalidUTF8At(data))
		return newError(CodeMalformed, &off, "the %s is not valid UTF-8 (byte %d)", subject, off)
	}
	if i := loneSurrogateAt(data); i >= 0 {
		off := int64(i)
		return newError(CodeMalformed, &off, "the %s holds an escaped lone surrogate at byte %d (\\uD800-\\uDFFF must come in pairs): it is not a character", subject, off)
	}
	return nil
}

// decodeError turns an encoding/json error from decoding data into a value
// of type t into an *Error that names the offending member by its full
// JSON path, or the byte offset, without echoing values.
func decodeError(err error, data []byte, t reflect.Type, subject string) *Error {
	size := int64(len(data))
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off := se.Offset
		return newError(CodeMalformed, &off, "malformed JSON at byte %d: %s", off, se.Error())
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return newError(CodeMalformed, &size, "malformed JSON: the %s ends at byte %d before the JSON value does", subject, size)
	case errors.As(err, &te):
		off := te.Offset
		if te.Field == "" {
			e := newError(CodeInvalidBody, &off, "the %s must be a JSON object, got %s", subject, jsonKind(te.Value))
			e.Reason = "must be a JSON object, got " + jsonKind(te.Value)
			return e
		}
		field := pathAt(data, t, off)
		if field == "" {
			field = te.Field
		}
		root := RootField(field)
		switch {
		case root == "filter":
			return memberError("invalid_filter", field, &off, "filter values must be arrays of strings, got "+jsonKind(te.Value))
		case strings.HasPrefix(te.Value, "number") && isNumberType(te.Type):
			return memberError("invalid_"+root, field, &off, "a number out of range or not allowed for "+describeType(te.Type))
		default:
			return memberError("invalid_"+root, field, &off, "got "+jsonKind(te.Value)+", want "+describeType(te.Type))
		}
	}
	var pe *time.ParseError
	if errors.As(err, &pe) || strings.Contains(err.Error(), "Time.UnmarshalJSON") {
		field := badTimePath(data, t)
		if field == "" {
			field = "updated_at" // the only timestamp a client sends
		}
		return memberError("invalid_"+RootField(field), field, nil, "must be an RFC 3339 timestamp string such as 2026-01-02T15:04:05Z")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		field := unknownKeyPath(data, t, name)
		if field == "" {
			field = name
		}
		e := newError(CodeUnknownField, nil, "unknown field %q", Truncate(field, 64))
		e.Field, e.Reason = Truncate(field, 256), "unknown field"
		return e
	}
	return newError(CodeMalformed, nil, "malformed JSON")
}

// RootField returns the first segment of a JSON path: "sources" for
// "sources.keyword.weight", "documents" for "documents[3].id".
func RootField(path string) string {
	if i := strings.IndexAny(path, ".["); i >= 0 {
		path = path[:i]
	}
	return path
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

// Truncate cuts s to at most n bytes on a rune boundary, marking the cut
// with "…", so a name quoted in a message stays short and valid UTF-8.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
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
