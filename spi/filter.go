package spi

import (
	"fmt"
	"slices"
)

// Filter restricts retrieval to documents whose metadata matches an
// expression of the filter language (docs/api.md, "Filters"). The zero
// Filter matches every document. Build one with ParseFilter (JSON), the
// constructors (Eq, In, Gt, …, And, Or, Not, Exists) or StringFilter (the
// map form of earlier releases); Match is the reference semantics every
// store is tested against.
type Filter struct {
	root *Expr
}

// ExprKind is the kind of one node of a filter. The JSON operators reduce
// to these six: $eq is an In of one value, $ne and $nin are a Not of an
// In, $exists false a Not of an Exists, and a condition of several
// operators an And.
type ExprKind uint8

// The node kinds.
const (
	ExprAnd    ExprKind = iota + 1 // every Arg holds; none: true
	ExprOr                         // some Arg holds (at least one Arg)
	ExprNot                        // Args[0] does not hold
	ExprIn                         // Key has a scalar (or list item) equal to one of Values
	ExprCmp                        // Key has a number or time (or list item) with Op Values[0]
	ExprExists                     // Key is present
)

// CmpOp is a range operator.
type CmpOp uint8

// The range operators.
const (
	OpGt CmpOp = iota + 1
	OpGte
	OpLt
	OpLte
)

// Name returns the operator's JSON name.
func (o CmpOp) Name() string {
	switch o {
	case OpGt:
		return "$gt"
	case OpGte:
		return "$gte"
	case OpLt:
		return "$lt"
	case OpLte:
		return "$lte"
	}
	return "$invalid"
}

// Holds reports whether the comparison result c (of Compare(item,
// operand)) satisfies the operator.
func (o CmpOp) Holds(c int) bool {
	switch o {
	case OpGt:
		return c > 0
	case OpGte:
		return c >= 0
	case OpLt:
		return c < 0
	case OpLte:
		return c <= 0
	}
	return false
}

// Expr is one node of a filter. Stores compile it; they never modify it.
type Expr struct {
	Kind   ExprKind
	Key    string  // ExprIn, ExprCmp, ExprExists
	Op     CmpOp   // ExprCmp
	Values []Value // ExprIn: at least one scalar; ExprCmp: one number or time
	Args   []*Expr // ExprAnd, ExprOr; ExprNot: exactly one
}

// Root returns the filter's expression, nil for the empty filter.
func (f Filter) Root() *Expr { return f.root }

// IsEmpty reports the filter that matches every document.
func (f Filter) IsEmpty() bool { return f.root == nil }

// Match reports whether metadata satisfies the filter: the reference
// semantics (docs/api.md) that every store must agree with.
func (f Filter) Match(md Metadata) bool {
	return f.root == nil || f.root.Match(md)
}

// Match evaluates the expression on metadata.
func (e *Expr) Match(md Metadata) bool {
	switch e.Kind {
	case ExprAnd:
		for _, a := range e.Args {
			if !a.Match(md) {
				return false
			}
		}
		return true
	case ExprOr:
		for _, a := range e.Args {
			if a.Match(md) {
				return true
			}
		}
		return false
	case ExprNot:
		return !e.Args[0].Match(md)
	case ExprExists:
		_, ok := md[e.Key]
		return ok
	case ExprIn:
		v, ok := md[e.Key]
		if !ok {
			return false
		}
		for _, it := range v.Scalars() {
			for _, w := range e.Values {
				if it.Equal(w) {
					return true
				}
			}
		}
		return false
	case ExprCmp:
		v, ok := md[e.Key]
		if !ok {
			return false
		}
		for _, it := range v.Scalars() {
			if c, ok := Compare(it, e.Values[0]); ok && e.Op.Holds(c) {
				return true
			}
		}
		return false
	}
	return false
}

