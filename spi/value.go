package spi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is the type of a metadata Value.
type Kind uint8

// The kinds of metadata values (docs/api.md, "Metadata values").
const (
	KindString Kind = iota + 1
	KindInt
	KindFloat
	KindBool
	KindTime
	KindList

	// kindInvalid is a value the JSON decoder read but could not accept
	// (null, an object, a nested list, an integer beyond 64 bits, a bad
	// time): s holds why. It lets a batch decode whole and fail only the
	// document that holds it (Metadata.Validate).
	kindInvalid Kind = 255
)

// String names the kind for messages.
func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindInt:
		return "integer"
	case KindFloat:
		return "float"
	case KindBool:
		return "boolean"
	case KindTime:
		return "time"
	case KindList:
		return "list"
	}
	return "invalid"
}

// Value is one typed metadata value: a string, a 64-bit integer, a finite
// 64-bit float, a boolean, a time (an instant in UTC, microsecond
// precision, years 1 to 9999) or a list of those (no nested lists). The
// zero Value is invalid; build values with the constructors. Values are
// immutable once built.
//
// Its JSON form (docs/api.md) is the wire format: a string, a number (an
// integer has neither fraction nor exponent, a float always has one), a
// boolean, {"$time": "RFC 3339"} or an array.
type Value struct {
	kind Kind
	s    string
	i    int64 // KindInt; KindBool (0/1); KindTime (Unix microseconds)
	f    float64
	list []Value
}

// Metadata is a document's metadata: keys to typed values.
type Metadata map[string]Value

// String returns a string value.
func String(s string) Value { return Value{kind: KindString, s: s} }

// Int returns an integer value.
func Int(i int64) Value { return Value{kind: KindInt, i: i} }

// Float returns a float value. NaN and infinities are not values: Float
// panics on them, since a caller that passes one has a bug; input from
// outside goes through the JSON decoder, which refuses them.
func Float(f float64) Value {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		panic("spi: Float of a non-finite number")
	}
	return Value{kind: KindFloat, f: f}
}

// Bool returns a boolean value.
func Bool(b bool) Value {
	v := Value{kind: KindBool}
	if b {
		v.i = 1
	}
	return v
}

// Time returns a time value: t as an instant, truncated to microseconds.
// A time outside the years 1 to 9999 in UTC is refused.
func Time(t time.Time) (Value, error) {
	t = t.UTC()
	if y := t.Year(); y < 1 || y > 9999 {
		return Value{}, fmt.Errorf("%w: a time must lie between the years 0001 and 9999 in UTC", ErrInvalidQuery)
	}
	return Value{kind: KindTime, i: t.UnixMicro()}, nil
}

// MustTime is Time for constants in programs and tests; it panics on a
// time outside the years 1 to 9999.
func MustTime(t time.Time) Value {
	v, err := Time(t)
	if err != nil {
		panic(err)
	}
	return v
}

// List returns a list value of scalar items (a nested list panics: a
// caller bug; decoded input refuses it).
func List(items ...Value) Value {
	for _, it := range items {
		if it.kind == KindList || it.kind == 0 {
			panic("spi: List of a list or of an invalid value")
		}
	}
	return Value{kind: KindList, list: append([]Value{}, items...)}
}

// Kind returns the value's kind (0 for the zero Value).
func (v Value) Kind() Kind { return v.kind }

// Str returns a string value's string.
func (v Value) Str() string { return v.s }

// IntValue returns an integer value's integer.
func (v Value) IntValue() int64 { return v.i }

// FloatValue returns a float value's float.
func (v Value) FloatValue() float64 { return v.f }

// BoolValue returns a boolean value's boolean.
func (v Value) BoolValue() bool { return v.i != 0 }

// TimeValue returns a time value's instant, in UTC.
func (v Value) TimeValue() time.Time { return time.UnixMicro(v.i).UTC() }

// Items returns a list value's items (shared: do not modify).
func (v Value) Items() []Value { return v.list }

// Scalars returns the scalars a condition is tried against: a list's
// items, or the value itself.
func (v Value) Scalars() []Value {
	if v.kind == KindList {
		return v.list
	}
	return []Value{v}
}

// IsNumber reports an integer or a float.
func (v Value) IsNumber() bool { return v.kind == KindInt || v.kind == KindFloat }

