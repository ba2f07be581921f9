// Command ragd-vectors makes benchmark corpora whose vectors have the
// structure of a real embedding space (package internal/vecgen), for
// scripts/bench.sh scale:
//
//	ragd-vectors texts -collection ../shared/data/cranfield > pool.jsonl
//	jq -r 'select(.kind != "query") | .text' pool.jsonl | ragd embed > pool.vectors
//	jq -r 'select(.kind == "query") | .text' pool.jsonl | ragd embed --input-type query >> pool.vectors
//	ragd-vectors make -pool pool.jsonl -pool-vectors pool.vectors \
//	    -corpus synth-1000000.jsonl -out synth-1000000-emb.jsonl \
//	    -queries queries-emb.jsonl -exact exact-1000000.jsonl -stats stats-1000000.md
//
// texts writes the pool's real texts (vecgen.PoolTexts). make gives every
// document of a corpus (JSONL lines with "id"; a copy's id is its source's
// followed by "-copy<i>", as ../shared/tools/synth_corpus.py writes them) a
// vector mixed from the pool, writes the queries (held-out texts with
// their real vectors), each query's exact top k over the corpus (overall
// and per tenant, line i in tenant i mod -tenants) and a markdown table of
// the space's structure beside the real pool and uniform noise.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ragd/ragd/internal/vecgen"
	"github.com/ragd/ragd/spi"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ragd-vectors:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: ragd-vectors texts|make [flags]")
	}
	switch args[0] {
	case "texts":
		return textsCmd(args[1:], stdout)
	case "make":
		return makeCmd(args[1:])
	}
	return fmt.Errorf("unknown command %q: want texts or make", args[0])
}

func textsCmd(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("texts", flag.ContinueOnError)
	dir := fs.String("collection", "", "BEIR-layout directory (corpus.jsonl, queries.jsonl)")
	seed := fs.Uint64("seed", 1, "seed of the held-out choice and the variants")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("texts: -collection is required")
	}
	docs, err := readJSONL[vecgen.Source](filepath.Join(*dir, "corpus.jsonl"))
	if err != nil {
		return err
	}
	qs, err := readJSONL[vecgen.Source](filepath.Join(*dir, "queries.jsonl"))
	if err != nil {
		return err
	}
	w := bufio.NewWriter(stdout)
	enc := json.NewEncoder(w)
	for _, t := range vecgen.PoolTexts(docs, qs, vecgen.TextParams{Seed: *seed}) {
		if err := enc.Encode(t); err != nil {
			return err
		}
	}
	return w.Flush()
}

type makeFlags struct {
	pool, poolVecs, corpus, out, queries, exact, stats string
	tenants, k, sample                                 int
	params                                             vecgen.Params
}

func makeCmd(args []string) error {
	var f makeFlags
	fs := flag.NewFlagSet("make", flag.ContinueOnError)
	fs.StringVar(&f.pool, "pool", "", "the pool's texts (ragd-vectors texts)")
	fs.StringVar(&f.poolVecs, "pool-vectors", "", "their vectors, one JSON array a line in the same order (ragd embed)")
	fs.StringVar(&f.corpus, "corpus", "", "the corpus: JSONL documents with \"id\" and no \"vector\"")
	fs.StringVar(&f.out, "out", "", "the corpus with vectors")
	fs.StringVar(&f.queries, "queries", "", "the queries: {\"text\",\"vector\",\"kind\"} lines")
	fs.StringVar(&f.exact, "exact", "", "each query's exact top k: {\"all\":[{id,score}],\"tenants\":[[...]]} lines in query order")
	fs.StringVar(&f.stats, "stats", "", "a markdown table of the space's structure")
	fs.IntVar(&f.tenants, "tenants", 3, "tenants of the per-tenant exact answers (line i in tenant i mod this)")
	fs.IntVar(&f.k, "k", 10, "exact answers' length")
	fs.IntVar(&f.sample, "sample", 500, "documents whose nearest neighbours the statistics measure (the corpus's first)")
	fs.Uint64Var(&f.params.Seed, "seed", 1, "seed of the mixtures")
	fs.Float64Var(&f.params.Noise, "noise", vecgen.DefaultParams.Noise, "Gaussian noise per dimension before normalising")
	fs.Float64Var(&f.params.SameSource, "same-source", vecgen.DefaultParams.SameSource, "probability that the second vector comes from the document's own source")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for name, v := range map[string]string{"pool": f.pool, "pool-vectors": f.poolVecs, "corpus": f.corpus, "out": f.out, "queries": f.queries, "exact": f.exact} {
		if v == "" {
			return fmt.Errorf("make: -%s is required", name)
		}
	}
	texts, err := readJSONL[vecgen.Text](f.pool)
	if err != nil {
		return err
	}
	vecs, err := readJSONL[[]float32](f.poolVecs)
	if err != nil {
		return err
	}
	pool, err := vecgen.NewPool(texts, vecs)
	if err != nil {
		return err
	}
	g := vecgen.NewGenerator(pool, f.params)
	qs := g.Queries()
	if err := writeJSONL(f.queries, qs); err != nil {
		return err
	}
	st, err := corpusPass(f, g, qs)
	if err != nil {
		return err
	}
	if f.stats == "" {
		return nil
	}
	ref, err := poolReference(pool, g, qs, f.sample)
	if err != nil {
		return err
	}
	return os.WriteFile(f.stats, []byte(statsTable(pool, g, ref, st)), 0o644)
}

