package vecgen_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ragd/ragd/internal/topk"
	"github.com/ragd/ragd/internal/vecgen"
	"github.com/ragd/ragd/spi"
)

func randUnit(rnd *rand.Rand, dim int) []float32 {
	v := make([]float64, dim)
	for i := range v {
		v[i] = rnd.NormFloat64()
	}
	return vecgen.Unit(v)
}

func TestPoolTexts(t *testing.T) {
	docs := []vecgen.Source{
		{ID: "1", Title: "wing flutter at high speed .", Text: "wing flutter at high speed . the flutter of a swept wing was measured in a tunnel . results agree with the theory of flutter ."},
		{ID: "2", Title: "boundary layer transition", Text: "transition of the boundary layer on a flat plate was studied . short . the heat transfer rises after transition on the plate ."},
	}
	qs := []vecgen.Source{{ID: "q1", Text: "what is  wing flutter"}, {ID: "q2", Text: ""}}
	a := vecgen.PoolTexts(docs, qs, vecgen.TextParams{Seed: 3, HeldShare: 0.3})
	b := vecgen.PoolTexts(docs, qs, vecgen.TextParams{Seed: 3, HeldShare: 0.3})
	if !slices.Equal(a, b) {
		t.Fatal("PoolTexts is not deterministic")
	}
	seen := map[string]bool{}
	kinds := map[string]int{}
	for _, x := range a {
		if seen[x.Text] {
			t.Errorf("text %q repeated", x.Text)
		}
		seen[x.Text] = true
		kinds[x.Kind]++
		if len(strings.Fields(x.Text)) < 4 && x.Kind != vecgen.KindQuery {
			t.Errorf("text %q has fewer than 4 words", x.Text)
		}
		if (x.Kind == vecgen.KindQuery) != (x.Doc == "") {
			t.Errorf("text %+v: only queries have no source", x)
		}
		if x.Kind == vecgen.KindQuery && !x.Held || (x.Kind == vecgen.KindTitle || x.Kind == vecgen.KindVariant) && x.Held {
			t.Errorf("text %+v: queries and only they and sentences are held", x)
		}
	}
	// The first title equals the first sentence: kept once, as the title.
	if kinds[vecgen.KindTitle] != 1 || kinds[vecgen.KindSentence] != 4 || kinds[vecgen.KindQuery] != 1 {
		t.Errorf("kinds %v, want 2 titles, 4 sentences (\"short\" is dropped), 1 query", kinds)
	}
	if last := a[len(a)-1]; last.Text != "what is wing flutter" {
		t.Errorf("last text %q, want the query with its spaces collapsed", last.Text)
	}
}

