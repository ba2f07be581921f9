package vector

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ragd/ragd/spi"
)

// filterSQL translates a filter expression into a condition on the
// metadata column (typed JSONB: numbers, booleans, strings, times as
// {"$time": "…"} in the fixed-width UTC form, lists as arrays), appending
// its parameters to args. It answers every operator with the semantics of
// spi.Filter.Match:
//
//   - $in: "metadata @> ANY($n::jsonb[])" over one-pair objects {k: v}
//     and {k: [v]} (a list holding v), which the GIN jsonb_path_ops index
//     serves; jsonb equality compares numbers by value (3 = 3.0) and
//     never a string with a number;
//   - a range: a jsonpath over the key's value or its items, numbers
//     compared as numbers, times as their fixed-width UTC strings (whose
//     order is the instants' order), other items never holding;
//   - $exists: "metadata ? $n";
//   - $not, $and, $or: NOT, AND, OR (no condition is ever NULL).
func filterSQL(e *spi.Expr, args []any) (string, []any) {
	switch e.Kind {
	case spi.ExprAnd, spi.ExprOr:
		if len(e.Args) == 0 {
			return "TRUE", args
		}
		parts := make([]string, len(e.Args))
		for i, a := range e.Args {
			parts[i], args = filterSQL(a, args)
		}
		op := " AND "
		if e.Kind == spi.ExprOr {
			op = " OR "
		}
		return "(" + strings.Join(parts, op) + ")", args
	case spi.ExprNot:
		sub, args := filterSQL(e.Args[0], args)
		return "(NOT " + sub + ")", args
	case spi.ExprExists:
		args = append(args, e.Key)
		return fmt.Sprintf("(metadata ? $%d)", len(args)), args
	case spi.ExprIn:
		objs := make([]string, 0, 2*len(e.Values))
		for _, v := range e.Values {
			raw, _ := v.MarshalJSON() // a validated scalar always marshals
			one, _ := json.Marshal(map[string]json.RawMessage{e.Key: raw})
			list, _ := json.Marshal(map[string][]json.RawMessage{e.Key: {raw}})
			objs = append(objs, string(one), string(list))
		}
		args = append(args, objs)
		return fmt.Sprintf("(metadata @> ANY($%d::jsonb[]))", len(args)), args
	case spi.ExprCmp:
		v := e.Values[0]
		op := map[spi.CmpOp]string{spi.OpGt: ">", spi.OpGte: ">=", spi.OpLt: "<", spi.OpLte: "<="}[e.Op]
		var path string
		var operand json.RawMessage
		if v.Kind() == spi.KindTime {
			path = `lax $[*]."$time" ? (@.type() == "string" && @ ` + op + ` $v)`
			operand, _ = json.Marshal(v.TimeValue().Format(spi.TimeLayout))
		} else {
			path = `lax $[*] ? (@.type() == "number" && @ ` + op + ` $v)`
			operand, _ = v.MarshalJSON()
		}
		vars, _ := json.Marshal(map[string]json.RawMessage{"v": operand})
		args = append(args, e.Key, string(vars))
		return fmt.Sprintf("coalesce(jsonb_path_exists(metadata -> $%d, '%s', $%d::jsonb), false)", len(args)-1, path, len(args)), args
	}
	return "FALSE", args
}
