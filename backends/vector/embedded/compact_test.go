package embedded

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ragd/ragd/spi"
)

// noOnlineCompaction keeps s from compacting its vectors file in the
// background.
func noOnlineCompaction(s *Store) {
	s.compact.mu.Lock()
	s.compact.off = true
	s.compact.mu.Unlock()
}

// waitCompaction waits for the running background compaction, if any,
// and returns the number completed and the last one's error.
func waitCompaction(s *Store) (int, error) {
	s.compact.mu.Lock()
	done := s.compact.done
	s.compact.mu.Unlock()
	if done != nil {
		<-done
	}
	s.compact.mu.Lock()
	defer s.compact.mu.Unlock()
	return s.compact.compactions, s.compact.err
}

// A store that rewrites its documents compacts its vectors file in the
// background once garbage outnumbers the live entries, without a
// restart: the file then holds the live entries only, the documents keep
// their vectors, and a reopen finds the same.
func TestVectorFileCompactsOnline(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(4, 4))
	dir := t.TempDir()
	s := vfOpen(t, dir)
	var docs []spi.Document
	for range 3 { // 4,500 entries after the third, 1,500 live
		docs = vfDocs(r, 1500, 8, "d")
		if err := s.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
		if n, err := waitCompaction(s); err != nil {
			t.Fatal(err)
		} else if n > 0 && entries(s) == 4500 {
			t.Fatal("a compaction ran and left every entry")
		}
	}
	if n, err := waitCompaction(s); n != 1 || err != nil {
		t.Fatalf("%d compactions (%v), want 1", n, err)
	}
	if n := entries(s); n != 1500 {
		t.Fatalf("%d entries after the compaction, want 1500", n)
	}
	sameDocs(t, s, docs)
	if st, err := os.Stat(s.vecs.path); err != nil || st.Size() != 1500*s.vecs.entry {
		t.Fatalf("file %v, %v; want %d bytes", st, err, 1500*s.vecs.entry)
	}
	leftovers, _ := os.ReadDir(dir)
	for _, e := range leftovers {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Fatalf("temporary file %s left", e.Name())
		}
	}
	writeAndReopen(t, s, dir, docs, vfDocs(r, 100, 8, "e"))
}

