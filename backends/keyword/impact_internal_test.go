package keyword

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/document"

	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

// refDoc is a document of the reference model.
type refDoc struct {
	id, tenant  string
	meta        spi.Metadata
	title, text map[string]int
}

func (d refDoc) lens() docLens {
	sum := func(m map[string]int) int {
		n := 0
		for _, v := range m {
			n += v
		}
		return n
	}
	return docLens{title: sum(d.title), text: sum(d.text)}
}

// bruteBM25 scores every live document directly from the formula of
// impact.go: a reference written without postings. With a tenant, the
// collection is that tenant's documents.
func bruteBM25(all map[string]refDoc, tokens []string, tenant string, filter spi.Filter, p bm25Params, k int) []spi.Ref {
	docs := all
	if tenant != "" {
		docs = map[string]refDoc{}
		for id, d := range all {
			if d.tenant == tenant {
				docs[id] = d
			}
		}
	}
	n := float64(len(docs))
	var totT, totX float64
	for _, d := range docs {
		l := d.lens()
		totT += float64(l.title)
		totX += float64(l.text)
	}
	avgT, avgX := totT/n, totX/n
	qtf := map[string]float64{}
	for _, t := range tokens {
		qtf[t]++
	}
	dfs := map[string]float64{}
	for term := range qtf {
		for _, o := range docs {
			if o.title[term] > 0 || o.text[term] > 0 {
				dfs[term]++
			}
		}
	}
	var out []spi.Ref
	for _, d := range docs {
		if (tenant != "" && d.tenant != tenant) || !filter.Match(d.meta) {
			continue
		}
		l := d.lens()
		var s float64
		for term, q := range qtf {
			df := dfs[term]
			if df == 0 {
				continue
			}
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			if f := float64(d.title[term]); f > 0 && avgT > 0 {
				s += q * p.titleWeight * idf * f / (f + p.k1*(1-p.b+p.b*float64(l.title)/avgT))
			}
			if f := float64(d.text[term]); f > 0 && avgX > 0 {
				s += q * idf * f / (f + p.k1*(1-p.b+p.b*float64(l.text)/avgX))
			}
		}
		if s > 0 {
			out = append(out, spi.Ref{ID: d.id, Score: s, Source: spi.SourceKeyword})
		}
	}
	slices.SortFunc(out, func(a, b spi.Ref) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return cmpString(a.ID, b.ID)
	})
	return out[:min(k, len(out))]
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// The impact index answers exactly as the formula does, through puts,
// replacements, deletes and compactions, with tenants and filters.
func TestImpactIndexMatchesTheFormula(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 40)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%d", i)
	}
	freqs := func(n int) map[string]int {
		m := map[string]int{}
		for range n {
			m[vocab[rng.IntN(len(vocab))]]++
		}
		return m
	}
	x := newImpactIndex()
	model := map[string]refDoc{}
	p := bm25Params{k1: 1.2, b: 0.75, titleWeight: 1.5}
	check := func(step int) {
		t.Helper()
		x.checkInvariants(t)
		for q := range 20 {
			tokens := []string{vocab[rng.IntN(len(vocab))], vocab[rng.IntN(len(vocab))], vocab[rng.IntN(8)], "unknown"}
			tenant, filter := "", spi.Filter{}
			switch q % 4 {
			case 1:
				tenant = "t1"
			case 2:
				filter = spi.StringFilter(map[string][]string{"lang": {"en"}})
			case 3:
				// Typed filters against typed metadata: the bitmaps'
				// answer equals spi.Filter.Match by brute force.
				filter = spitest.RandomFilter(rng)
				if q%8 == 7 {
					tenant = "t2"
				}
			}
			got, err := x.search(context.Background(), tokens, 10, tenant, filter, p)
			if err != nil {
				t.Fatal(err)
			}
			all := bruteBM25(model, tokens, tenant, filter, p, len(model))
			want := all[:min(10, len(all))]
			if len(got) != len(want) {
				t.Fatalf("step %d query %v: %d refs, want %d", step, tokens, len(got), len(want))
			}
			for i := range got {
				if math.Abs(got[i].Score-want[i].Score) > 1e-9*want[i].Score {
					t.Fatalf("step %d query %v: ref %d = %+v, want %+v", step, tokens, i, got[i], want[i])
				}
				// The same score summed in another order can differ in its
				// last bit: then any order of the tied ids is right.
				if got[i].ID != want[i].ID && !slices.ContainsFunc(all, func(r spi.Ref) bool {
					return r.ID == got[i].ID && math.Abs(r.Score-got[i].Score) <= 1e-9*r.Score
				}) {
					t.Fatalf("step %d query %v: ref %d = %+v, want %+v", step, tokens, i, got[i], want[i])
				}
			}
		}
	}
	for step := range 3000 {
		id := fmt.Sprintf("d%03d", rng.IntN(300))
		if rng.IntN(4) == 0 {
			x.remove(id, nil)
			delete(model, id)
		} else {
			d := refDoc{id: id, tenant: []string{"", "t1", "t2"}[rng.IntN(3)], title: freqs(rng.IntN(4)), text: freqs(1 + rng.IntN(30))}
			if rng.IntN(2) == 0 {
				d.meta = spi.Metadata{"lang": spi.String([]string{"en", "de"}[rng.IntN(2)])}
			}
			if rng.IntN(3) > 0 {
				d.meta = spitest.TypedMetadata(rng, rng.IntN(300), d.meta)
			}
			x.put(d.id, d.tenant, d.meta, d.lens(), fieldFreqs{title: d.title, text: d.text}, nil)
			model[id] = d
		}
		if step%500 == 499 {
			check(step)
		}
	}
	if x.live != len(model) {
		t.Fatalf("live %d, model %d", x.live, len(model))
	}
}

