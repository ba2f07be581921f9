package keyword

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ragd/ragd/spi"
)

// rebuilding reports whether a rebuild runs beside writes.
func (x *impactIndex) rebuilding() bool {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	return x.rb != nil
}

// waitRebuild waits for the running rebuild, if any, to end.
func (x *impactIndex) waitRebuild() {
	x.wmu.Lock()
	rb := x.rb
	x.wmu.Unlock()
	if rb != nil {
		<-rb.done
	}
}

// rebuildModel is the reference of the rebuild tests: the documents the
// index must hold, with their versions, written through apply (the
// store's path: documents analysed by buildDoc).
type rebuildModel struct {
	t    *testing.T
	x    *impactIndex
	docs map[string]refDoc
	ver  map[string]uint64
	seq  uint64
	rng  *rand.Rand
	// onWrite runs once the model holds a write, before the index does.
	onWrite func()
}

func (m *rebuildModel) text(n int) (string, map[string]int) {
	var words []string
	f := map[string]int{}
	for range n {
		w := fmt.Sprintf("w%d", min(m.rng.IntN(40), m.rng.IntN(40))) // skewed: low numbers common
		words = append(words, w)
		f[w]++
	}
	return strings.Join(words, " "), f
}

// doc makes a random document for id.
func (m *rebuildModel) doc(id string) (spi.Document, refDoc) {
	title, tf := m.text(m.rng.IntN(4))
	body, bf := m.text(1 + m.rng.IntN(30))
	d := spi.Document{ID: id, Tenant: []string{"t0", "t1", "t2"}[m.rng.IntN(3)], Title: title, Text: body}
	if m.rng.IntN(2) == 0 {
		d.Metadata = spi.Metadata{"lang": spi.String([]string{"en", "de"}[m.rng.IntN(2)]), "n": spi.Int(int64(m.rng.IntN(5)))}
	}
	return d, refDoc{id: id, tenant: d.Tenant, meta: d.Metadata, title: tf, text: bf}
}

// write applies one batch: puts (each a new document or a new version of
// one) and deletes, in that order, as writeBatch does.
func (m *rebuildModel) write(put []string, del []string) {
	m.t.Helper()
	var docs []spi.Document
	var refs []refDoc
	for _, id := range put {
		d, r := m.doc(id)
		docs, refs = append(docs, d), append(refs, r)
	}
	an := newMapping("en").AnalyzerNamed("en")
	built, lens := buildDocs(docs, an)
	vers := make([][]byte, len(docs))
	gone := map[string]fieldFreqs{}
	for i, d := range docs {
		if f := freqsOf(built[i]); !maps.Equal(f.title, refs[i].title) || !maps.Equal(f.text, refs[i].text) {
			m.t.Fatalf("analysed %q as %v %v, model %v %v", d.Text, f.title, f.text, refs[i].title, refs[i].text)
		}
		if o, ok := m.docs[d.ID]; ok && i%2 == 0 {
			gone[d.ID] = fieldFreqs{title: o.title, text: o.text} // else the index finds the terms
		}
		m.seq++
		vers[i] = binary.BigEndian.AppendUint64([]byte("logtag01"), m.seq)
		m.docs[d.ID], m.ver[d.ID] = refs[i], m.seq
	}
	for _, id := range del {
		if o, ok := m.docs[id]; ok {
			gone[id] = fieldFreqs{title: o.title, text: o.text}
		}
		delete(m.docs, id)
		delete(m.ver, id)
	}
	if m.onWrite != nil {
		m.onWrite()
	}
	m.x.apply(docs, built, lens, vers, del, gone)
}

var rebuildQueries = []struct {
	tokens []string
	tenant string
	filter spi.Filter
}{
	{[]string{"w0", "w7", "w21"}, "", spi.Filter{}},
	{[]string{"w3", "w3", "w30"}, "t1", spi.Filter{}},
	{[]string{"w1", "w12", "w39"}, "", spi.StringFilter(map[string][]string{"lang": {"de"}})},
	{[]string{"w5", "w33"}, "t2", spi.Gte("n", spi.Int(2))},
}

var rebuildParams = bm25Params{k1: 1.2, b: 0.75, titleWeight: 1}

// answers is what each of rebuildQueries must answer now (the formula
// over the model, k = 10).
func (m *rebuildModel) answers() [][]spi.Ref {
	out := make([][]spi.Ref, len(rebuildQueries))
	for i, q := range rebuildQueries {
		out[i] = bruteBM25(m.docs, q.tokens, q.tenant, q.filter, rebuildParams, 10)
	}
	return out
}

func sameRefs(got, want []spi.Ref) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].ID != want[i].ID || math.Abs(got[i].Score-want[i].Score) > 1e-9*want[i].Score {
			return false
		}
	}
	return true
}