// testPool is a pool of random unit vectors over sources s0..s(n-1), with
// one held text per source.
func testPool(t *testing.T, sources, per, dim int) *vecgen.Pool {
	t.Helper()
	rnd := rand.New(rand.NewPCG(1, 2))
	var texts []vecgen.Text
	var vecs [][]float32
	for s := range sources {
		for j := range per {
			texts = append(texts, vecgen.Text{Text: fmt.Sprintf("s%d t%d", s, j), Doc: fmt.Sprintf("s%d", s), Kind: vecgen.KindSentence, Held: j == 0})
			v := randUnit(rnd, dim)
			for d := range v {
				v[d] *= 3 // NewPool normalises
			}
			vecs = append(vecs, v)
		}
	}
	p, err := vecgen.NewPool(texts, vecs)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNewPoolRejects(t *testing.T) {
	txt := []vecgen.Text{{Text: "a", Doc: "d"}, {Text: "b", Doc: "d"}}
	for name, vecs := range map[string][][]float32{
		"count":     {{1, 0}},
		"dimension": {{1, 0}, {1, 0, 0}},
		"zero":      {{1, 0}, {0, 0}},
	} {
		if _, err := vecgen.NewPool(txt, vecs); err == nil {
			t.Errorf("%s: NewPool accepted a bad pool", name)
		}
	}
	if _, err := vecgen.NewPool([]vecgen.Text{{Text: "a", Held: true}}, [][]float32{{1}}); err == nil {
		t.Error("NewPool accepted a pool with nothing to mix")
	}
}

func TestPoolInvariants(t *testing.T) {
	p := testPool(t, 5, 4, 8)
	if len(p.Vecs) != len(p.Texts) {
		t.Fatalf("%d vectors, %d texts", len(p.Vecs), len(p.Texts))
	}
	var want []int
	for i, x := range p.Texts {
		if !x.Held {
			want = append(want, i)
		}
		var n float64
		for _, c := range p.Vecs[i] {
			n += float64(c) * float64(c)
		}
		if math.Abs(n-1) > 1e-5 || len(p.Vecs[i]) != p.Dim {
			t.Errorf("vector %d: norm² %g, dimension %d", i, n, len(p.Vecs[i]))
		}
	}
	if !slices.Equal(p.Mixable(), want) {
		t.Errorf("Mixable %v, want the texts not held %v", p.Mixable(), want)
	}
}

func TestDoc(t *testing.T) {
	p := testPool(t, 20, 6, 32)
	g := vecgen.NewGenerator(p, vecgen.Params{Seed: 9})
	seen := map[string]bool{}
	for i := range 500 {
		src := fmt.Sprintf("s%d", i%20)
		v := g.Doc(i, src)
		if !slices.Equal(v, g.Doc(i, src)) {
			t.Fatalf("Doc(%d) is not deterministic", i)
		}
		var n float64
		for _, c := range v {
			n += float64(c) * float64(c)
		}
		if math.Abs(n-1) > 1e-5 {
			t.Fatalf("Doc(%d) has norm² %g", i, n)
		}
		k := fmt.Sprint(v)
		if seen[k] {
			t.Fatalf("Doc(%d) repeats an earlier document", i)
		}
		seen[k] = true
	}
	// The home vector dominates: a document is nearer its own source's
	// pool vectors than another's, on average.
	own, other := 0.0, 0.0
	for i := range 500 {
		v := g.Doc(i, "s3")
		for j, x := range p.Texts {
			if x.Held {
				continue
			}
			s := float64(dot(v, p.Vecs[j]))
			if x.Doc == "s3" {
				own += s / 5
			} else {
				other += s / 95
			}
		}
	}
	if own < other+50 { // summed over 500 documents
		t.Errorf("mean similarity to the own source %.3f, to others %.3f: the home does not dominate", own/500, other/500)
	}
	// Held texts are queries, in a seeded order, never mixed.
	qs := g.Queries()
	if len(qs) != 20 || !slices.EqualFunc(qs, vecgen.NewGenerator(p, vecgen.Params{Seed: 9}).Queries(), func(a, b vecgen.Query) bool { return a.Text == b.Text }) {
		t.Errorf("%d queries or not deterministic", len(qs))
	}
	for _, q := range qs {
		if !strings.HasSuffix(q.Text, " t0") {
			t.Errorf("query %q is not a held text", q.Text)
		}
	}
}

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// TestExactMatchesBruteForce: the blocked search equals sorting every
// document's score, overall and per tenant, with a query's excluded id
// left out, across several blocks.
func TestExactMatchesBruteForce(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	const n, dim, k, tenants = 5000, 16, 7, 3
	docs := make([][]float32, n)
	for i := range docs {
		docs[i] = randUnit(rnd, dim)
	}
	qs := [][]float32{randUnit(rnd, dim), randUnit(rnd, dim), docs[42]}
	exclude := []string{"", "d7", "d42"}
	ex, err := vecgen.NewExact(qs, exclude, k, tenants)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range docs {
		if err := ex.Add(fmt.Sprintf("d%d", i), v); err != nil {
			t.Fatal(err)
		}
	}
	res, got := ex.Results()
	if got != n {
		t.Fatalf("searched %d documents, want %d", got, n)
	}
	for qi, q := range qs {
		all := topk.New(k)
		per := []*topk.Refs{topk.New(k), topk.New(k), topk.New(k)}
		var sum float64
		for i, v := range docs {
			s := float64(dot(q, v))
			sum += math.Sqrt(max(0, 2-2*s))
			id := fmt.Sprintf("d%d", i)
			if id == exclude[qi] {
				continue
			}
			all.Offer(spi.Ref{ID: id, Score: s})
			per[i%tenants].Offer(spi.Ref{ID: id, Score: s})
		}
		check := func(name string, got []spi.Ref, want []spi.Ref) {
			if len(got) != len(want) {
				t.Fatalf("query %d %s: %d results, want %d", qi, name, len(got), len(want))
			}
			for i := range got {
				if got[i].ID != want[i].ID || math.Abs(got[i].Score-want[i].Score) > 1e-5 {
					t.Errorf("query %d %s rank %d: %v, want %v", qi, name, i, got[i], want[i])
				}
			}
		}
		check("all", res[qi].All, all.Sorted())
		for ti := range tenants {
			check(fmt.Sprintf("tenant %d", ti), res[qi].Tenants[ti], per[ti].Sorted())
		}
		if math.Abs(res[qi].MeanDist-sum/n) > 1e-4 {
			t.Errorf("query %d: mean distance %g, want %g", qi, res[qi].MeanDist, sum/n)
		}
	}
	if res[2].All[0].ID == "d42" {
		t.Error("the excluded id was returned")
	}
}

// TestMeasures: the structure measures recover what a set is made of.
func TestMeasures(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	const n, dim, sub = 4000, 64, 4
	// Points near a 4-dimensional subspace (a random basis), and
	// isotropic points.
	basis := make([][]float32, sub)
	for i := range basis {
		basis[i] = randUnit(rnd, dim)
	}
	low := make([][]float32, n)
	iso := make([][]float32, n)
	for i := range low {
		v := make([]float64, dim)
		for _, b := range basis {
			c := rnd.NormFloat64()
			for d := range v {
				v[d] += c * float64(b[d])
			}
		}
		low[i] = vecgen.Unit(v)
		iso[i] = randUnit(rnd, dim)
	}
	sl, si := vecgen.SpectrumOf(low), vecgen.SpectrumOf(iso)
	if sl.Dims90 > sub || sl.Participation > sub+0.5 {
		t.Errorf("subspace of %d: %+v", sub, sl)
	}
	if si.Dims90 < dim*3/4 || si.Participation < dim*0.8 || si.MeanCos > 0.01 {
		t.Errorf("isotropic in %d: %+v", dim, si)
	}
	twoNN := func(set [][]float32) float64 {
		ex, err := vecgen.NewExact(set[:300], idsOf(300), 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range set {
			if err := ex.Add(fmt.Sprint(i), v); err != nil {
				t.Fatal(err)
			}
		}
		res, _ := ex.Results()
		var nn [][]spi.Ref
		for _, r := range res {
			nn = append(nn, r.All)
		}
		return vecgen.TwoNN(nn)
	}
	// On the sphere of the subspace the manifold has dimension sub-1.
	if d := twoNN(low); d < sub-1-1 || d > sub-1+1.5 {
		t.Errorf("TwoNN of a %d-sphere: %.2f", sub-1, d)
	}
	if d := twoNN(iso); d < 20 {
		t.Errorf("TwoNN of isotropic points in %d dimensions: %.2f, want it large", dim, d)
	}
	if l := vecgen.LID([]spi.Ref{{Score: 0.9}, {Score: 0.8}}); l <= 0 {
		t.Errorf("LID %g", l)
	}
	if rc := vecgen.RelativeContrast(vecgen.ExactResult{All: []spi.Ref{{Score: 0.5}}, MeanDist: 2}); math.Abs(rc-2) > 1e-9 {
		t.Errorf("relative contrast %g, want 2 (mean distance 2 over nearest distance 1)", rc)
	}
	if s := vecgen.Percentiles([]float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}); s.P10 != 2 || s.P50 != 6 || s.P90 != 10 || s.Max != 10 {
		t.Errorf("percentiles %+v", s)
	}
}

func idsOf(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(i)
	}
	return out
}