// corpusPass writes the corpus with vectors and the exact answers, and
// returns the statistics of the corpus (queries and the sample's nearest
// neighbours).
func corpusPass(f makeFlags, g *vecgen.Generator, qs []vecgen.Query) (spaceStats, error) {
	in, err := os.Open(f.corpus)
	if err != nil {
		return spaceStats{}, err
	}
	defer in.Close()
	tmp := f.out + ".tmp"
	outF, err := os.Create(tmp)
	if err != nil {
		return spaceStats{}, err
	}
	defer os.Remove(tmp)
	defer outF.Close()
	w := bufio.NewWriterSize(outF, 1<<20)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)

	// The first -sample documents are read first: they are queries too
	// (their nearest other document).
	type line struct {
		id  string
		raw []byte
		vec []float32
	}
	var head []line
	n := 0
	next := func() (line, bool, error) {
		if !sc.Scan() {
			return line{}, false, sc.Err()
		}
		raw := bytes.TrimSpace(sc.Bytes())
		var d struct {
			ID     string          `json:"id"`
			Vector json.RawMessage `json:"vector"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			return line{}, false, fmt.Errorf("%s line %d: %w", f.corpus, n+1, err)
		}
		if d.ID == "" || d.Vector != nil || len(raw) < 2 || raw[len(raw)-1] != '}' {
			return line{}, false, fmt.Errorf("%s line %d: want a JSON object with an id and no vector", f.corpus, n+1)
		}
		src, _, _ := strings.Cut(d.ID, "-copy")
		l := line{id: d.ID, raw: bytes.Clone(raw), vec: g.Doc(n, src)}
		n++
		return l, true, nil
	}
	for len(head) < f.sample {
		l, ok, err := next()
		if err != nil {
			return spaceStats{}, err
		}
		if !ok {
			break
		}
		head = append(head, l)
	}
	queries := make([][]float32, 0, len(qs)+len(head))
	exclude := make([]string, 0, len(qs)+len(head))
	for _, q := range qs {
		queries, exclude = append(queries, q.Vector), append(exclude, "")
	}
	for _, l := range head {
		queries, exclude = append(queries, l.vec), append(exclude, l.id)
	}
	ex, err := vecgen.NewExact(queries, exclude, f.k, f.tenants)
	if err != nil {
		return spaceStats{}, err
	}
	var spec [][]float32
	emit := func(l line) error {
		if len(spec) < specSize {
			spec = append(spec, l.vec)
		}
		if err := ex.Add(l.id, l.vec); err != nil {
			return err
		}
		w.Write(l.raw[:len(l.raw)-1])
		w.WriteString(`,"vector":`)
		w.Write(appendVector(nil, l.vec))
		_, err := w.WriteString("}\n")
		return err
	}
	for _, l := range head {
		if err := emit(l); err != nil {
			return spaceStats{}, err
		}
	}
	for {
		l, ok, err := next()
		if err != nil {
			return spaceStats{}, err
		}
		if !ok {
			break
		}
		if err := emit(l); err != nil {
			return spaceStats{}, err
		}
	}
	res, docs := ex.Results()
	if err := w.Flush(); err != nil {
		return spaceStats{}, err
	}
	if err := outF.Close(); err != nil {
		return spaceStats{}, err
	}
	if err := writeExact(f.exact, res[:len(qs)]); err != nil {
		return spaceStats{}, err
	}
	if err := os.Rename(tmp, f.out); err != nil {
		return spaceStats{}, err
	}
	return summarise(docs, res[:len(qs)], res[len(qs):], spec), nil
}

// specSize is how many vectors a spectrum is computed over.
const specSize = 20000

func appendVector(b []byte, v []float32) []byte {
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
	}
	return append(b, ']')
}

// exactLine is one line of the exact file.
type exactLine struct {
	All     []hit   `json:"all"`
	Tenants [][]hit `json:"tenants,omitempty"`
}

type hit struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
}

func hits(refs []spi.Ref) []hit {
	out := make([]hit, len(refs))
	for i, r := range refs {
		out[i] = hit{ID: r.ID, Score: r.Score}
	}
	return out
}

func writeExact(path string, res []vecgen.ExactResult) error {
	lines := make([]exactLine, len(res))
	for i, r := range res {
		lines[i].All = hits(r.All)
		for _, t := range r.Tenants {
			lines[i].Tenants = append(lines[i].Tenants, hits(t))
		}
	}
	return writeJSONL(path, lines)
}

// spaceStats are the measures of one set of vectors.
type spaceStats struct {
	n        int
	nn       vecgen.Spread // cosine to the nearest other document, over the sample
	nearCopy float64       // share of the sample whose nearest is at cosine >= nearCopyCos
	twoNN    float64
	spec     vecgen.Spectrum
	top1     vecgen.Spread // queries: cosine of the nearest document
	lid      vecgen.Spread // queries: LID at k
	rc       vecgen.Spread // queries: relative contrast
}

const nearCopyCos = 0.98

func summarise(n int, queries, sample []vecgen.ExactResult, spec [][]float32) spaceStats {
	s := spaceStats{n: n}
	var nn, top1, lid, rc []float64
	var pairs [][]spi.Ref
	for _, r := range sample {
		if len(r.All) == 0 {
			continue
		}
		nn = append(nn, r.All[0].Score)
		if r.All[0].Score >= nearCopyCos {
			s.nearCopy++
		}
		pairs = append(pairs, r.All)
	}
	if len(nn) > 0 {
		s.nearCopy /= float64(len(nn))
	}
	for _, r := range queries {
		if len(r.All) == 0 {
			continue
		}
		top1 = append(top1, r.All[0].Score)
		lid = append(lid, vecgen.LID(r.All))
		rc = append(rc, vecgen.RelativeContrast(r))
	}
	s.nn, s.top1, s.lid, s.rc = vecgen.Percentiles(nn), vecgen.Percentiles(top1), vecgen.Percentiles(lid), vecgen.Percentiles(rc)
	s.twoNN = vecgen.TwoNN(pairs)
	if len(spec) > 1 {
		s.spec = vecgen.SpectrumOf(spec)
	}
	return s
}

// poolReference measures, at the pool's size M, the real pool, M generated
// documents and M uniform random unit vectors, each searched by the
// queries and by a sample of its own points.
func poolReference(pool *vecgen.Pool, g *vecgen.Generator, qs []vecgen.Query, sample int) ([3]spaceStats, error) {
	mix := pool.Mixable()
	m := len(mix)
	real := make([][]float32, m)
	for i, j := range mix {
		real[i] = pool.Vecs[j]
	}
	var sources []string
	seen := map[string]bool{}
	for _, j := range mix {
		if d := pool.Texts[j].Doc; !seen[d] {
			seen[d] = true
			sources = append(sources, d)
		}
	}
	gen := make([][]float32, m)
	for i := range gen {
		gen[i] = g.Doc(i, sources[i%len(sources)])
	}
	rnd := rand.New(rand.NewPCG(g.Params().Seed, 0x6e6f6973)) // "nois"
	noise := make([][]float32, m)
	for i := range noise {
		v := make([]float64, pool.Dim)
		for d := range v {
			v[d] = rnd.NormFloat64()
		}
		noise[i] = vecgen.Unit(v)
	}
	var out [3]spaceStats
	for si, set := range [][][]float32{real, gen, noise} {
		// A sample spread over the set (the real pool is ordered by source).
		step := max(1, m/max(1, sample))
		queries := make([][]float32, 0, len(qs)+sample)
		exclude := make([]string, 0, len(qs)+sample)
		for _, q := range qs {
			queries, exclude = append(queries, q.Vector), append(exclude, "")
		}
		for i := 0; i < m && len(queries) < len(qs)+sample; i += step {
			queries, exclude = append(queries, set[i]), append(exclude, strconv.Itoa(i))
		}
		ex, err := vecgen.NewExact(queries, exclude, 10, 0)
		if err != nil {
			return out, err
		}
		for i, v := range set {
			if err := ex.Add(strconv.Itoa(i), v); err != nil {
				return out, err
			}
		}
		res, n := ex.Results()
		out[si] = summarise(n, res[:len(qs)], res[len(qs):], set[:min(m, specSize)])
	}
	return out, nil
}
