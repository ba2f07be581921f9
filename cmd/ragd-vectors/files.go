package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/ragd/ragd/internal/vecgen"
)

// readJSONL reads one T per non-empty line of path.
func readJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// writeJSONL writes vs to path, one JSON value a line, through a
// temporary file renamed into place.
func writeJSONL[T any](path string, vs []T) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// statsTable is the markdown comparison of the generated corpus with the
// real pool, the same number of generated points and uniform noise.
func statsTable(pool *vecgen.Pool, g *vecgen.Generator, ref [3]spaceStats, corpus spaceStats) string {
	var b strings.Builder
	m := ref[0].n
	p := g.Params()
	fmt.Fprintf(&b, "Vectors: %d real pool vectors (%d-d) mixed by 2–3 (home weight %.2f–%.2f, second from the same source with p %.2f), noise %.3f a dimension, seed %d; %d queries (held-out sentences and the collection's queries, real vectors).\n\n",
		m, pool.Dim, p.HomeMin, p.HomeMax, p.SameSource, p.Noise, p.Seed, len(g.Queries()))
	fmt.Fprintf(&b, "| measure | real pool, %d | generated, %d | uniform noise, %d | generated corpus, %d |\n|---|---|---|---|---|\n", m, m, m, corpus.n)
	sp := func(s vecgen.Spread) string { return fmt.Sprintf("%.3f / %.3f / %.3f", s.P10, s.P50, s.P90) }
	row := func(name string, f func(s spaceStats) string) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name, f(ref[0]), f(ref[1]), f(ref[2]), f(corpus))
	}
	row("cosine to the nearest other point, p10 / p50 / p90 (sample)", func(s spaceStats) string { return sp(s.nn) })
	row(fmt.Sprintf("near-copies: nearest at cosine ≥ %.2f", nearCopyCos), func(s spaceStats) string { return fmt.Sprintf("%.1f %%", 100*s.nearCopy) })
	row("intrinsic dimension (TwoNN)", func(s spaceStats) string { return fmt.Sprintf("%.1f", s.twoNN) })
	row("spectrum: participation ratio; components for 50 / 90 % of variance", func(s spaceStats) string {
		return fmt.Sprintf("%.1f; %d / %d", s.spec.Participation, s.spec.Dims50, s.spec.Dims90)
	})
	row("mean cosine of two random points", func(s spaceStats) string { return fmt.Sprintf("%.3f", s.spec.MeanCos) })
	row("queries: cosine of the nearest, p10 / p50 / p90", func(s spaceStats) string { return sp(s.top1) })
	row("queries: local intrinsic dimension at 10, p10 / p50 / p90", func(s spaceStats) string { return sp(s.lid) })
	row("queries: relative contrast, p10 / p50 / p90", func(s spaceStats) string { return sp(s.rc) })
	return b.String()
}