// Keys returns the metadata keys the filter names, sorted, each once.
func (f Filter) Keys() []string {
	var keys []string
	var walk func(*Expr)
	walk = func(e *Expr) {
		if e.Key != "" {
			keys = append(keys, e.Key)
		}
		for _, a := range e.Args {
			walk(a)
		}
	}
	if f.root != nil {
		walk(f.root)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// Bounds of a filter (docs/api.md): checked while a JSON filter is read,
// before anything is built from it, and by Validate for filters built in
// Go. Every filter of earlier releases (16 keys of 64 strings) is within
// them.
const (
	MaxFilterDepth      = 8       // nesting of $and, $or and $not
	MaxFilterConditions = 64      // operators, bare values and lists, items of $and/$or
	MaxFilterValues     = 1024    // values in all
	MaxFilterKeyBytes   = 1 << 10 // a key
	MaxFilterValueBytes = 16 << 10

	// maxExprDepth bounds the expression's nesting: each JSON level adds
	// at most an implicit $and and its operator, and a condition at the
	// bottom an implicit $and, a $not and a $ne's $not.
	maxExprDepth = 2*MaxFilterDepth + 3
)

// FilterError is a filter that breaks the language or its bounds. Path
// names the place below "filter" ("$or[1].page.$gte"; empty for the
// filter itself); Offset is the byte offset in the JSON read, or -1. It
// wraps ErrInvalidQuery and quotes no value.
type FilterError struct {
	Path   string
	Offset int64
	Msg    string
}

func (e *FilterError) Error() string {
	p := "filter"
	if e.Path != "" {
		p += "." + e.Path
	}
	return fmt.Sprintf("%s: %s", p, e.Msg)
}

// Unwrap makes the error match ErrInvalidQuery.
func (e *FilterError) Unwrap() error { return ErrInvalidQuery }

// Validate checks a filter built in Go for its structure and bounds. It
// counts on the expression, which nests deeper than its JSON (an implicit
// $and of several members, the $not of a $ne), so its depth limit is
// maxExprDepth, and it counts conditions (the leaves and the empty $and)
// and values as the JSON does: every filter ParseFilter returns passes.
// The error is a *FilterError.
func (f Filter) Validate() error {
	if f.root == nil {
		return nil
	}
	var conds, values int
	var check func(e *Expr, depth int) error
	fail := func(format string, a ...any) error {
		return &FilterError{Offset: -1, Msg: fmt.Sprintf(format, a...)}
	}
	check = func(e *Expr, depth int) error {
		if e == nil {
			return fail("a nil expression")
		}
		if e.Kind != ExprOr && e.Kind != ExprNot && (e.Kind != ExprAnd || len(e.Args) == 0) {
			if conds++; conds > MaxFilterConditions {
				return fail("more than %d conditions", MaxFilterConditions)
			}
		}
		switch e.Kind {
		case ExprAnd, ExprOr, ExprNot:
			if depth++; depth > maxExprDepth {
				return fail("nests $and, $or and $not deeper than %d levels", MaxFilterDepth)
			}
			if e.Kind == ExprOr && len(e.Args) == 0 {
				return fail("$or needs at least one filter")
			}
			if e.Kind == ExprNot && len(e.Args) != 1 {
				return fail("$not takes one filter")
			}
			for _, a := range e.Args {
				if err := check(a, depth); err != nil {
					return err
				}
			}
			return nil
		case ExprIn, ExprCmp, ExprExists:
			if err := checkKey(e.Key); err != nil {
				return fail("%s", err)
			}
		default:
			return fail("an expression of unknown kind")
		}
		if values += len(e.Values); values > MaxFilterValues {
			return fail("more than %d values", MaxFilterValues)
		}
		switch {
		case e.Kind == ExprIn && len(e.Values) == 0:
			return fail("$in needs at least one value")
		case e.Kind == ExprCmp && (len(e.Values) != 1 || e.Op.Name() == "$invalid"):
			return fail("a range takes one operand")
		case e.Kind == ExprCmp && !e.Values[0].IsNumber() && e.Values[0].Kind() != KindTime:
			return fail("%s takes a number or a time", e.Op.Name())
		}
		for _, v := range e.Values {
			if v.Kind() == 0 || v.Kind() == KindList {
				return fail("a condition's value must be a string, number, boolean or time")
			}
			if len(v.s) > MaxFilterValueBytes {
				return fail("a string of %d bytes, at most %d allowed", len(v.s), MaxFilterValueBytes)
			}
		}
		return nil
	}
	return check(f.root, 0)
}

func checkKey(k string) error {
	switch {
	case k == "":
		return fmt.Errorf("a key must not be empty")
	case k[0] == '$':
		return fmt.Errorf("a key must not start with $ (operators do)")
	case len(k) > MaxFilterKeyBytes:
		return fmt.Errorf("a key of %d bytes, at most %d allowed", len(k), MaxFilterKeyBytes)
	}
	return nil
}

// Constructors, for programs and tests. They build the expression; the
// store (and ParseFilter) validate it.

// Eq holds when key has a value equal to v.
func Eq(key string, v Value) Filter { return In(key, v) }

// In holds when key has a value equal to one of vs.
func In(key string, vs ...Value) Filter {
	return Filter{&Expr{Kind: ExprIn, Key: key, Values: vs}}
}

// Ne is Not(Eq(key, v)): it also holds when key is absent.
func Ne(key string, v Value) Filter { return Not(Eq(key, v)) }

// Nin is Not(In(key, vs...)).
func Nin(key string, vs ...Value) Filter { return Not(In(key, vs...)) }

// Cmp holds when key has a number or time v' with v' op v.
func Cmp(key string, op CmpOp, v Value) Filter {
	return Filter{&Expr{Kind: ExprCmp, Key: key, Op: op, Values: []Value{v}}}
}

// Gt, Gte, Lt and Lte are Cmp with their operator.
func Gt(key string, v Value) Filter  { return Cmp(key, OpGt, v) }
func Gte(key string, v Value) Filter { return Cmp(key, OpGte, v) }
func Lt(key string, v Value) Filter  { return Cmp(key, OpLt, v) }
func Lte(key string, v Value) Filter { return Cmp(key, OpLte, v) }

// Exists holds when key is present.
func Exists(key string) Filter { return Filter{&Expr{Kind: ExprExists, Key: key}} }

// Not holds when f does not.
func Not(f Filter) Filter {
	if f.root == nil {
		f.root = &Expr{Kind: ExprAnd}
	}
	return Filter{&Expr{Kind: ExprNot, Args: []*Expr{f.root}}}
}

// And holds when every filter does (an empty filter among them is true).
func And(fs ...Filter) Filter {
	var args []*Expr
	for _, f := range fs {
		if f.root != nil {
			args = append(args, f.root)
		}
	}
	switch len(args) {
	case 0:
		return Filter{}
	case 1:
		return Filter{args[0]}
	}
	return Filter{&Expr{Kind: ExprAnd, Args: args}}
}

// Or holds when some filter does (an empty filter among them makes it
// true).
func Or(fs ...Filter) Filter {
	args := make([]*Expr, 0, len(fs))
	for _, f := range fs {
		if f.root == nil {
			return Filter{}
		}
		args = append(args, f.root)
	}
	if len(args) == 1 {
		return Filter{args[0]}
	}
	return Filter{&Expr{Kind: ExprOr, Args: args}}
}

// StringFilter builds the filter of earlier releases: for every key, the
// document carries one of the listed strings (AND across keys, OR within
// a key), keys in sorted order. A key with no strings makes a filter that
// Validate refuses.
func StringFilter(m map[string][]string) Filter {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	fs := make([]Filter, len(keys))
	for i, k := range keys {
		vs := make([]Value, len(m[k]))
		for j, s := range m[k] {
			vs[j] = String(s)
		}
		fs[i] = In(k, vs...)
	}
	return And(fs...)
}
