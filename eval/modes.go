package eval

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// ParseModes reads a comma-separated list of keyword, vector, graph and
// hybrid. A hybrid mode may carry settings in parentheses, separated by
// spaces, which override the server defaults for that mode only:
//
//	hybrid(fusion=dbsf keyword=1 vector=1 graph=0 expand=0)
//
// fusion is rrf, score or dbsf; rrf_k the RRF constant; keyword, vector and
// graph are source weights, 0 leaving the source out; expand is the graph
// expansion's weight, 0 switching the expansion off. The mode's name in the
// report is the text as written.
func ParseModes(s string) ([]Mode, error) {
	var ms []Mode
	for _, spec := range splitTop(s) {
		spec = strings.TrimSpace(spec)
		name, params, hasParams := strings.Cut(spec, "(")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "keyword":
			ms = append(ms, KeywordMode())
		case "vector":
			ms = append(ms, VectorMode())
		case "graph":
			ms = append(ms, GraphMode())
		case "hybrid":
			m := HybridMode()
			if hasParams {
				params, ok := strings.CutSuffix(strings.TrimSpace(params), ")")
				if !ok {
					return nil, fmt.Errorf("eval: mode %q: missing )", spec)
				}
				if err := m.set(params); err != nil {
					return nil, fmt.Errorf("eval: mode %q: %w", spec, err)
				}
				m.Name = spec
			}
			ms = append(ms, m)
		default:
			return nil, fmt.Errorf("eval: unknown mode %q (want keyword, vector, graph or hybrid)", name)
		}
		if hasParams && ms[len(ms)-1].Single != "" {
			return nil, fmt.Errorf("eval: mode %q: only hybrid takes settings", spec)
		}
	}
	return ms, nil
}

// splitTop splits s at the commas outside parentheses.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// set applies space-separated key=value settings to a hybrid mode.
func (m *Mode) set(params string) error {
	on, off := true, false
	for _, kv := range strings.Fields(params) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("setting %q is not key=value", kv)
		}
		switch k {
		case "fusion":
			switch v {
			case "rrf", "score", "dbsf":
				m.Fusion.Mode = v
			default:
				return fmt.Errorf("fusion %q: want rrf, score or dbsf", v)
			}
			continue
		case "rrf_k":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("rrf_k %q: want a positive integer", v)
			}
			m.Fusion.K = n
			continue
		}
		w, err := strconv.ParseFloat(v, 64)
		if err != nil || w < 0 {
			return fmt.Errorf("%s=%q: want a weight >= 0", k, v)
		}
		switch k {
		case spi.SourceKeyword, spi.SourceVector, spi.SourceGraph:
			if m.Sources == nil {
				m.Sources = map[string]retriever.SourceOptions{}
			}
			if w == 0 {
				m.Sources[k] = retriever.SourceOptions{Enabled: &off}
			} else {
				m.Sources[k] = retriever.SourceOptions{Enabled: &on, Weight: w}
			}
		case "expand":
			if w == 0 {
				m.Expand = retriever.ExpandOptions{Enabled: &off}
			} else {
				m.Expand = retriever.ExpandOptions{Enabled: &on, Weight: w}
			}
		default:
			return fmt.Errorf("unknown setting %q (want fusion, rrf_k, keyword, vector, graph or expand)", k)
		}
	}
	return nil
}
