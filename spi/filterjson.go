package spi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// ParseFilter reads a filter from its JSON form (docs/api.md, "Filters").
// The bounds (MaxFilter*) are checked token by token while reading, so an
// oversized filter is refused at its first token past a bound, before
// anything is built from the rest. A filter that breaks the language or a
// bound is a *FilterError; malformed JSON is another error wrapping
// ErrInvalidQuery. JSON null is the empty filter.
func ParseFilter(b []byte) (Filter, error) {
	d := jsontext.NewDecoder(bytes.NewReader(b))
	f, err := ReadFilter(d)
	if err != nil {
		return Filter{}, err
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return Filter{}, fmt.Errorf("%w: filter: unexpected data after the filter", ErrInvalidQuery)
	}
	return f, nil
}

// ReadFilter reads the next JSON value of d as a filter, with the bounds
// and errors of ParseFilter. A caller walking a larger body (the API's
// bound check before decoding) reads the filter with it in place.
func ReadFilter(d *jsontext.Decoder) (Filter, error) {
	if d.PeekKind() == 'n' {
		if _, err := d.ReadToken(); err != nil {
			return Filter{}, syntaxErr(err)
		}
		return Filter{}, nil
	}
	p := filterParser{d: d}
	e, err := p.filter("", 0)
	if err != nil {
		return Filter{}, err
	}
	if e.Kind == ExprAnd && len(e.Args) == 0 {
		return Filter{}, nil
	}
	return Filter{e}, nil
}

type filterParser struct {
	d      *jsontext.Decoder
	conds  int
	values int
}

func syntaxErr(err error) error {
	return fmt.Errorf("%w: filter: malformed JSON: %w", ErrInvalidQuery, err)
}