func TestImpactIndexEmptyAndCancelled(t *testing.T) {
	x := newImpactIndex()
	p := bm25Params{k1: 1.2, b: 0.75, titleWeight: 1}
	if refs, err := x.search(context.Background(), []string{"a"}, 5, "", spi.Filter{}, p); err != nil || len(refs) != 0 || refs == nil {
		t.Fatalf("empty index: %v, %v", refs, err)
	}
	x.put("a", "", nil, docLens{text: 1}, fieldFreqs{text: map[string]int{"a": 1}}, nil)
	if refs, _ := x.search(context.Background(), []string{"a"}, 5, "nobody", spi.Filter{}, p); len(refs) != 0 {
		t.Fatalf("unknown tenant: %v", refs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	many := make([]string, 16)
	for i := range many {
		many[i] = "a"
	}
	if _, err := x.search(ctx, many, 5, "", spi.Filter{}, p); err != nil {
		t.Fatalf("one distinct term needs no cancellation check: %v", err)
	}
}

// Loaded from a bleve index, the postings equal those put document by
// document from the same analysis.
func TestImpactIndexLoadsFromBleve(t *testing.T) {
	b, err := Open(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	docs := []spi.Document{
		{ID: "a", Title: "Shock waves", Text: "The shock wave of a blunt body in supersonic flow.", Tenant: "t1"},
		{ID: "b", Title: "Boundary layers", Text: "Laminar boundary layer flow, boundary layer transition.", Metadata: spi.Strings(map[string]string{"lang": "en"})},
		{ID: "c", Title: "Flutter", Text: "Panel flutter at supersonic speeds; shock interaction."},
		{ID: "d", Text: "Gone soon."},
	}
	ctx := context.Background()
	if err := b.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, []string{"d"}); err != nil {
		t.Fatal(err)
	}
	loaded, err := loadImpact(ctx, b.st.idx)
	if err != nil {
		t.Fatal(err)
	}
	put := newImpactIndex()
	for _, d := range docs[:3] {
		built, lens := buildDoc(d, b.st.an)
		put.put(d.ID, d.Tenant, d.Metadata, lens, freqsOf(built), nil)
	}
	loaded.checkInvariants(t)
	if loaded.live != 3 || loaded.totT != put.totT || loaded.totX != put.totX {
		t.Fatalf("loaded: live %d, lengths %d/%d; put: %d/%d", loaded.live, loaded.totT, loaded.totX, put.totT, put.totX)
	}
	p := bm25Params{k1: 1.2, b: 0.75, titleWeight: 1}
	for _, q := range [][]string{{"shock"}, {"boundari", "layer", "flow"}, {"supersonic", "flutter", "flutter"}} {
		got, err1 := loaded.search(ctx, q, 10, "", spi.Filter{}, p)
		want, err2 := put.search(ctx, q, 10, "", spi.Filter{}, p)
		if err1 != nil || err2 != nil || !slices.Equal(got, want) || len(want) == 0 {
			t.Fatalf("query %v: loaded %v (%v), put %v (%v)", q, got, err1, want, err2)
		}
	}
	if got, _ := loaded.search(ctx, []string{"shock"}, 10, "t1", spi.Filter{}, p); len(got) != 1 || got[0].ID != "a" {
		t.Fatalf("tenant t1: %v", got)
	}
	if got, _ := loaded.search(ctx, []string{"flow"}, 10, "", spi.StringFilter(map[string][]string{"lang": {"en"}}), p); len(got) != 1 || got[0].ID != "b" {
		t.Fatalf("filter: %v", got)
	}
}

// A compaction of the postings stops neither searches nor writes: while
// its copy is built (the rebuild held by its hook once built), searches
// answer as the index stands, pruned as exhaustive scoring answers, and
// writes go on; after the swap the rebuilt blocks and bounds answer the
// same, the writes made meanwhile included.
func TestCompactionDoesNotBlockSearches(t *testing.T) {
	x := newImpactIndex()
	for i := range 4000 {
		f := fieldFreqs{text: map[string]int{"common": 1 + i%4, fmt.Sprintf("w%d", i%10): 1 + i%3}}
		x.put(fmt.Sprintf("d%04d", i), "", nil, docLens{text: 2 + i%37}, f, nil)
	}
	x.waitRebuild() // the clustered order of the first 4000
	p := bm25Params{k1: 1.2, b: 0.75, titleWeight: 1}
	same := func(when string) {
		for _, q := range [][]string{{"w3"}, {"common", "w3"}, {"common", "w1", "w2"}} {
			for _, k := range []int{1, 10, 1000} {
				got, err := x.search(context.Background(), q, k, "", spi.Filter{}, p)
				if want := x.searchExhaustive(q, k, "", spi.Filter{}, p); err != nil || !slices.Equal(got, want) || len(got) == 0 {
					t.Errorf("%s: %v k=%d: pruned %v (%v), exhaustive %v", when, q, k, got[:min(3, len(got))], err, want[:min(3, len(want))])
				}
			}
		}
	}
	built, release := make(chan struct{}), make(chan struct{})
	held := false
	x.rebuildHook = func(stage string) {
		if stage == "built" && !held { // the first rebuild, once built
			held = true
			built <- struct{}{}
			<-release
		}
	}
	for i := range 2000 { // a compaction starts after 1024: the rest go on beside it
		x.remove(fmt.Sprintf("d%04d", i), nil)
	}
	<-built // the compaction has built its copy and waits
	same("during a compaction")
	for i := range 100 { // writes go on
		f := fieldFreqs{text: map[string]int{"w3": 9}}
		x.put(fmt.Sprintf("n%03d", i), "", nil, docLens{text: 9}, f, nil)
	}
	same("during a compaction, after writes")
	close(release)
	x.waitRebuild()
	x.checkInvariants(t)
	same("after the compaction")
	refs, err := x.search(context.Background(), []string{"w3"}, 1000, "", spi.Filter{}, p)
	if err != nil || len(refs) != 300 || x.dead >= 1024 || x.ordered == 0 {
		t.Fatalf("after the compaction: %d refs for w3, %v, %d dead slots; want 300 and the dead slots dropped", len(refs), err, x.dead)
	}
}

// A search answers from one state while a write runs: a write arriving
// while a search is between windows waits for it, so the search answers
// as before the write (which deletes the best documents, in slots the
// search has not reached, and adds documents that seal new blocks of the
// query's terms with higher bounds), and the next search sees all of it.
func TestSearchAnswersOneStateWhileAWriteWaits(t *testing.T) {
	x := newImpactIndex()
	for i := range 3000 {
		f := fieldFreqs{text: map[string]int{"alpha": 1, "beta": 1 + i%2, fmt.Sprintf("w%d", i%50): 1}}
		x.put(fmt.Sprintf("d%04d", i), "", nil, docLens{text: 20 + i%30}, f, nil)
	}
	for i := range 5 {
		f := fieldFreqs{text: map[string]int{"alpha": 3, "beta": 3, "w7": 3}}
		x.put(fmt.Sprintf("top%d", i), "", nil, docLens{text: 12}, f, nil)
	}
	p := bm25Params{k1: 1.2, b: 0.75, titleWeight: 1}
	q := []string{"alpha", "beta", "w7"}
	before := x.searchExhaustive(q, 10, "", spi.Filter{}, p)
	if before[0].ID != "top0" {
		t.Fatalf("the best document is %v, want top0", before[0])
	}
	writing := make(chan struct{})
	wrote := make(chan struct{})
	x.searchHook = func() {
		x.searchHook = nil
		go func() {
			defer close(wrote)
			x.writeHook = func() { close(writing) }
			for i := range 5 {
				x.remove(fmt.Sprintf("top%d", i), nil)
				x.writeHook = nil
			}
			for i := range 300 {
				f := fieldFreqs{text: map[string]int{"alpha": 5, "beta": 5, "w7": 5}}
				x.put(fmt.Sprintf("new%03d", i), "", nil, docLens{text: 15}, f, nil)
			}
		}()
		<-writing // the writer is at the lock
	}
	got, err := x.search(context.Background(), q, 10, "", spi.Filter{}, p)
	if err != nil || !slices.Equal(got, before) {
		t.Fatalf("search while a write waited: %v (%v), want the state before it %v", got, err, before)
	}
	<-wrote
	x.checkInvariants(t)
	got, _ = x.search(context.Background(), q, 10, "", spi.Filter{}, p)
	if after := x.searchExhaustive(q, 10, "", spi.Filter{}, p); !slices.Equal(got, after) || !strings.HasPrefix(got[0].ID, "new") {
		t.Fatalf("after the write: %v, exhaustive %v", got, after)
	}
}

// A stored field the postings cannot decode fails the load (the index is
// damaged: OpenOrRebuild rebuilds it) instead of loading the document
// with no metadata or zero lengths, which would filter and score it wrong.
func TestLoadImpactRejectsUndecodableFields(t *testing.T) {
	for name, field := range map[string]struct{ name, value string }{
		"metadata": {fieldMetaJSON, `{"lang":`},
		"lengths":  {fieldLens, "seven 3"},
	} {
		t.Run(name, func(t *testing.T) {
			idx, err := createIndex(t.TempDir()+"/idx", Config{Analyzer: "en"}.withDefaults())
			if err != nil {
				t.Fatal(err)
			}
			defer idx.Close()
			an := idx.Mapping().AnalyzerNamed("en")
			good, _ := buildDoc(spi.Document{ID: "good", Text: "fine", Metadata: spi.Strings(map[string]string{"lang": "en"})}, an)
			bad := document.NewDocument("bad")
			bad.AddField(document.NewTextFieldCustom(fieldText, nil, []byte("broken"), optsText, an))
			bad.AddField(document.NewTextFieldCustom(field.name, nil, []byte(field.value), optsStored, nil))
			batch := idx.NewBatch()
			for _, d := range []*document.Document{good, bad} {
				if err := batch.IndexAdvanced(d); err != nil {
					t.Fatal(err)
				}
			}
			if err := idx.Batch(batch); err != nil {
				t.Fatal(err)
			}
			if _, err := loadImpact(context.Background(), idx); err == nil || !strings.Contains(err.Error(), `"bad"`) {
				t.Fatalf("loadImpact = %v, want an error naming document bad", err)
			}
		})
	}
}

// A done context stops a long search, by one worker or by several (each
// checks it every 64 windows, across its ranges).
func TestImpactSearchStopsWhenCancelled(t *testing.T) {
	x := newImpactIndex()
	x.rangeMin = 1024
	x.minWin = 1 // windows at the blocks' ends: 20,000 slots make more than 64
	for i := range 20000 {
		f := fieldFreqs{text: map[string]int{"a": 1 + i%7, "b": 1 + i%5}}
		x.put(fmt.Sprintf("d%05d", i), "", nil, docLens{text: 3 + i%11}, f, nil)
	}
	p := bm25Params{k1: 1.2, b: 0.75, titleWeight: 1}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, parallel := range []int{math.MaxInt, 64} {
		x.parallelMin = parallel
		if refs, err := x.search(context.Background(), []string{"a", "b"}, 10, "", spi.Filter{}, p); err != nil || len(refs) != 10 {
			t.Fatalf("parallelMin %d: %d refs, %v", parallel, len(refs), err)
		}
		if _, err := x.search(ctx, []string{"a", "b"}, 10, "", spi.Filter{}, p); !errors.Is(err, context.Canceled) {
			t.Fatalf("parallelMin %d: err = %v, want context.Canceled", parallel, err)
		}
	}
}

// The load's map from internal document numbers to slots answers alike in
// its array and beyond it, and knows no number it was not given.
func TestSlotTable(t *testing.T) {
	tab := newSlotTable(2) // the array below 4·2 + 1024
	set := map[uint64]int32{0: 0, 1: 1, 5: 2, 1031: 3, 1032: 4, 1 << 40: 5, 7: 6}
	for k, s := range set {
		tab.set(k, s)
	}
	for k := range uint64(1100) {
		s, ok := tab.get(k)
		want, wok := set[k]
		if s != want && wok || ok != wok {
			t.Fatalf("get(%d) = %d, %v; want %d, %v", k, s, ok, want, wok)
		}
	}
	if s, ok := tab.get(1 << 40); !ok || s != 5 {
		t.Fatalf("get(1<<40) = %d, %v; want 5, true", s, ok)
	}
	if _, ok := tab.get(1<<40 + 1); ok {
		t.Fatal("get of a number never set found a slot")
	}
	if len(tab.sparse) != 2 || len(tab.dense) != 1032 {
		t.Fatalf("%d numbers in the map and %d in the array; want 1032 and 1<<40 in the map, 0..1031 in the array", len(tab.sparse), len(tab.dense))
	}
}

// frontierBySort is frontier as first written (points as structs sorted
// by a comparison, thinned alike), kept as the oracle of the keyed sort on
// the stack.
func frontierBySort(ps []posting, tb bound, lens []docLen) bound {
	b := bound{tT: tb.tT, lT: tb.lT}
	var pts []point
	for _, e := range ps {
		if e.tfX > 0 {
			pts = append(pts, point{e.tfX, floor16(lens[e.slot].x)})
		}
	}
	slices.SortFunc(pts, func(a, c point) int {
		if a.len != c.len {
			return int(a.len) - int(c.len)
		}
		return int(c.tf) - int(a.tf)
	})
	var fr []point
	for _, q := range pts {
		if len(fr) == 0 || q.tf > fr[len(fr)-1].tf {
			fr = append(fr, q)
		}
	}
	ref := 1.0
	if len(pts) > 0 {
		ref = max(1, float64(pts[len(pts)/2].len))
	}
	copy(b.x[:], thin(fr, ref))
	return b
}

// A block's bound is the same whichever way its points are sorted: random
// blocks with frequencies and lengths from tiny to past 16 bits, repeated
// points, postings with no text frequency.
func TestFrontierEqualsSortedScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 25))
	for round := range 20000 {
		n := 1 + rng.IntN(blockSize)
		lens := make([]docLen, n)
		ps := make([]posting, n)
		maxTf, maxLen := []int{1, 3, 20, 70000}[rng.IntN(4)], []int{1, 5, 300, 100000}[rng.IntN(4)]
		for i := range ps {
			lens[i] = docLen{t: uint32(rng.IntN(50)), x: uint32(rng.IntN(maxLen))}
			ps[i] = posting{slot: uint32(i), tfX: uint16(min(rng.IntN(maxTf+1), 0xffff))}
			if rng.IntN(8) == 0 {
				ps[i].tfX = 0
			}
		}
		tb := bound{tT: uint16(rng.IntN(4)), lT: uint16(rng.IntN(9))}
		if got, want := frontier(ps, tb, lens), frontierBySort(ps, tb, lens); got != want {
			t.Fatalf("round %d: frontier %+v, by sort %+v", round, got, want)
		}
	}
}
