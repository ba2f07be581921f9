package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// Check reads body, valid UTF-8 about to be decoded into a value of type t
// by encoding/json, and refuses what encoding/json would accept silently:
//
//   - a member name that matches a struct field only in another case
//     ({"Text": "x"} would fill Text): names are case-sensitive;
//   - a name twice in one object, at any depth and in maps too (encoding/json
//     keeps the last value): 400 duplicate_field;
//   - a member name a struct does not have, at once (unknown_field, as
//     encoding/json's DisallowUnknownFields would say after decoding the
//     rest of the body).
//
// Anything else it leaves to encoding/json, which reports syntax and type
// errors as before: Check returns nil on them. Subtrees whose type
// holds no struct (strings, vectors, metadata maps) are read as whole
// values, which jsontext checks for duplicate names without a token walk.
func Check(body []byte, t reflect.Type) *Error {
	type frame struct {
		typ      reflect.Type
		object   bool
		wantName bool
	}
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	var stack []frame
	next := t // the Go type of the next value
	for {
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.wantName {
			if dec.PeekKind() == '}' {
				if _, err := dec.ReadToken(); err != nil {
					return strictError(err, t)
				}
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return nil
				}
				if up := &stack[len(stack)-1]; up.object {
					up.wantName = true
				}
				continue
			}
			tok, err := dec.ReadToken()
			if err != nil {
				return strictError(err, t)
			}
			name := tok.String()
			var known bool
			next, known = fieldType(top.typ, name)
			if !known {
				path := pointerPath(dec.StackPointer(), t)
				if field := foldedField(top.typ, name); field != "" {
					e := newError(CodeUnknownField, nil,
						"unknown field %q: field names are case-sensitive (did you mean %q?)", Truncate(path, 64), field)
					e.Field = Truncate(path, 256)
					e.Reason = fmt.Sprintf("unknown field: field names are case-sensitive (did you mean %q?)", field)
					return e
				}
				// Refused here, before its value is read: encoding/json
				// would decode the rest of the body first (a 17,000-key
				// object under an unknown name cost 14 MB and 15 ms
				// before the same answer).
				e := newError(CodeUnknownField, nil, "unknown field %q", Truncate(path, 64))
				e.Field, e.Reason = Truncate(path, 256), "unknown field"
				return e
			}
			top.wantName = false
			continue
		}
		if top != nil && !top.object {
			next = elemType(top.typ)
		}
		switch kind := dec.PeekKind(); {
		case kind == ']':
			if _, err := dec.ReadToken(); err != nil {
				return strictError(err, t)
			}
			stack = stack[:len(stack)-1]
		case (kind == '{' || kind == '[') && holdsStruct(next):
			if _, err := dec.ReadToken(); err != nil {
				return strictError(err, t)
			}
			stack = append(stack, frame{typ: next, object: kind == '{', wantName: kind == '{'})
			continue
		default: // a scalar, a subtree without structs, or an error
			if _, err := dec.ReadValue(); err != nil {
				return strictError(err, t)
			}
		}
		if len(stack) == 0 {
			return nil
		}
		if up := &stack[len(stack)-1]; up.object {
			up.wantName = true
		}
	}
}

// strictError answers a duplicate name; any other error is encoding/json's
// to report.
func strictError(err error, t reflect.Type) *Error {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) || !errors.Is(err, jsontext.ErrDuplicateName) {
		return nil
	}
	path := pointerPath(se.JSONPointer, t)
	off := se.ByteOffset
	e := newError(CodeDuplicateField, &off, "%q appears twice in one object (at byte %d)", Truncate(path, 64), off)
	e.Field = Truncate(path, 256)
	return e
}

// pointerPath turns a JSON Pointer into the API's field path
// ("/documents/3/metadata/lang" into "documents[3].metadata.lang"),
// telling array indices from map keys by the Go type t.
func pointerPath(p jsontext.Pointer, t reflect.Type) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if elem := elemType(t); elem != nil && isList(t) {
			fmt.Fprintf(&b, "[%s]", tok)
			t = elem
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
		t, _ = memberType(t, tok)
	}
	return b.String()
}

func isList(t reflect.Type) bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array)
}

// structFields is a struct type's JSON member names (exactly as
// encoding/json names them) and their types.
type structFields map[string]reflect.Type

var fieldCache sync.Map // reflect.Type → structFields

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// fieldsOf returns t's member names, or nil when t (after pointers) is not
// a struct decoded field by field (time.Time and other types with their
// own UnmarshalJSON or UnmarshalText are not).
func fieldsOf(t reflect.Type) structFields {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	if pt := reflect.PointerTo(t); pt.Implements(jsonUnmarshaler) || pt.Implements(textUnmarshaler) {
		return nil
	}
	if f, ok := fieldCache.Load(t); ok {
		return f.(structFields)
	}
	fields, depth := structFields{}, map[string]int{}
	for _, f := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			continue // its fields are promoted, and listed by VisibleFields
		}
		if name == "" {
			name = f.Name
		}
		// The shallower of two fields of one name wins, as in encoding/json.
		if d, ok := depth[name]; !ok || len(f.Index) < d {
			fields[name], depth[name] = f.Type, len(f.Index)
		}
	}
	fieldCache.Store(t, fields)
	return fields
}

// fieldType is the type of member name of an object decoded into t; known
// is false when t is a struct without that exact name.
func fieldType(t reflect.Type, name string) (_ reflect.Type, known bool) {
	if fields := fieldsOf(t); fields != nil {
		ft, ok := fields[name]
		return ft, ok
	}
	return elemType(t), true
}

// foldedField is the member name of struct t that name matches only
// case-insensitively, or "".
func foldedField(t reflect.Type, name string) string {
	for field := range fieldsOf(t) {
		if strings.EqualFold(field, name) {
			return field
		}
	}
	return ""
}

var structCache sync.Map // reflect.Type → bool

// holdsStruct reports whether a value of type t may hold a struct decoded
// field by field, at any depth.
func holdsStruct(t reflect.Type) bool {
	if t == nil {
		return false
	}
	if v, ok := structCache.Load(t); ok {
		return v.(bool)
	}
	var holds func(t reflect.Type, seen map[reflect.Type]bool) bool
	holds = func(t reflect.Type, seen map[reflect.Type]bool) bool {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if seen[t] {
			return false
		}
		seen[t] = true
		switch t.Kind() {
		case reflect.Struct:
			return fieldsOf(t) != nil
		case reflect.Slice, reflect.Array, reflect.Map:
			return holds(t.Elem(), seen)
		}
		return false
	}
	v := holds(t, map[reflect.Type]bool{})
	structCache.Store(t, v)
	return v
}

// HasMember reports whether a JSON object decoded into struct type t may
// hold a member called name (exactly, as Decode matches names). It is
// true for any name when t is not a struct decoded member by member.
func HasMember(t reflect.Type, name string) bool {
	_, known := fieldType(t, name)
	return known
}