// The interleavings of a background compaction with searches, writes and
// an IVF build, ordered by hooks:
//
//   - search A takes its transaction and the vectors file, chooses its
//     candidates and stops before rescoring them;
//   - a write rewrites A's candidates (their old vectors become garbage)
//     and starts a compaction, whose state is after that write: the new
//     file will not hold the vectors A's records name;
//   - the compaction stops after copying the live entries, holding no
//     lock, while writes insert, rewrite and delete documents (their
//     entries come after the compaction's state) and an IVF build stops
//     after training;
//   - the compaction installs its file while A still holds the old one:
//     the old file stays open, and A then answers the exact answer of
//     its own state, read from it; the old file is closed once A is done;
//   - the build goes on and installs its index; every later search, Hydrate and a
//     reopen see the documents as written, and the file holds the live
//     entries of the compaction's state and every later one.
func TestCompactionBesideSearchesWritesAndBuild(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 5))
	dir := t.TempDir()
	s, err := Open(ctx, Config{Dir: dir, Dimension: 8, NoSync: true, ANN: ANN{MinRows: 3000}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() }) // after the gates' cleanups open them
	// Free pages, so that the commits below need not grow the memory
	// map while a search holds a read transaction (isolation_test.go).
	filler := vfDocs(r, 40, 8, "filler")
	fillerIDs := make([]string, len(filler))
	for i := range filler {
		filler[i].Text = incompressible(r, 50_000)
		fillerIDs[i] = filler[i].ID
	}
	if err := s.Upsert(ctx, filler); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, fillerIDs); err != nil {
		t.Fatal(err)
	}
	// 40 entries of the fillers, 1,500 documents, 1,460 of them written
	// again: 3,000 entries, 1,500 live; one more starts a compaction.
	model := map[string]spi.Document{}
	docs := vfDocs(r, 1500, 8, "d")
	if err := s.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	again := vfDocs(r, 1460, 8, "d")
	if err := s.Upsert(ctx, again); err != nil {
		t.Fatal(err)
	}
	for _, d := range append(docs, again...) {
		model[d.ID] = d
	}
	if n, _ := waitCompaction(s); n != 0 || entries(s) != 3000 {
		t.Fatalf("%d compactions, %d entries; want none, 3000", n, entries(s))
	}

	req := spi.VectorRequest{Vector: vfDocs(r, 1, 8, "q")[0].Vector, K: 10}
	wantA, err := FullScan(s, req)
	if err != nil || len(wantA) != 10 {
		t.Fatalf("FullScan = %v, %v", wantA, err)
	}

	aStopped, aGo := newGate(t), newGate(t)
	copied, compactGo, installed := newGate(t), newGate(t), newGate(t)
	trained, buildGo := newGate(t), newGate(t)
	var aOnce, copyOnce, trainOnce sync.Once
	s.hooks = testHooks{
		beforeRescore:    func() { aOnce.Do(func() { aStopped.open(); <-aGo.c }) },
		compactCopied:    func() { copyOnce.Do(func() { copied.open(); <-compactGo.c }) },
		compactInstalled: installed.open,
		buildTrained:     func() { trainOnce.Do(func() { trained.open(); <-buildGo.c }) },
	}
	type answer struct {
		refs []spi.Ref
		err  error
	}
	gotA := make(chan answer, 1)
	go func() {
		refs, err := s.Retrieve(ctx, req)
		gotA <- answer{refs, err}
	}()
	<-aStopped.c
	oldGen := s.vecs.cur

	// Rewrite A's candidates (and their neighbours): the compaction's state.
	var rewrite []spi.Document
	for _, ref := range wantA {
		d := model[ref.ID]
		d.Vector = vfDocs(r, 1, 8, "x")[0].Vector
		rewrite = append(rewrite, d)
	}
	if err := s.Upsert(ctx, rewrite); err != nil {
		t.Fatal(err)
	}
	for _, d := range rewrite {
		model[d.ID] = d
	}
	<-copied.c
	liveAtS0 := len(model)

	// Writes while the compaction copies: 1,600 documents start a build
	// (3,000 rows), which stops once trained.
	inserted := vfDocs(r, 1600, 8, "n")
	if err := s.Upsert(ctx, inserted); err != nil {
		t.Fatal(err)
	}
	for _, d := range inserted {
		model[d.ID] = d
	}
	<-trained.c
	rewritten := vfDocs(r, 50, 8, "d")
	if err := s.Upsert(ctx, rewritten); err != nil {
		t.Fatal(err)
	}
	for _, d := range rewritten {
		model[d.ID] = d
	}
	var gone []string
	for i := 100; i < 130; i++ {
		gone = append(gone, fmt.Sprintf("d%05d", i))
	}
	if err := s.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	for _, id := range gone {
		delete(model, id)
	}
	afterS0 := len(inserted) + len(rewritten)

	// The compaction installs its file while A holds the old one.
	compactGo.open()
	<-installed.c
	if s.vecs.cur == oldGen {
		t.Fatal("the compaction installed no new file")
	}
	if n := entries(s); n != liveAtS0+afterS0 {
		t.Fatalf("%d entries in the new file, want %d live at the compaction's state and %d after it", n, liveAtS0, afterS0)
	}
	if _, err := oldGen.f.Stat(); err != nil {
		t.Fatalf("the old file was closed while search A holds it: %v", err)
	}
	// A write to the new file, and A's answer from the old one.
	late := vfDocs(r, 5, 8, "late")
	if err := s.Upsert(ctx, late); err != nil {
		t.Fatal(err)
	}
	for _, d := range late {
		model[d.ID] = d
	}
	aGo.open()
	a := <-gotA
	if a.err != nil || !sameIDsScores(a.refs, wantA) {
		t.Fatalf("search A answered %v, %v; want the answer of its state %v", a.refs, a.err, wantA)
	}
	if _, err := oldGen.f.Stat(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("the old file is still open after its last reader: %v", err)
	}

	buildGo.open()
	if n, err := waitCompaction(s); n != 1 || err != nil {
		t.Fatalf("%d compactions, %v", n, err)
	}
	WaitBuild(s)
	if s.idx.ivf == nil {
		t.Fatal("the build installed no index")
	}
	if err := checkVectorFile(s.vecs); err != nil {
		t.Fatal(err)
	}
	checkModel(t, s, model, r)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, Config{Dir: dir, Dimension: 8, NoSync: true, ANN: ANN{MinRows: -1}})
	if err != nil {
		t.Fatal(err)
	}
	checkModel(t, s, model, r)
}

