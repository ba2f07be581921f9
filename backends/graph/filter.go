package graph

import (
	"fmt"
	"strings"

	"github.com/ragd/ragd/spi"
)

// Metadata lives in node properties, typed so that Cypher answers every
// operator of the filter language:
//
//   - a string value in "meta.KEY", as before typed metadata (documents
//     written earlier read and filter the same);
//   - any other value in "metaj.KEY" as its JSON (what Hydrate returns),
//     and its scalars (a list's items) in one homogeneous list property per
//     kind, which Neo4j requires of a list property: "metas.KEY" strings,
//     "metai.KEY" integers, "metaf.KEY" floats, "metab.KEY" booleans,
//     "metat.KEY" times as their fixed-width UTC strings (spi.TimeLayout,
//     whose order is the instants' order).
const (
	metaPrefix     = "meta."
	metaJSONPrefix = "metaj."
	metaStrings    = "metas."
	metaInts       = "metai."
	metaFloats     = "metaf."
	metaBools      = "metab."
	metaTimes      = "metat."
)

// metaProps returns the node properties of metadata key k with value v.
func metaProps(k string, v spi.Value) map[string]any {
	if v.Kind() == spi.KindString {
		return map[string]any{metaPrefix + k: v.Str()}
	}
	raw, _ := v.MarshalJSON() // a validated value always marshals
	p := map[string]any{metaJSONPrefix + k: string(raw)}
	var ss, ts []string
	var is []int64
	var fs []float64
	var bs []bool
	for _, it := range v.Scalars() {
		switch it.Kind() {
		case spi.KindString:
			ss = append(ss, it.Str())
		case spi.KindInt:
			is = append(is, it.IntValue())
		case spi.KindFloat:
			fs = append(fs, it.FloatValue())
		case spi.KindBool:
			bs = append(bs, it.BoolValue())
		case spi.KindTime:
			ts = append(ts, it.TimeValue().Format(spi.TimeLayout))
		}
	}
	if ss != nil {
		p[metaStrings+k] = ss
	}
	if is != nil {
		p[metaInts+k] = is
	}
	if fs != nil {
		p[metaFloats+k] = fs
	}
	if bs != nil {
		p[metaBools+k] = bs
	}
	if ts != nil {
		p[metaTimes+k] = ts
	}
	return p
}

// filterMarker stands for the filter predicate in the Cypher texts;
// filterKey is the parameter under which a query's spi.Filter is passed
// to run, which replaces both.
const (
	filterMarker = "/*ragd:filter*/true"
	filterKey    = "\x00filter"
)

// withFilter replaces the marker in cypher with f's predicate on node d
// and adds its parameters (named f0, f1, …; keys are parameters too, so no
// request text reaches the Cypher text).
func withFilter(cypher string, params map[string]any) (string, map[string]any) {
	f, ok := params[filterKey].(spi.Filter)
	if !ok {
		return cypher, params
	}
	delete(params, filterKey)
	pred := "true"
	if e := f.Root(); e != nil {
		c := &cypherFilter{params: params}
		pred = c.expr(e)
	}
	return strings.ReplaceAll(cypher, filterMarker, "("+pred+")"), params
}

type cypherFilter struct {
	params map[string]any
	n      int
}

func (c *cypherFilter) param(v any) string {
	name := fmt.Sprintf("f%d", c.n)
	c.n++
	c.params[name] = v
	return "$" + name
}

// list is the Cypher of one typed list property of key k (empty when
// absent).
func (c *cypherFilter) list(prefix, k string) string {
	return "coalesce(d[" + c.param(prefix+k) + "], [])"
}

// expr is e's predicate; never null (a missing property makes the
// comparisons false, not null), so NOT negates it as spi.Filter.Match
// does.
func (c *cypherFilter) expr(e *spi.Expr) string {
	switch e.Kind {
	case spi.ExprAnd, spi.ExprOr:
		if len(e.Args) == 0 {
			return "true"
		}
		parts := make([]string, len(e.Args))
		for i, a := range e.Args {
			parts[i] = c.expr(a)
		}
		op := " AND "
		if e.Kind == spi.ExprOr {
			op = " OR "
		}
		return "(" + strings.Join(parts, op) + ")"
	case spi.ExprNot:
		return "(NOT " + c.expr(e.Args[0]) + ")"
	case spi.ExprExists:
		return "(d[" + c.param(metaPrefix+e.Key) + "] IS NOT NULL OR d[" + c.param(metaJSONPrefix+e.Key) + "] IS NOT NULL)"
	case spi.ExprIn:
		var ss, ts []string
		var ns []any
		var bs []bool
		for _, v := range e.Values {
			switch v.Kind() {
			case spi.KindString:
				ss = append(ss, v.Str())
			case spi.KindInt:
				ns = append(ns, v.IntValue())
			case spi.KindFloat:
				ns = append(ns, v.FloatValue())
			case spi.KindBool:
				bs = append(bs, v.BoolValue())
			case spi.KindTime:
				ts = append(ts, v.TimeValue().Format(spi.TimeLayout))
			}
		}
		var parts []string
		if ss != nil {
			p := c.param(ss)
			parts = append(parts, "coalesce(d["+c.param(metaPrefix+e.Key)+"] IN "+p+", false)",
				"any(x IN "+c.list(metaStrings, e.Key)+" WHERE x IN "+p+")")
		}
		if ns != nil {
			p := c.param(ns)
			parts = append(parts, "any(x IN "+c.list(metaInts, e.Key)+" + "+c.list(metaFloats, e.Key)+" WHERE x IN "+p+")")
		}
		if bs != nil {
			parts = append(parts, "any(x IN "+c.list(metaBools, e.Key)+" WHERE x IN "+c.param(bs)+")")
		}
		if ts != nil {
			parts = append(parts, "any(x IN "+c.list(metaTimes, e.Key)+" WHERE x IN "+c.param(ts)+")")
		}
		return "(" + strings.Join(parts, " OR ") + ")"
	case spi.ExprCmp:
		op := map[spi.CmpOp]string{spi.OpGt: ">", spi.OpGte: ">=", spi.OpLt: "<", spi.OpLte: "<="}[e.Op]
		v := e.Values[0]
		if v.Kind() == spi.KindTime {
			return "any(x IN " + c.list(metaTimes, e.Key) + " WHERE x " + op + " " + c.param(v.TimeValue().Format(spi.TimeLayout)) + ")"
		}
		var n any = v.IntValue()
		if v.Kind() == spi.KindFloat {
			n = v.FloatValue()
		}
		return "any(x IN " + c.list(metaInts, e.Key) + " + " + c.list(metaFloats, e.Key) + " WHERE x " + op + " " + c.param(n) + ")"
	}
	return "false"
}