func (p *filterParser) fail(path string, off int64, format string, a ...any) error {
	return &FilterError{Path: path, Offset: off, Msg: fmt.Sprintf(format, a...)}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func (p *filterParser) cond(path string, off int64) error {
	if p.conds++; p.conds > MaxFilterConditions {
		return p.fail(path, off, "more than %d conditions", MaxFilterConditions)
	}
	return nil
}

func (p *filterParser) value(path string, off int64) error {
	if p.values++; p.values > MaxFilterValues {
		return p.fail(path, off, "more than %d values", MaxFilterValues)
	}
	return nil
}

// filter reads an object of members; depth counts the $and/$or/$not
// levels around it.
func (p *filterParser) filter(path string, depth int) (*Expr, error) {
	off := p.d.InputOffset()
	if k := p.d.PeekKind(); k != '{' {
		if k == 0 {
			_, err := p.d.ReadToken()
			return nil, syntaxErr(err)
		}
		return nil, p.fail(path, off, "a filter must be an object, got %s", kindName(k))
	}
	if _, err := p.d.ReadToken(); err != nil {
		return nil, syntaxErr(err)
	}
	var args []*Expr
	for p.d.PeekKind() == '"' {
		off := p.d.InputOffset()
		tok, err := p.d.ReadToken()
		if err != nil {
			return nil, syntaxErr(err)
		}
		name := tok.String()
		if len(name) > MaxFilterKeyBytes {
			return nil, p.fail(path, off, "a key of %d bytes, at most %d allowed", len(name), MaxFilterKeyBytes)
		}
		mpath := join(path, name)
		var e *Expr
		switch {
		case name == "$and" || name == "$or":
			e, err = p.list(mpath, off, name, depth+1)
		case name == "$not":
			if err = p.level(mpath, off, depth+1); err == nil {
				var sub *Expr
				if sub, err = p.filter(mpath, depth+1); err == nil {
					e = &Expr{Kind: ExprNot, Args: []*Expr{sub}}
				}
			}
		case strings.HasPrefix(name, "$"):
			return nil, p.fail(mpath, off, "unknown operator (a filter's members are $and, $or, $not or metadata keys)")
		case name == "":
			return nil, p.fail(mpath, off, "a key must not be empty")
		default:
			e, err = p.condition(mpath, name, depth)
		}
		if err != nil {
			return nil, err
		}
		args = append(args, e)
	}
	if _, err := p.d.ReadToken(); err != nil { // '}'
		return nil, syntaxErr(err)
	}
	if len(args) == 1 {
		return args[0], nil
	}
	return &Expr{Kind: ExprAnd, Args: args}, nil
}

func (p *filterParser) level(path string, off int64, depth int) error {
	if depth > MaxFilterDepth {
		return p.fail(path, off, "nests $and, $or and $not deeper than %d levels", MaxFilterDepth)
	}
	return p.cond(path, off)
}

// list reads the array of filters of $and or $or.
func (p *filterParser) list(path string, off int64, op string, depth int) (*Expr, error) {
	if err := p.level(path, off, depth); err != nil {
		return nil, err
	}
	if k := p.d.PeekKind(); k != '[' {
		return nil, p.fail(path, p.d.InputOffset(), "%s takes an array of filters, got %s", op, kindName(k))
	}
	if _, err := p.d.ReadToken(); err != nil {
		return nil, syntaxErr(err)
	}
	e := &Expr{Kind: ExprAnd}
	if op == "$or" {
		e.Kind = ExprOr
	}
	for i := 0; p.d.PeekKind() != ']'; i++ {
		ipath := path + "[" + strconv.Itoa(i) + "]"
		if err := p.cond(ipath, p.d.InputOffset()); err != nil {
			return nil, err
		}
		sub, err := p.filter(ipath, depth)
		if err != nil {
			return nil, err
		}
		e.Args = append(e.Args, sub)
	}
	if _, err := p.d.ReadToken(); err != nil {
		return nil, syntaxErr(err)
	}
	if len(e.Args) == 0 {
		return nil, p.fail(path, off, "%s needs at least one filter", op)
	}
	return e, nil
}

// condition reads what a metadata key maps to: a value ($eq), an array of
// values ($in) or an object of operators.
func (p *filterParser) condition(path, key string, depth int) (*Expr, error) {
	off := p.d.InputOffset()
	switch p.d.PeekKind() {
	case '[':
		if err := p.cond(path, off); err != nil {
			return nil, err
		}
		vs, err := p.valueList(path)
		if err != nil {
			return nil, err
		}
		return &Expr{Kind: ExprIn, Key: key, Values: vs}, nil
	case '{':
	default:
		if err := p.cond(path, off); err != nil {
			return nil, err
		}
		v, err := p.scalar(path)
		if err != nil {
			return nil, err
		}
		return &Expr{Kind: ExprIn, Key: key, Values: []Value{v}}, nil
	}
	if _, err := p.d.ReadToken(); err != nil { // '{'
		return nil, syntaxErr(err)
	}
	var args []*Expr
	for p.d.PeekKind() == '"' {
		off := p.d.InputOffset()
		tok, err := p.d.ReadToken()
		if err != nil {
			return nil, syntaxErr(err)
		}
		op := tok.String()
		opath := join(path, op)
		if op == "$time" && len(args) == 0 {
			// {"$time": "…"}: a time value, same as {"$eq": {"$time": "…"}}.
			if err := p.cond(path, off); err != nil {
				return nil, err
			}
			v, err := p.timeBody(opath)
			if err != nil {
				return nil, err
			}
			if p.d.PeekKind() != '}' {
				return nil, p.fail(path, p.d.InputOffset(), `a {"$time": …} value has no other members`)
			}
			args = append(args, &Expr{Kind: ExprIn, Key: key, Values: []Value{v}})
			break
		}
		if len(op) > MaxFilterKeyBytes {
			return nil, p.fail(path, off, "a key of %d bytes, at most %d allowed", len(op), MaxFilterKeyBytes)
		}
		if err := p.cond(opath, off); err != nil {
			return nil, err
		}
		var e *Expr
		switch op {
		case "$eq", "$ne":
			v, err := p.scalar(opath)
			if err != nil {
				return nil, err
			}
			e = &Expr{Kind: ExprIn, Key: key, Values: []Value{v}}
			if op == "$ne" {
				e = &Expr{Kind: ExprNot, Args: []*Expr{e}}
			}
		case "$in", "$nin":
			if k := p.d.PeekKind(); k != '[' {
				return nil, p.fail(opath, p.d.InputOffset(), "%s takes an array of values, got %s", op, kindName(k))
			}
			vs, err := p.valueList(opath)
			if err != nil {
				return nil, err
			}
			e = &Expr{Kind: ExprIn, Key: key, Values: vs}
			if op == "$nin" {
				e = &Expr{Kind: ExprNot, Args: []*Expr{e}}
			}
		case "$gt", "$gte", "$lt", "$lte":
			v, err := p.rangeOperand(opath)
			if err != nil {
				return nil, err
			}
			e = &Expr{Kind: ExprCmp, Key: key, Op: map[string]CmpOp{"$gt": OpGt, "$gte": OpGte, "$lt": OpLt, "$lte": OpLte}[op], Values: []Value{v}}
		case "$exists":
			voff := p.d.InputOffset()
			tok, err := p.d.ReadToken()
			if err != nil {
				return nil, syntaxErr(err)
			}
			if k := tok.Kind(); k != 't' && k != 'f' {
				return nil, p.fail(opath, voff, "$exists takes true or false, got %s", kindName(k))
			}
			e = &Expr{Kind: ExprExists, Key: key}
			if tok.Kind() == 'f' {
				e = &Expr{Kind: ExprNot, Args: []*Expr{e}}
			}
		case "$not":
			if err := p.level(opath, off, depth+1); err != nil {
				return nil, err
			}
			sub, err := p.condition(opath, key, depth+1)
			if err != nil {
				return nil, err
			}
			e = &Expr{Kind: ExprNot, Args: []*Expr{sub}}
		default:
			if strings.HasPrefix(op, "$") {
				return nil, p.fail(opath, off, "unknown operator (a condition's operators are $eq $ne $in $nin $gt $gte $lt $lte $exists $not)")
			}
			return nil, p.fail(opath, off, "a condition object holds operators; an object is not a metadata value (except {\"$time\": …})")
		}
		args = append(args, e)
	}
	if _, err := p.d.ReadToken(); err != nil { // '}'
		return nil, syntaxErr(err)
	}
	switch len(args) {
	case 0:
		return nil, p.fail(path, off, "a condition object needs at least one operator")
	case 1:
		return args[0], nil
	}
	return &Expr{Kind: ExprAnd, Args: args}, nil
}

// values reads a non-empty array of scalar values.
func (p *filterParser) valueList(path string) ([]Value, error) {
	off := p.d.InputOffset()
	if _, err := p.d.ReadToken(); err != nil { // '['
		return nil, syntaxErr(err)
	}
	var vs []Value
	for i := 0; p.d.PeekKind() != ']'; i++ {
		v, err := p.scalar(path + "[" + strconv.Itoa(i) + "]")
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	if _, err := p.d.ReadToken(); err != nil {
		return nil, syntaxErr(err)
	}
	if len(vs) == 0 {
		return nil, p.fail(path, off, "an empty list of values matches nothing; leave the key out or list at least one value")
	}
	return vs, nil
}

// scalar reads one value: string, number, boolean or {"$time": …}.
func (p *filterParser) scalar(path string) (Value, error) {
	off := p.d.InputOffset()
	if err := p.value(path, off); err != nil {
		return Value{}, err
	}
	k := p.d.PeekKind()
	if k == '{' {
		if _, err := p.d.ReadToken(); err != nil {
			return Value{}, syntaxErr(err)
		}
		tok, err := p.d.ReadToken()
		if err != nil {
			return Value{}, syntaxErr(err)
		}
		if tok.Kind() != '"' || tok.String() != "$time" {
			return Value{}, p.fail(path, off, `the only object value is {"$time": "RFC 3339"}`)
		}
		v, err := p.timeBody(path)
		if err != nil {
			return Value{}, err
		}
		if tok, err := p.d.ReadToken(); err != nil || tok.Kind() != '}' {
			return Value{}, p.fail(path, off, `a {"$time": …} value has no other members`)
		}
		return v, nil
	}
	tok, err := p.d.ReadToken()
	if err != nil {
		return Value{}, syntaxErr(err)
	}
	switch k {
	case '"':
		s := tok.String()
		if len(s) > MaxFilterValueBytes {
			return Value{}, p.fail(path, off, "a string of %d bytes, at most %d allowed", len(s), MaxFilterValueBytes)
		}
		return String(s), nil
	case '0':
		v, err := parseNumber(tok.String())
		if err != nil {
			return Value{}, p.fail(path, off, "%s", strings.TrimPrefix(err.Error(), ErrInvalidMetadata.Error()+": "))
		}
		return v, nil
	case 't', 'f':
		return Bool(k == 't'), nil
	}
	return Value{}, p.fail(path, off, "a value must be a string, number, boolean or {\"$time\": …}, got %s", kindName(k))
}

// timeBody reads the string after "$time".
func (p *filterParser) timeBody(path string) (Value, error) {
	off := p.d.InputOffset()
	tok, err := p.d.ReadToken()
	if err != nil {
		return Value{}, syntaxErr(err)
	}
	if tok.Kind() != '"' {
		return Value{}, p.fail(path, off, "$time takes an RFC 3339 string")
	}
	s := tok.String()
	if len(s) > 64 {
		return Value{}, p.fail(path, off, "$time takes an RFC 3339 string")
	}
	v, err := ParseTime(s)
	if err != nil {
		return Value{}, p.fail(path, off, "%s", strings.TrimPrefix(err.Error(), ErrInvalidMetadata.Error()+": "))
	}
	return v, nil
}

// rangeOperand reads a number or a time; a string here is a time.
func (p *filterParser) rangeOperand(path string) (Value, error) {
	off := p.d.InputOffset()
	if p.d.PeekKind() == '"' {
		if err := p.value(path, off); err != nil {
			return Value{}, err
		}
		return p.timeBody(path)
	}
	v, err := p.scalar(path)
	if err != nil {
		return Value{}, err
	}
	if !v.IsNumber() && v.Kind() != KindTime {
		return Value{}, p.fail(path, off, "a range takes a number or a time, got a %s", v.Kind())
	}
	return v, nil
}

func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "nothing"
}

// UnmarshalJSON reads a filter with ParseFilter.
func (f *Filter) UnmarshalJSON(b []byte) error {
	x, err := ParseFilter(b)
	if err != nil {
		return err
	}
	*f = x
	return nil
}

// MarshalJSON writes the filter in a canonical form ParseFilter reads back
// to the same expression: {} for the empty filter, $and/$or/$not as
// members, {"key": {"$in": […]}}, {"key": {"$gt": v}}, {"key":
// {"$exists": true}}.
func (f Filter) MarshalJSON() ([]byte, error) {
	if f.root == nil {
		return []byte("{}"), nil
	}
	return appendExpr(nil, f.root)
}

func appendExpr(b []byte, e *Expr) ([]byte, error) {
	var err error
	switch e.Kind {
	case ExprAnd, ExprOr:
		op := "$and"
		if e.Kind == ExprOr {
			op = "$or"
		}
		if e.Kind == ExprAnd && len(e.Args) == 0 {
			return append(b, "{}"...), nil
		}
		b = append(b, `{"`+op+`":[`...)
		for i, a := range e.Args {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendExpr(b, a); err != nil {
				return nil, err
			}
		}
		return append(b, "]}"...), nil
	case ExprNot:
		b = append(b, `{"$not":`...)
		if b, err = appendExpr(b, e.Args[0]); err != nil {
			return nil, err
		}
		return append(b, '}'), nil
	}
	if b, err = jsontext.AppendQuote(append(b, '{'), e.Key); err != nil {
		return nil, errors.New("spi: filter key is not valid UTF-8")
	}
	switch e.Kind {
	case ExprIn:
		b = append(b, `:{"$in":[`...)
		for i, v := range e.Values {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = v.appendJSON(b); err != nil {
				return nil, err
			}
		}
		return append(b, "]}}"...), nil
	case ExprCmp:
		b = append(b, `:{"`+e.Op.Name()+`":`...)
		if b, err = e.Values[0].appendJSON(b); err != nil {
			return nil, err
		}
		return append(b, "}}"...), nil
	case ExprExists:
		return append(b, `:{"$exists":true}}`...), nil
	}
	return nil, errors.New("spi: marshal of an invalid filter")
}
