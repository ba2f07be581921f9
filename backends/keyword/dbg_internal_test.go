package keyword

import (
	"cmp"
	"context"
	"os"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	"github.com/ragd/ragd/eval"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

var dbgN = 100000

func TestDbgPrune(t *testing.T) {
	path := os.Getenv("RAG_BENCH_KEYWORD_CORPUS")
	if path == "" {
		t.Skip()
	}
	ds, _ := eval.LoadBEIR(spitest.CranfieldDir(t), "test")
	idx, _ := createIndex(t.TempDir()+"/idx", Config{Analyzer: "en"}.withDefaults())
	defer idx.Close()
	an := idx.Mapping().AnalyzerNamed("en")
	x := newImpactIndex()
	var batch []spi.Document
	flush := func() {
		built, lens := buildDocs(batch, an)
		for i, d := range batch {
			x.putLocked(d.ID, "", nil, lens[i], nil, freqsOf(built[i]), nil)
		}
		batch = batch[:0]
	}
	readCorpus(t, path, dbgN, func(d spi.Document) {
		batch = append(batch, d)
		if len(batch) == 1000 {
			flush()
		}
	})
	flush()
	p := bm25Params{k1: DefaultK1, b: DefaultB, titleWeight: DefaultTitleBoost}
	tot := 0
	for _, q := range ds.Queries[:50] {
		var toks []string
		for _, tok := range an.Analyze([]byte(q.Text)) {
			toks = append(toks, string(tok.Term))
			if tid, ok := x.termIdx[string(tok.Term)]; ok {
				tot += x.post[tid].count()
			}
		}
		x.search(context.Background(), toks, 100, "", nil, p)
	}
	var qs [][]string
	for _, q := range ds.Queries {
		var toks []string
		for _, tok := range an.Analyze([]byte(q.Text)) {
			toks = append(toks, string(tok.Term))
		}
		qs = append(qs, toks)
	}
	var T, B, X int
	for _, q := range qs[:0] {
		a, b, c := essShare(x, q, 100, p)
		T, B, X = T+a, B+b, X+c
	}
	t.Logf("k=100 share of postings essential: block bounds %.3f, exact maxima %.3f", float64(B)/float64(T), float64(X)/float64(T))
	T, B, X = 0, 0, 0
	for _, q := range qs[:0] {
		a, b, c := essShare(x, q, 10, p)
		T, B, X = T+a, B+b, X+c
	}
	t.Logf("k=10 share of postings essential: block bounds %.3f, exact maxima %.3f", float64(B)/float64(T), float64(X)/float64(T))
	f, _ := os.Create("/tmp/kw-bmw/cpu.prof")
	pprof.StartCPUProfile(f)
	c0 := cpuTime()
	for range 3 {
		for _, q := range qs {
			x.search(context.Background(), q, 100, "", nil, p)
		}
	}
	t.Logf("cpu per query k=100: %v", (cpuTime()-c0)/time.Duration(3*len(qs)))
	pprof.StopCPUProfile()
	f.Close()
	t.Logf("postings %d per query %d; ", tot, tot/50)
}

func dbgQuery(t *testing.T, x *impactIndex, toks []string, p bm25Params) {
	st := &searchState{}
	pl, _ := x.plan(toks, "", nil, p, st)
	refs, _ := x.search(context.Background(), toks, 100, "", nil, p)
	theta := refs[len(refs)-1].Score
	t.Logf("query %v: top %.3f theta %.3f", toks, refs[0].Score, theta)
	for _, pt := range pl.terms {
		var c cursor
		c.reset(pt.p, pt.w, 0)
		mx, sum := 0.0, 0.0
		for b := 0; b < c.nb; b++ {
			c.blk = b
			c.ubb = -1
			v := c.blockMax(&pl.sc)
			mx = max(mx, v)
			sum += v
		}
		// actual max
		amx := 0.0
		pt.p.each(func(e posting) {
			amx = max(amx, pt.w*pl.sc.score(uint32(e.tfT), uint32(e.tfX), x.lenT[e.slot], x.lenX[e.slot]))
		})
		t.Logf("  df %6d w %.2f blockmax max %.3f avg %.3f actual max %.3f", pt.p.df, pt.w, mx, sum/float64(c.nb), amx)
	}
}

// essShare: postings of essential terms under final theta, with block-max
// bounds (max over blocks) vs exact per-term maxima.
func essShare(x *impactIndex, toks []string, k int, p bm25Params) (tot, essB, essX int) {
	st := &searchState{}
	pl, _ := x.plan(toks, "", nil, p, st)
	refs, _ := x.search(context.Background(), toks, k, "", nil, p)
	theta := refs[len(refs)-1].Score
	type tm struct {
		b, a float64
		n    int
	}
	var ts []tm
	for _, pt := range pl.terms {
		var c cursor
		c.reset(pt.p, pt.w, 0)
		mx := 0.0
		for b := 0; b < c.nb; b++ {
			c.blk = b
			c.ubb = -1
			mx = max(mx, c.blockMax(&pl.sc))
		}
		amx := 0.0
		pt.p.each(func(e posting) {
			amx = max(amx, pt.w*pl.sc.score(uint32(e.tfT), uint32(e.tfX), x.lenT[e.slot], x.lenX[e.slot]))
		})
		ts = append(ts, tm{mx, amx, pt.p.count()})
		tot += pt.p.count()
	}
	ess := func(get func(tm) float64) int {
		s := slices.Clone(ts)
		slices.SortFunc(s, func(a, b tm) int { return cmp.Compare(get(a), get(b)) })
		sum, n := 0.0, 0
		for _, t := range s {
			if sum+get(t) < theta {
				sum += get(t)
				continue
			}
			n += t.n
		}
		return n
	}
	return tot, ess(func(t tm) float64 { return t.b }), ess(func(t tm) float64 { return t.a })
}