// A compaction that Close stops while it copies leaves the file as it
// was and no temporary file; the store reopens with every document.
func TestCloseStopsCompaction(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(6, 6))
	dir := t.TempDir()
	s, err := Open(ctx, Config{Dir: dir, Dimension: 8, NoSync: true, ANN: ANN{MinRows: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	copied, resume := newGate(t), newGate(t)
	var once sync.Once
	s.hooks.compactCopied = func() { once.Do(func() { copied.open(); <-resume.c }) }
	var docs []spi.Document
	for range 3 {
		docs = vfDocs(r, 1500, 8, "d")
		if err := s.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	<-copied.c
	closed := make(chan error)
	go func() { closed <- s.Close() }()
	// Close cancels the compaction first, then waits for it.
	for s.compact.ctx.Err() == nil {
		runtime.Gosched()
	}
	resume.open()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if n, err := waitCompaction(s); n != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("%d compactions, %v; want none, cancelled", n, err)
	}
	names, _ := os.ReadDir(dir)
	for _, e := range names {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Fatalf("temporary file %s left", e.Name())
		}
	}
	s = vfOpen(t, dir)
	sameDocs(t, s, docs)
}

// gate is a channel closed once, by open or by the test's cleanup, so
// that a failing test does not leave a hook waiting (and Close with it).
type gate struct {
	once sync.Once
	c    chan struct{}
}

func newGate(t *testing.T) *gate {
	g := &gate{c: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.c) }) }

func sameIDsScores(a, b []spi.Ref) bool {
	return slices.EqualFunc(a, b, func(x, y spi.Ref) bool { return x.ID == y.ID && x.Score == y.Score })
}

// checkModel checks that s holds exactly model (Hydrate, vectors bit for
// bit) and that searches answer as a full scan does.
func checkModel(t *testing.T, s *Store, model map[string]spi.Document, r *rand.Rand) {
	t.Helper()
	var docs []spi.Document
	for _, d := range model {
		docs = append(docs, d)
	}
	slices.SortFunc(docs, func(a, b spi.Document) int { return strings.Compare(a.ID, b.ID) })
	sameDocs(t, s, docs)
	for i := range 20 {
		req := spi.VectorRequest{Vector: vfDocs(r, 1, 8, "q")[0].Vector, K: 10}
		if i%2 == 1 {
			req.Filter = spi.StringFilter(map[string][]string{"k": {"1"}})
		}
		got, err := s.Retrieve(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		want, err := FullScan(s, req)
		if err != nil || !sameIDsScores(got, want) {
			t.Fatalf("Retrieve = %v, full scan %v (%v)", got, want, err)
		}
	}
}

// A reader that took the vectors file just before a compaction installed
// another, and began its transaction after a commit wrote to the new
// one, would find that commit's vectors in neither: it must take the
// transaction again with the new file (readTx). Hooks stop a Hydrate
// between the two while the compaction installs and a rewrite commits.
func TestReaderBetweenFileAndTransaction(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 7))
	s, err := Open(ctx, Config{Dir: t.TempDir(), Dimension: 8, NoSync: true, ANN: ANN{MinRows: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	noOnlineCompaction(s)
	var docs []spi.Document
	for range 3 {
		docs = vfDocs(r, 1500, 8, "d")
		if err := s.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	acquired, resume := newGate(t), newGate(t)
	var once sync.Once
	s.hooks.readAcquired = func() { once.Do(func() { acquired.open(); <-resume.c }) }
	type answer struct {
		docs []spi.Document
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		d, _, err := s.Hydrate(ctx, []string{"d00007"})
		got <- answer{d, err}
	}()
	<-acquired.c
	old := s.vecs.cur
	s.compact.mu.Lock()
	s.compact.off = false
	s.compact.mu.Unlock()
	d := docs[7]
	d.Vector = vfDocs(r, 1, 8, "x")[0].Vector
	if err := s.Upsert(ctx, []spi.Document{d}); err != nil { // starts the compaction
		t.Fatal(err)
	}
	if n, err := waitCompaction(s); n != 1 || err != nil || s.vecs.cur == old {
		t.Fatalf("%d compactions, %v", n, err)
	}
	d.Vector = vfDocs(r, 1, 8, "y")[0].Vector
	if err := s.Upsert(ctx, []spi.Document{d}); err != nil { // to the new file
		t.Fatal(err)
	}
	resume.open()
	a := <-got
	if a.err != nil || len(a.docs) != 1 || !slices.Equal(a.docs[0].Vector, d.Vector) {
		t.Fatalf("Hydrate = %v, %v; want the last vector", a.docs, a.err)
	}
}
