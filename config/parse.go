package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// LookupEnv is the signature of os.LookupEnv, injected for tests.
type LookupEnv func(string) (string, bool)

// Parse decodes rag.yaml bytes on top of Default and validates the result.
// lookup resolves ${VAR} references.
func Parse(b []byte, lookup LookupEnv) (*Config, error) {
	c := Default()
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, &Error{Key: "(file)", Message: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if len(root.Content) > 0 {
		doc := root.Content[0]
		if doc.Kind != yaml.MappingNode {
			return nil, &Error{Key: "(file)", Line: doc.Line, Message: "top level must be a mapping of keys"}
		}
		if err := expandEnv(doc, lookup); err != nil {
			return nil, err
		}
		if err := checkKeys(doc, reflect.TypeOf(c), ""); err != nil {
			return nil, err
		}
		if err := doc.Decode(&c); err != nil {
			return nil, typeError(doc, err)
		}
	}
	if err := c.Validate(); err != nil {
		if len(root.Content) > 0 {
			addLines(err, root.Content[0])
		}
		return nil, err
	}
	return &c, nil
}

// addLines sets the line of every *Error in err whose key is in the file.
func addLines(err error, doc *yaml.Node) {
	var ce *Error
	if errors.As(err, &ce) && ce.Line == 0 {
		if n := nodeAt(doc, ce.Key); n != nil {
			ce.Line = n.Line
		}
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			addLines(e, doc)
		}
	}
}

// nodeAt finds the node of path ("auth.keys[1].tenant") in the mapping
// doc: the key node of a mapping entry, the item of a sequence. It returns
// nil when the file does not set the path.
func nodeAt(doc *yaml.Node, path string) *yaml.Node {
	n, found := doc, (*yaml.Node)(nil)
	for _, seg := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(seg, "[")
		if n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				found, next = n.Content[i], n.Content[i+1]
				break
			}
		}
		for next != nil && rest != "" {
			var idx string
			idx, rest, _ = strings.Cut(rest, "]")
			rest = strings.TrimPrefix(rest, "[")
			i, err := strconv.Atoi(idx)
			if err != nil || next.Kind != yaml.SequenceNode || i >= len(next.Content) {
				return nil
			}
			next = next.Content[i]
			found = next
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return found
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandEnv replaces ${VAR} and ${VAR:-default} in every scalar, keeping
// the node's line, and lets YAML re-resolve the scalar's type so that
// "port: ${PORT}" decodes into an int.
func expandEnv(n *yaml.Node, lookup LookupEnv) error {
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
		var missing string
		v := envRef.ReplaceAllStringFunc(n.Value, func(ref string) string {
			m := envRef.FindStringSubmatch(ref)
			if val, ok := lookup(m[1]); ok && val != "" {
				return val
			}
			if m[2] != "" {
				return m[3]
			}
			if missing == "" {
				missing = m[1]
			}
			return ""
		})
		if missing != "" {
			return &Error{Key: "${" + missing + "}", Line: n.Line, Message: "environment variable is not set (use ${" + missing + ":-default} for a fallback)"}
		}
		n.Value = v
		if n.Style == 0 {
			n.Tag = "" // plain scalar: resolve int/bool/float from the expanded text
		}
	}
	for _, c := range n.Content {
		if err := expandEnv(c, lookup); err != nil {
			return err
		}
	}
	return nil
}

// checkKeys rejects mapping keys that name no field of t, reporting the full
// key path and the line.
func checkKeys(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case n.Kind == yaml.ScalarNode && isInt(t.Kind()) && n.ShortTag() == "!!float":
		// yaml truncates 1.9 to 1 when decoding into an int.
		if f, err := strconv.ParseFloat(n.Value, 64); err != nil || f != math.Trunc(f) {
			return &Error{Key: path, Line: n.Line, Message: "must be a whole number, got " + n.Value}
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				name := k.Value
				if name == "" {
					name = `""` // an empty key, e.g. a bare "?" in YAML
				}
				return &Error{Key: join(path, name), Line: k.Line, Message: "unknown key" + suggest(k.Value, fields)}
			}
			if err := checkKeys(v, ft, join(path, k.Value)); err != nil {
				return err
			}
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Map:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := checkKeys(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice:
		for i, c := range n.Content {
			if err := checkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func isInt(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

func suggest(key string, fields map[string]reflect.Type) string {
	best, bestD := "", 3 // suggest only keys within edit distance 2
	for k := range fields {
		if d := editDistance(key, k); d < bestD || (d == bestD && k < best) {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var lineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// typeError turns yaml's "line N: cannot unmarshal ..." into an *Error
// naming the key found on that line.
func typeError(doc *yaml.Node, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) || len(te.Errors) == 0 {
		return &Error{Key: "(file)", Message: err.Error()}
	}
	msg := te.Errors[0]
	line := 0
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		fmt.Sscan(m[1], &line)
		msg = m[2]
	}
	key := keyAtLine(doc, line, "")
	if key == "" {
		key = "(value)"
	}
	return &Error{Key: key, Line: line, Message: msg}
}

// keyAtLine returns the path of the mapping key whose value sits on line.
func keyAtLine(n *yaml.Node, line int, path string) string {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := join(path, k.Value)
			if v.Kind == yaml.ScalarNode && v.Line == line {
				return p
			}
			if found := keyAtLine(v, line, p); found != "" {
				return found
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if c.Kind == yaml.ScalarNode && c.Line == line {
				return p
			}
			if found := keyAtLine(c, line, p); found != "" {
				return found
			}
		}
	}
	return ""
}