// check requires the index to hold exactly the model: searches pruned as
// exhaustive scoring and the formula answer, every model document live
// at its version, and the ids the model deleted gone.
func (m *rebuildModel) check(when string, known []string) {
	m.t.Helper()
	for i, q := range rebuildQueries {
		got, err := m.x.search(context.Background(), q.tokens, 10, q.tenant, q.filter, rebuildParams)
		want := m.x.searchExhaustive(q.tokens, 10, q.tenant, q.filter, rebuildParams)
		if err != nil || !slices.Equal(got, want) || !sameRefs(got, m.answers()[i]) {
			m.t.Fatalf("%s: query %d: pruned %v (%v), exhaustive %v, formula %v", when, i, got, err, want, m.answers()[i])
		}
	}
	for _, id := range known {
		v, live := m.x.versionOf(id)
		want, ok := m.ver[id]
		if live != ok || ok && binary.BigEndian.Uint64(v[8:]) != want {
			m.t.Fatalf("%s: %s live %v version %x; model live %v version %d", when, id, live, v, ok, want)
		}
	}
}

// A rebuild in clustered order runs beside writes and searches, and loses
// and reorders no write: the index is frozen, then, with the rebuild held
// by its hooks at each step (built; between rounds of catch-up, the first
// of 5 writes), writes go on: new documents, new versions of documents
// the frozen view holds and of documents put since, deletes of both, a
// put and a delete in one batch, an id deleted and put again. After
// every write the index answers exactly as the model (searches, pruned =
// exhaustive = formula; each id's version), and a searcher running on
// its own goroutine throughout sees only states the writes produced, in
// their order. After the swap the index holds the model, renumbered, and
// answers as an index built afresh from it. Seed 0's rebuild is due to
// growth; seed 1's is the settle's, which bisects the order.
func TestRebuildBesideWrites(t *testing.T) {
	for seed := range uint64(2) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { rebuildBesideWrites(t, seed) })
	}
}

func rebuildBesideWrites(t *testing.T, seed uint64) {
	x := newImpactIndex()
	x.reorderMin = 1 << 30 // no rebuild while filling
	m := &rebuildModel{t: t, x: x, docs: map[string]refDoc{}, ver: map[string]uint64{}, rng: rand.New(rand.NewPCG(seed, 11))}
	var known []string
	for b := range 15 {
		var put []string
		for i := range 100 {
			put = append(put, fmt.Sprintf("old%04d", b*100+i))
		}
		known = append(known, put...)
		m.write(put, nil)
	}
	m.write(nil, []string{"old0000", "old0001"}) // dead slots in the frozen view

	// The searcher: every answer must be a state the writes made, the
	// states in the order they were made.
	var mu sync.Mutex
	states := [][][]spi.Ref{m.answers()}
	stop := make(chan struct{})
	seen := make(chan error, 1)
	go func() {
		at := 0 // the earliest state the next answer may be
		var err error
		defer func() { seen <- err }()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			qi := n % len(rebuildQueries)
			q := rebuildQueries[qi]
			got, e := x.search(context.Background(), q.tokens, 10, q.tenant, q.filter, rebuildParams)
			if e != nil {
				err = e
				return
			}
			mu.Lock()
			i := at
			for i < len(states) && !sameRefs(got, states[i][qi]) {
				i++
			}
			if i == len(states) {
				err = fmt.Errorf("query %d answered %v: no state from %d of %d", qi, got, at, len(states))
			}
			mu.Unlock()
			if err != nil {
				return
			}
			at = i
		}
	}()
	m.onWrite = func() { // the state a write makes, recorded before the index can answer from it
		mu.Lock()
		states = append(states, m.answers())
		mu.Unlock()
	}

	built, round, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	x.rebuildHook = func(stage string) {
		switch stage {
		case "start":
			return
		case "built":
			built <- struct{}{}
		default:
			round <- struct{}{}
		}
		<-release
	}
	x.roundOps = 5
	x.reorderMin = 500
	var post []string // ids first put after the freeze
	next := 0
	newID := func() string {
		id := fmt.Sprintf("new%04d", next)
		next++
		post = append(post, id)
		known = append(known, id)
		return id
	}
	if seed == 1 {
		x.reorderMin = 1 << 30 // no growth rebuild: the settle's below
	}
	m.write([]string{newID(), "old0100"}, nil) // seed 0: due, frozen after this batch
	if seed == 1 {
		x.wmu.Lock()
		x.startRebuild(reasonSettle, true) // as settleNow does once the settle is due
		x.wmu.Unlock()
	}
	if !x.rebuilding() {
		t.Fatal("no rebuild started")
	}
	x.wmu.Lock()
	done := x.rb.done
	frozen := x.live
	x.wmu.Unlock()
	<-built

	pick := func(ids []string) string { return ids[m.rng.IntN(len(ids))] }
	oldIDs := known[:1500]
	step := func() {
		switch m.rng.IntN(7) {
		case 0:
			m.write([]string{newID(), newID()}, nil)
		case 1:
			m.write([]string{pick(oldIDs)}, nil) // a new version of a frozen document
		case 2:
			m.write(nil, []string{pick(oldIDs), pick(oldIDs)})
		case 3:
			m.write([]string{pick(post)}, nil) // a new version of one put since
		case 4:
			m.write(nil, []string{pick(post)})
		case 5: // a new version of one document and a delete of another in one batch
			m.write([]string{pick(post), newID()}, []string{pick(oldIDs)})
		case 6:
			id := pick(post) // deleted, then put again
			m.write(nil, []string{id})
			m.check("deleted before its new put", []string{id})
			m.write([]string{id}, nil)
		}
		m.check("while the rebuild is held", known)
	}
	for range 25 { // the rebuild built, its catch-up not started
		step()
	}
	x.checkInvariants(t)
	release <- struct{}{}
	rounds := 0
	for finished := false; !finished; {
		select {
		case <-round:
			rounds++
			for range 1 + m.rng.IntN(3) {
				step()
			}
			release <- struct{}{}
		case <-done:
			finished = true
		}
	}
	if rounds < 3 {
		t.Fatalf("the catch-up ran %d rounds between writes, want several", rounds)
	}
	close(stop)
	if err := <-seen; err != nil {
		t.Fatalf("searcher: %v", err)
	}
	x.checkInvariants(t)
	if x.rebuilding() || x.ordered != frozen || x.bisected != (seed == 1) {
		t.Fatalf("after the rebuild: still running %v, ordered %d, bisected %v; want the %d frozen live slots, bisected only by the settle",
			x.rebuilding(), x.ordered, x.bisected, frozen)
	}
	m.check("after the swap", known)
	// The same answers as an index of the model built in one go.
	fresh := newImpactIndex()
	for _, id := range slices.Sorted(maps.Keys(m.docs)) {
		d := m.docs[id]
		fresh.put(id, d.tenant, d.meta, d.lens(), fieldFreqs{title: d.title, text: d.text}, nil)
	}
	for i, q := range rebuildQueries {
		got, _ := x.search(context.Background(), q.tokens, 50, q.tenant, q.filter, rebuildParams)
		want, _ := fresh.search(context.Background(), q.tokens, 50, q.tenant, q.filter, rebuildParams)
		if !slices.Equal(got, want) || len(want) == 0 {
			t.Fatalf("query %d: rebuilt %v, fresh %v", i, got, want)
		}
	}
}