// Equal reports whether two scalars are equal: numbers by value (3 equals
// 3.0, exactly, also beyond 2^53), times as instants, strings byte for
// byte, booleans; never across kinds otherwise. Lists are equal when
// their items are, in order.
func (v Value) Equal(w Value) bool {
	if v.IsNumber() && w.IsNumber() {
		c, _ := Compare(v, w)
		return c == 0
	}
	if v.kind != w.kind {
		return false
	}
	switch v.kind {
	case KindString:
		return v.s == w.s
	case KindBool, KindTime:
		return v.i == w.i
	case KindList:
		if len(v.list) != len(w.list) {
			return false
		}
		for i := range v.list {
			if !v.list[i].Equal(w.list[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// Compare orders two numbers by value or two times by instant; ok is false
// for any other pair (strings, booleans and lists have no order here).
func Compare(a, b Value) (c int, ok bool) {
	switch {
	case a.kind == KindTime && b.kind == KindTime:
		return cmpInt(a.i, b.i), true
	case a.kind == KindInt && b.kind == KindInt:
		return cmpInt(a.i, b.i), true
	case a.kind == KindFloat && b.kind == KindFloat:
		switch {
		case a.f < b.f:
			return -1, true
		case a.f > b.f:
			return 1, true
		}
		return 0, true
	case a.kind == KindInt && b.kind == KindFloat:
		return cmpIntFloat(a.i, b.f), true
	case a.kind == KindFloat && b.kind == KindInt:
		return -cmpIntFloat(b.i, a.f), true
	}
	return 0, false
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpIntFloat compares an integer with a finite float exactly: no
// rounding of i to a float.
func cmpIntFloat(i int64, f float64) int {
	const two63 = 9223372036854775808.0
	if f >= two63 {
		return -1
	}
	if f < -two63 {
		return 1
	}
	t := math.Trunc(f)
	fi := int64(t) // exact: t is integral and within int64
	if c := cmpInt(i, fi); c != 0 {
		return c
	}
	switch frac := f - t; {
	case frac > 0:
		return -1
	case frac < 0:
		return 1
	}
	return 0
}

// EqualityKey returns a string that two scalars share exactly when they are
// Equal (an integral float shares its integer's key), with the kind
// encoded so that no two kinds collide. Stores index equality on it.
func (v Value) EqualityKey() string {
	switch v.kind {
	case KindString:
		return "s" + v.s
	case KindInt:
		return "n" + strconv.FormatInt(v.i, 10)
	case KindFloat:
		if t := math.Trunc(v.f); t == v.f && t >= -9223372036854775808.0 && t < 9223372036854775808.0 {
			return "n" + strconv.FormatInt(int64(t), 10)
		}
		return "n" + strconv.FormatFloat(v.f, 'g', -1, 64)
	case KindBool:
		return "b" + strconv.FormatInt(v.i, 10)
	case KindTime:
		return "t" + strconv.FormatInt(v.i, 10)
	}
	return ""
}

// TimeLayout writes a time value: RFC 3339 in UTC with six fraction
// digits, a fixed width, so that the strings of two times order as the
// instants do (stores that compare times as strings rely on it).
const TimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// String returns the value's JSON, for messages and tests.
func (v Value) String() string {
	b, err := v.appendJSON(nil)
	if err != nil {
		return "<invalid>"
	}
	return string(b)
}

// MarshalJSON writes the wire form.
func (v Value) MarshalJSON() ([]byte, error) {
	return v.appendJSON(nil)
}

func (v Value) appendJSON(b []byte) ([]byte, error) {
	switch v.kind {
	case KindString:
		s, err := json.Marshal(v.s)
		return append(b, s...), err
	case KindInt:
		return strconv.AppendInt(b, v.i, 10), nil
	case KindFloat:
		// A fraction or a negative exponent always: a store that keeps
		// numbers as decimals (PostgreSQL's jsonb writes 1e+21 as
		// 1000000000000000000000) then still writes it back as a float.
		s := strconv.FormatFloat(v.f, 'g', -1, 64)
		if strings.Contains(s, "e+") {
			s = strconv.FormatFloat(v.f, 'f', -1, 64)
		}
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		return append(b, s...), nil
	case KindBool:
		return strconv.AppendBool(b, v.i != 0), nil
	case KindTime:
		b = append(b, `{"$time":"`...)
		b = v.TimeValue().AppendFormat(b, TimeLayout)
		return append(b, `"}`...), nil
	case KindList:
		b = append(b, '[')
		for i, it := range v.list {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = it.appendJSON(b); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	return nil, errors.New("spi: marshal of an invalid metadata value")
}

// ErrInvalidMetadata is wrapped by every error about a metadata value that
// cannot be stored (the write path's per-document invalid_metadata).
var ErrInvalidMetadata = errors.New("invalid metadata")

// UnmarshalJSON reads the wire form. Well-formed JSON that is not a value
// (null, an object other than {"$time": …}, a nested list, an integer
// beyond 64 bits, a bad time) does not fail the decoding: it becomes an
// invalid Value that Metadata.Validate reports (wrapping
// ErrInvalidMetadata, quoting no value), so that one bad document fails
// alone, not its whole batch.
func (v *Value) UnmarshalJSON(b []byte) error {
	x, err := parseValue(b, true)
	if err != nil {
		if !json.Valid(b) {
			return err
		}
		x = Value{kind: kindInvalid, s: strings.TrimPrefix(err.Error(), ErrInvalidMetadata.Error()+": ")}
	}
	*v = x
	return nil
}

// Validate reports the first invalid value, in key order. The error wraps
// ErrInvalidMetadata and names the key, never the value.
func (m Metadata) Validate() error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch v := m[k]; v.kind {
		case kindInvalid:
			return fmt.Errorf("%w: metadata key %q: %s", ErrInvalidMetadata, k, v.s)
		case 0:
			return fmt.Errorf("%w: metadata key %q: no value", ErrInvalidMetadata, k)
		}
	}
	return nil
}

func parseValue(b []byte, listOK bool) (Value, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return Value{}, fmt.Errorf("%w: empty value", ErrInvalidMetadata)
	}
	switch c := b[0]; {
	case c == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return Value{}, fmt.Errorf("%w: malformed string", ErrInvalidMetadata)
		}
		return String(s), nil
	case c == 't' || c == 'f':
		var x bool
		if err := json.Unmarshal(b, &x); err != nil {
			return Value{}, fmt.Errorf("%w: malformed boolean", ErrInvalidMetadata)
		}
		return Bool(x), nil
	case c == 'n':
		return Value{}, fmt.Errorf("%w: null is not a value (leave the key out)", ErrInvalidMetadata)
	case c == '-' || (c >= '0' && c <= '9'):
		return parseNumber(string(b))
	case c == '{':
		var o map[string]json.RawMessage
		if err := json.Unmarshal(b, &o); err != nil {
			return Value{}, fmt.Errorf("%w: malformed object", ErrInvalidMetadata)
		}
		raw, ok := o["$time"]
		if !ok || len(o) != 1 {
			return Value{}, fmt.Errorf(`%w: the only object value is {"$time": "RFC 3339"}`, ErrInvalidMetadata)
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return Value{}, fmt.Errorf(`%w: $time must be an RFC 3339 string`, ErrInvalidMetadata)
		}
		return ParseTime(s)
	case c == '[':
		if !listOK {
			return Value{}, fmt.Errorf("%w: a list may not hold a list", ErrInvalidMetadata)
		}
		var raws []json.RawMessage
		if err := json.Unmarshal(b, &raws); err != nil {
			return Value{}, fmt.Errorf("%w: malformed list", ErrInvalidMetadata)
		}
		items := make([]Value, len(raws))
		for i, r := range raws {
			it, err := parseValue(r, false)
			if err != nil {
				return Value{}, err
			}
			items[i] = it
		}
		return Value{kind: KindList, list: items}, nil
	}
	return Value{}, fmt.Errorf("%w: not a JSON value", ErrInvalidMetadata)
}

// parseNumber reads a JSON number: an integer without fraction or
// exponent (64-bit), otherwise a finite float.
func parseNumber(s string) (Value, error) {
	if !json.Valid([]byte(s)) {
		return Value{}, fmt.Errorf("%w: malformed number", ErrInvalidMetadata)
	}
	if !strings.ContainsAny(s, ".eE") {
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Value{}, fmt.Errorf("%w: an integer outside 64 bits (write it as a float, with a fraction or an exponent, or as a string)", ErrInvalidMetadata)
		}
		return Int(i), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return Value{}, fmt.Errorf("%w: a float outside the 64-bit range", ErrInvalidMetadata)
	}
	return Float(f), nil
}

// ParseTime reads an RFC 3339 date-time with an offset into a time value.
func ParseTime(s string) (Value, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return Value{}, fmt.Errorf("%w: a time must be an RFC 3339 date-time with an offset, such as 2024-05-01T12:00:00Z", ErrInvalidMetadata)
	}
	v, err := Time(t)
	if err != nil {
		return Value{}, fmt.Errorf("%w: a time must lie between the years 0001 and 9999 in UTC", ErrInvalidMetadata)
	}
	return v, nil
}

// Strings returns metadata of string values, the form of earlier releases
// (for programs and tests).
func Strings(m map[string]string) Metadata {
	if m == nil {
		return nil
	}
	md := make(Metadata, len(m))
	for k, v := range m {
		md[k] = String(v)
	}
	return md
}

// Clone returns a copy of the map (values are immutable and shared).
func (m Metadata) Clone() Metadata {
	if m == nil {
		return nil
	}
	c := make(Metadata, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// Equal reports whether two metadata maps hold the same keys with Equal
// values of the same kinds (3 and 3.0 differ here: they read back
// differently).
func (m Metadata) Equal(o Metadata) bool {
	if len(m) != len(o) {
		return false
	}
	for k, v := range m {
		w, ok := o[k]
		if !ok || !sameValue(v, w) {
			return false
		}
	}
	return true
}

func sameValue(a, b Value) bool {
	if a.kind != b.kind {
		return false
	}
	if a.kind == KindList {
		if len(a.list) != len(b.list) {
			return false
		}
		for i := range a.list {
			if !sameValue(a.list[i], b.list[i]) {
				return false
			}
		}
		return true
	}
	if a.kind == KindFloat {
		return a.f == b.f
	}
	return a.Equal(b)
}
