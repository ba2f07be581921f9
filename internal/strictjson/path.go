package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// jsonValue is one value of a JSON text, found by walkJSON.
type jsonValue struct {
	// path is the full JSON path: "sources.keyword.weight",
	// "documents[3].metadata.lang".
	path string
	// start and end are the byte offsets of the value's first byte and of
	// the byte after it.
	start, end int64
	// typ is the Go type the value decodes into; nil under an unknown key.
	typ reflect.Type
	// unknownKey: the last segment of path is a key that names no field of
	// its struct.
	unknownKey bool
}

var timeType = reflect.TypeFor[time.Time]()

// walkJSON lists every value of body (valid JSON) in document order, with
// its path and the Go type it decodes into when decoded into a value of
// type t. It stops at the first token it cannot read. encoding/json names
// neither map keys nor array indices in its errors; this walk does.
func walkJSON(body []byte, t reflect.Type) []jsonValue {
	type frame struct {
		jsonValue
		object  bool
		wantKey bool
		key     string
		index   int
	}
	var (
		out   []jsonValue
		stack []*frame
	)
	// child is the path and type of the next value inside top.
	child := func(top *frame) jsonValue {
		if top == nil {
			return jsonValue{typ: t}
		}
		if !top.object {
			return jsonValue{path: fmt.Sprintf("%s[%d]", top.path, top.index), typ: elemType(top.typ)}
		}
		v := jsonValue{path: top.key}
		if top.path != "" {
			v.path = top.path + "." + top.key
		}
		v.typ, v.unknownKey = memberType(top.typ, top.key)
		return v
	}
	done := func() { // a value inside the top frame is complete
		if len(stack) == 0 {
			return
		}
		if top := stack[len(stack)-1]; top.object {
			top.wantKey = true
		} else {
			top.index++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		prev := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		end := dec.InputOffset()
		start := prev + int64(len(body[prev:end])-len(bytes.TrimLeft(body[prev:end], " \t\r\n,:")))
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			top.end = end
			out = append(out, top.jsonValue)
			stack = stack[:len(stack)-1]
			done()
			continue
		}
		if top != nil && top.wantKey {
			top.key, _ = tok.(string)
			top.wantKey = false
			continue
		}
		v := child(top)
		v.start = start
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, &frame{jsonValue: v, object: d == '{', wantKey: d == '{'})
			continue
		}
		v.end = end
		out = append(out, v)
		done()
	}
}

// elemType is the element type of a slice, array or map type.
func elemType(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return t.Elem()
	}
	return nil
}

// memberType is the type of key in an object decoded into t, matched as
// encoding/json matches it (exactly, else case-insensitively); unknown
// reports a struct without such a field.
func memberType(t reflect.Type, key string) (_ reflect.Type, unknown bool) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return nil, false
	}
	switch {
	case t.Kind() == reflect.Map:
		return t.Elem(), false
	case t.Kind() != reflect.Struct || t == timeType:
		return nil, false
	}
	var fold reflect.Type
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			return f.Type, false
		}
		if fold == nil && strings.EqualFold(name, key) {
			fold = f.Type
		}
	}
	return fold, fold == nil
}

// pathAt is the path of the innermost value of body that holds byte
// offset off (an encoding/json type error's offset), or "" when none does.
func pathAt(body []byte, t reflect.Type, off int64) string {
	path, best := "", int64(-1)
	for _, v := range walkJSON(body, t) {
		if v.start < off && off <= v.end && v.start > best {
			path, best = v.path, v.start
		}
	}
	return path
}

// unknownKeyPath is the path of the first key named name that its struct
// does not know, or "" when there is none.
func unknownKeyPath(body []byte, t reflect.Type, name string) string {
	for _, v := range walkJSON(body, t) {
		if v.unknownKey && (v.path == name || strings.HasSuffix(v.path, "."+name)) {
			return v.path
		}
	}
	return ""
}

// badTimePath is the path of the first time.Time value of body that is not
// an RFC 3339 string, or "" when there is none.
func badTimePath(body []byte, t reflect.Type) string {
	for _, v := range walkJSON(body, t) {
		if v.typ == timeType || v.typ == reflect.PointerTo(timeType) {
			var ts time.Time
			if json.Unmarshal(body[v.start:v.end], &ts) != nil {
				return v.path
			}
		}
	}
	return ""
}