// A rebuild stopped (the store closing) leaves the index as it was and
// its goroutine ended; writes after it are not logged.
func TestStopRebuild(t *testing.T) {
	x := newImpactIndex()
	x.reorderMin = 1 << 30
	m := &rebuildModel{t: t, x: x, docs: map[string]refDoc{}, ver: map[string]uint64{}, rng: rand.New(rand.NewPCG(1, 2))}
	var ids []string
	for i := range 600 {
		ids = append(ids, fmt.Sprintf("d%03d", i))
	}
	m.write(ids, nil)
	built, release := make(chan struct{}), make(chan struct{})
	x.rebuildHook = func(stage string) {
		if stage == "built" {
			built <- struct{}{}
			<-release
		}
	}
	x.reorderMin = 100
	m.write([]string{"d000"}, nil)
	<-built
	m.write(nil, []string{"d001"})
	// The stop comes between the build and the swap: its cancel is made
	// before the hook lets the build go on (released first, the build
	// could swap before stopRebuild cancelled it, as it did at load 7-14).
	x.wmu.Lock()
	rb := x.rb
	x.wmu.Unlock()
	rb.cancel()
	release <- struct{}{}
	x.stopRebuild()
	if x.rebuilding() || x.ordered != 0 {
		t.Fatalf("after stop: running %v, ordered %d", x.rebuilding(), x.ordered)
	}
	x.checkInvariants(t)
	m.check("after stop", ids)
}

// The build reads the frozen view with no lock while writes change the
// live index: nothing orders the writes below after the build (the hook
// only says it has started), so the race detector checks every access of
// the build against them. After the swap the index holds the model.
func TestRebuildBuildsBesideWrites(t *testing.T) {
	x := newImpactIndex()
	x.reorderMin = 1 << 30
	m := &rebuildModel{t: t, x: x, docs: map[string]refDoc{}, ver: map[string]uint64{}, rng: rand.New(rand.NewPCG(7, 8))}
	var known []string
	for b := range 10 {
		var put []string
		for i := range 100 {
			put = append(put, fmt.Sprintf("old%04d", b*100+i))
		}
		known = append(known, put...)
		m.write(put, nil)
	}
	started := make(chan struct{})
	x.rebuildHook = func(stage string) {
		if stage == "start" {
			close(started)
		}
	}
	x.reorderMin = 500
	m.write([]string{"old0000"}, nil)
	<-started
	for i := range 60 { // new documents, new versions, deletes
		id := fmt.Sprintf("new%03d", i)
		known = append(known, id)
		m.write([]string{id, known[m.rng.IntN(1000)]}, []string{known[m.rng.IntN(1000)]})
	}
	x.waitRebuild()
	x.checkInvariants(t)
	if x.ordered == 0 {
		t.Fatal("no rebuild swapped in")
	}
	m.check("after a rebuild beside writes", known)
}
