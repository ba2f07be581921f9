package embedded_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/vector/embedded"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

// annDim is the dimension of the IVF tests' vectors: clustered, so that
// lists mean something.
const annDim = 16

type annData struct {
	r       *rand.Rand
	centres [][]float32
	next    int
}

func newANNData(seed uint64) *annData {
	d := &annData{r: rand.New(rand.NewPCG(seed, 3))}
	for range 24 {
		d.centres = append(d.centres, randVec(d.r, annDim))
	}
	return d
}

// vec is a point near a random centre.
func (d *annData) vec() []float32 {
	c := d.centres[d.r.IntN(len(d.centres))]
	v := make([]float32, annDim)
	for i := range v {
		v[i] = c[i] + 0.35*float32(d.r.NormFloat64())
	}
	return v
}

// docs makes n new documents in three tenants, with a metadata key of
// three values, a rarer one and a number of ten values.
func (d *annData) docs(n int) []spi.Document {
	out := make([]spi.Document, n)
	for i := range out {
		d.next++
		md := spi.Metadata{"c": spi.String(fmt.Sprint(d.r.IntN(3))), "n": spi.Int(int64(d.r.IntN(10)))}
		if d.r.IntN(10) == 0 {
			md["rare"] = spi.String("yes")
		}
		out[i] = spi.Document{ID: fmt.Sprintf("d%05d", d.next), Tenant: fmt.Sprint("t", d.r.IntN(3)), Metadata: md, Vector: d.vec()}
	}
	return out
}

// annRequests are the searches the IVF tests compare with FullScan.
func annRequests(d *annData, n int) []spi.VectorRequest {
	var reqs []spi.VectorRequest
	for i := range n {
		req := spi.VectorRequest{Vector: d.vec(), K: []int{1, 10, 50}[i%3]}
		switch i % 6 {
		case 1:
			req.Tenant = "t1"
		case 2:
			req.Filter = spi.StringFilter(map[string][]string{"c": {"0", "2"}})
		case 3:
			req.Tenant, req.Filter = "t2", spi.StringFilter(map[string][]string{"rare": {"yes"}})
		case 4:
			req.Filter = spi.And(spi.Gte("n", spi.Int(3)), spi.Ne("c", spi.String("1")))
		case 5:
			req.Tenant, req.Filter = "t0", spi.Or(spi.Lt("n", spi.Float(1.5)), spi.Exists("rare"))
		}
		reqs = append(reqs, req)
	}
	return reqs
}

func openANN(t *testing.T, dir string, probe float64) *embedded.Store {
	t.Helper()
	return mustOpen(t, embedded.Config{Dir: dir, Dimension: annDim, NoSync: true, ANN: embedded.ANN{MinRows: 1000, Probe: probe, IdleRegroup: -1}})
}

// mustBuilt waits for the store's build and fails unless it searches an
// IVF whose invariants hold.
func mustBuilt(t *testing.T, s *embedded.Store) int {
	t.Helper()
	builds, ivf := embedded.WaitBuild(s)
	if !ivf {
		t.Fatalf("no IVF after %d builds", builds)
	}
	if err := embedded.CheckIndex(s); err != nil {
		t.Fatal(err)
	}
	return builds
}

// sameAsFullScan fails unless every request answers what FullScan does.
func sameAsFullScan(t *testing.T, s *embedded.Store, reqs []spi.VectorRequest) {
	t.Helper()
	for _, req := range reqs {
		got, err := s.Retrieve(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		want, err := embedded.FullScan(s, req)
		if err != nil {
			t.Fatal(err)
		}
		if !sameRefs(got, want) {
			t.Fatalf("k=%d tenant=%q filter=%v: %v, want %v", req.K, req.Tenant, req.Filter, got, want)
		}
	}
}

// An IVF search that probes every list is the exact search: the lists
// hold every row once, filtered and tenant searches included; and it
// stays so across a reopen (the IVF is rebuilt from the record).
func TestIVFEveryListIsExact(t *testing.T) {
	ctx := context.Background()
	d := newANNData(1)
	dir := t.TempDir()
	s := openANN(t, dir, 1e6)
	if err := s.Upsert(ctx, d.docs(3000)); err != nil {
		t.Fatal(err)
	}
	mustBuilt(t, s)
	sameAsFullScan(t, s, annRequests(d, 60))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openANN(t, dir, 1e6)
	mustBuilt(t, s)
	sameAsFullScan(t, s, annRequests(d, 30))
}

// Writes while a build runs (after the centroids are trained, and
// between two chunks of assigned rows: the hooks stop the build there)
// are in the IVF it installs: inserts, replaces with another vector and
// tenant, deletes that move rows the build has and has not assigned.
func TestIVFBuildBesideWrites(t *testing.T) {
	ctx := context.Background()
	d := newANNData(3)
	s := openANN(t, t.TempDir(), 1e6)
	docs := d.docs(5000)
	writes := func(step string) {
		// Inserts.
		if err := s.Upsert(ctx, d.docs(300)); err != nil {
			t.Errorf("%s: %v", step, err)
		}
		// Replaces: another vector, another tenant.
		var re []spi.Document
		for i := range 200 {
			doc := docs[d.r.IntN(len(docs))]
			doc.Vector, doc.Tenant = d.vec(), fmt.Sprint("t", i%3)
			re = append(re, doc)
		}
		if err := s.Upsert(ctx, re); err != nil {
			t.Errorf("%s: %v", step, err)
		}
		// Deletes, of early and of late rows.
		var gone []string
		for range 300 {
			gone = append(gone, docs[d.r.IntN(len(docs))].ID)
		}
		if err := s.Delete(ctx, gone); err != nil {
			t.Errorf("%s: %v", step, err)
		}
		if err := embedded.CheckIndex(s); err != nil {
			t.Errorf("%s: %v", step, err)
		}
	}
	var trained, chunk atomic.Int32
	embedded.SetHooks(s, embedded.Hooks{
		BuildTrained: func() {
			if trained.Add(1) == 1 {
				writes("after training")
			}
		},
		BuildChunk: func() {
			if chunk.Add(1) == 1 {
				writes("between chunks")
			}
		},
	})
	if err := s.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	mustBuilt(t, s)
	if trained.Load() == 0 || chunk.Load() == 0 {
		t.Fatalf("the build stopped %d times after training and %d between chunks; the test needs both", trained.Load(), chunk.Load())
	}
	sameAsFullScan(t, s, annRequests(d, 60))
}

// Searches running while a build trains, assigns and installs its IVF
// (renumbering every row) answer what the exact search does throughout.
func TestIVFSearchesDuringBuild(t *testing.T) {
	ctx := context.Background()
	d := newANNData(4)
	s := openANN(t, t.TempDir(), 1e6)
	reqs := annRequests(d, 20)
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	started := make(chan struct{})
	var once sync.Once
	embedded.SetHooks(s, embedded.Hooks{BuildTrained: func() { once.Do(func() { close(started) }) }})
	if err := s.Upsert(ctx, d.docs(5000)); err != nil {
		t.Fatal(err)
	}
	want := make([][]spi.Ref, len(reqs))
	for i, req := range reqs {
		var err error
		if want[i], err = embedded.FullScan(s, req); err != nil {
			t.Fatal(err)
		}
	}
	<-started
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load() || n == 0; n++ {
				i := n % len(reqs)
				got, err := s.Retrieve(ctx, reqs[i])
				if err == nil && !sameRefs(got, want[i]) {
					err = fmt.Errorf("during the build, request %d answered %v, want %v", i, got, want[i])
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	mustBuilt(t, s)
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A search stopped between choosing its candidates (from the rows as
// numbered before the build) and rescoring them, while the build installs
// its IVF and renumbers every row, answers what the exact search does: its
// candidates are ids, not rows. The hooks hold the build until the search
// is stopped, and the search until the build is installed.
func TestIVFInstallBetweenCandidatesAndRescore(t *testing.T) {
	ctx := context.Background()
	d := newANNData(6)
	s := openANN(t, t.TempDir(), 1e6)
	parked, resume := make(chan struct{}), make(chan struct{})
	var park, hold sync.Once
	embedded.SetHooks(s, embedded.Hooks{
		BeforeRescore: func() { park.Do(func() { close(parked); <-resume }) },
		BuildTrained:  func() { hold.Do(func() { <-parked }) },
	})
	if err := s.Upsert(ctx, d.docs(3000)); err != nil {
		t.Fatal(err)
	}
	req := spi.VectorRequest{Vector: d.vec(), K: 20, Tenant: "t1", Filter: spi.StringFilter(map[string][]string{"c": {"0", "1"}})}
	want, err := embedded.FullScan(s, req)
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		refs []spi.Ref
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		refs, err := s.Retrieve(ctx, req)
		got <- answer{refs, err}
	}()
	<-parked
	if _, ivf := embedded.WaitBuild(s); !ivf {
		t.Fatal("the build did not install its IVF while the search was stopped")
	}
	close(resume)
	ans := <-got
	if ans.err != nil || !sameRefs(ans.refs, want) {
		t.Fatalf("the search answered %v, %v; want %v", ans.refs, ans.err, want)
	}
	if err := embedded.CheckIndex(s); err != nil {
		t.Fatal(err)
	}
}

// Close while a build runs stops it: Close returns, the build goroutine
// ends (goleak checks), and the store reopens and builds again.
func TestIVFCloseDuringBuild(t *testing.T) {
	ctx := context.Background()
	d := newANNData(5)
	dir := t.TempDir()
	s := openANN(t, dir, 1e6)
	trained, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	embedded.SetHooks(s, embedded.Hooks{BuildTrained: func() { once.Do(func() { close(trained); <-release }) }})
	if err := s.Upsert(ctx, d.docs(3000)); err != nil {
		t.Fatal(err)
	}
	<-trained
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// The build goes on only once Close has cancelled it: released
	// before, it could finish (and install) ahead of the cancel.
	for !embedded.BuildsStopped(s) {
		runtime.Gosched()
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, ivf := embedded.WaitBuild(s); ivf {
		t.Fatal("a build stopped by Close installed its IVF")
	}
	s = openANN(t, dir, 1e6)
	mustBuilt(t, s)
	sameAsFullScan(t, s, annRequests(d, 20))
}

// The contract suite, with the IVF built from the first document on and
// every list probed, so that it owes the exact answers: the IVF must
// follow every write (WriteWhileSearch included) and every reopen.
func TestContractWithIVF(t *testing.T) {
	open := func(t *testing.T, dir string, o spitest.VectorOptions) *embedded.Store {
		return mustOpen(t, embedded.Config{Dir: dir, Dimension: o.Dimension, Distance: embedded.Distance(o.Distance),
			ANN: embedded.ANN{MinRows: 1, Probe: 1e6}})
	}
	spitest.TestVectorBackend(t, spitest.VectorHarness{
		Open: func(t *testing.T, o spitest.VectorOptions) spitest.VectorStore { return open(t, t.TempDir(), o) },
		Reopen: func(t *testing.T, s spitest.VectorStore) spitest.VectorStore {
			es := s.(*embedded.Store)
			if err := es.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, filepath.Dir(es.Path()), spitest.VectorOptions{Dimension: es.Dimension(), Distance: string(es.Distance())})
		},
	})
}

// Rows written after a build go to the end of the arrays; once they are a
// sixteenth more than the last regroup laid out, the store regroups them
// by list without training: the rows of each list are consecutive again,
// no build is counted, and searches (every list probed) still give the
// exact answers, before and after a reopen.
func TestRegroupAfterGrowth(t *testing.T) {
	ctx := context.Background()
	d := newANNData(9)
	dir := t.TempDir()
	s := openANN(t, dir, 1e6)
	if err := s.Upsert(ctx, d.docs(1200)); err != nil {
		t.Fatal(err)
	}
	builds := mustBuilt(t, s)
	grouped, rows, contiguous, _ := embedded.Layout(s)
	if grouped != 1200 || rows != 1200 || !contiguous {
		t.Fatalf("after the build: %d of %d rows laid out, contiguous %v; want all", grouped, rows, contiguous)
	}
	// 75 more rows: a sixteenth, not more; nothing regroups.
	for range 3 {
		if err := s.Upsert(ctx, d.docs(25)); err != nil {
			t.Fatal(err)
		}
	}
	if b := mustBuilt(t, s); b != builds {
		t.Fatalf("%d builds after 75 rows, want %d", b, builds)
	}
	if grouped, rows, _, _ = embedded.Layout(s); grouped != 1200 || rows != 1275 {
		t.Fatalf("after 75 rows: %d of %d rows laid out, want 1200 of 1275", grouped, rows)
	}
	sameAsFullScan(t, s, annRequests(d, 30))
	// One more row passes the sixteenth: a regroup, not a build.
	if err := s.Upsert(ctx, d.docs(1)); err != nil {
		t.Fatal(err)
	}
	if b := mustBuilt(t, s); b != builds {
		t.Fatalf("%d builds after the regroup, want %d (no training)", b, builds)
	}
	grouped, rows, contiguous, _ = embedded.Layout(s)
	if grouped != 1276 || rows != 1276 || !contiguous {
		t.Fatalf("after the regroup: %d of %d rows laid out, contiguous %v; want all", grouped, rows, contiguous)
	}
	sameAsFullScan(t, s, annRequests(d, 30))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openANN(t, dir, 1e6)
	mustBuilt(t, s)
	sameAsFullScan(t, s, annRequests(d, 30))
}

// TestIdleRegroup: a store no write reaches regroups a tail of more than
// 1/256 of its rows (the idle timer's work, run here by IdleNow), not a
// smaller one, and without training.
func TestIdleRegroup(t *testing.T) {
	ctx := context.Background()
	d := newANNData(10)
	s := openANN(t, t.TempDir(), 1e6)
	if err := s.Upsert(ctx, d.docs(1200)); err != nil {
		t.Fatal(err)
	}
	builds := mustBuilt(t, s)
	// 4 rows: not more than 1200/256.
	if err := s.Upsert(ctx, d.docs(4)); err != nil {
		t.Fatal(err)
	}
	embedded.IdleNow(s)
	if b := mustBuilt(t, s); b != builds {
		t.Fatalf("%d builds after an idle 4-row tail, want %d", b, builds)
	}
	if grouped, rows, _, _ := embedded.Layout(s); grouped != 1200 || rows != 1204 {
		t.Fatalf("after an idle 4-row tail: %d of %d rows laid out, want 1200 of 1204", grouped, rows)
	}
	// One more: idle, the tail is regrouped, by the same lists.
	if err := s.Upsert(ctx, d.docs(1)); err != nil {
		t.Fatal(err)
	}
	embedded.IdleNow(s)
	if b := mustBuilt(t, s); b != builds {
		t.Fatalf("%d builds after an idle regroup, want %d (no training)", b, builds)
	}
	if grouped, rows, contiguous, _ := embedded.Layout(s); grouped != 1205 || rows != 1205 || !contiguous {
		t.Fatalf("after an idle regroup: %d of %d rows laid out, contiguous %v; want all", grouped, rows, contiguous)
	}
	sameAsFullScan(t, s, annRequests(d, 30))
}

// TestIdleRegroupTimer: the timer a commit arms regroups the tail once
// writes stop (waited for, with a generous bound: when it fires is the
// system's, what it does is TestIdleRegroup's).
func TestIdleRegroupTimer(t *testing.T) {
	ctx := context.Background()
	d := newANNData(11)
	s := mustOpen(t, embedded.Config{Dir: t.TempDir(), Dimension: annDim, NoSync: true,
		ANN: embedded.ANN{MinRows: 1000, Probe: 1e6, IdleRegroup: time.Millisecond}})
	if err := s.Upsert(ctx, d.docs(1200)); err != nil {
		t.Fatal(err)
	}
	mustBuilt(t, s)
	if err := s.Upsert(ctx, d.docs(10)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		mustBuilt(t, s)
		grouped, rows, contiguous, _ := embedded.Layout(s)
		if grouped == 1210 && rows == 1210 && contiguous {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after the last write: %d of %d rows laid out, contiguous %v; want all", grouped, rows, contiguous)
		}
		time.Sleep(10 * time.Millisecond)
	}
	sameAsFullScan(t, s, annRequests(d, 30))
}

// parking is a test hook that stops the goroutine running it, once armed,
// until released; it reports (parked) that it has stopped.
type parking struct {
	armed    atomic.Bool
	parked   chan struct{}
	released chan struct{}
}

func newParking() *parking {
	return &parking{parked: make(chan struct{}), released: make(chan struct{})}
}

// hook stops the first caller after arm; later ones pass.
func (p *parking) hook() {
	if p.armed.CompareAndSwap(true, false) {
		close(p.parked)
		<-p.released
	}
}

func (p *parking) arm()     { p.armed.Store(true) }
func (p *parking) release() { close(p.released) }

// A regroup runs beside searches and writes (the IVF's renumbering; its
// codes are unmapped once the new arrays are installed, codes.go). Hooks
// stop each side at the exact line: a search between its candidates and
// its rescoring (memory lock released) across the whole regroup, the old
// codes unmapped; a search and a write while the regroup holds the
// renumbered arrays, not installed; a search started as the regroup goes
// on to install.
// Every search answers what the full float32 scan of its state does, and
// afterwards the rows are laid out by list, the index's invariants hold,
// and the write is found.
func TestRegroupInterleavings(t *testing.T) {
	ctx := context.Background()
	d := newANNData(11)
	s := openANN(t, t.TempDir(), 1e6)
	if err := s.Upsert(ctx, d.docs(1200)); err != nil {
		t.Fatal(err)
	}
	builds := mustBuilt(t, s)
	if err := s.Upsert(ctx, d.docs(75)); err != nil { // a sixteenth more: not yet a regroup
		t.Fatal(err)
	}
	mustBuilt(t, s)
	beforeRescore, afterCandidates, regrouped := newParking(), newParking(), newParking()
	embedded.SetHooks(s, embedded.Hooks{BeforeRescore: beforeRescore.hook, AfterCandidates: afterCandidates.hook, Regrouped: regrouped.hook})

	// The searches see tenant t1; the writes during the test go to t9,
	// so the answers stay those of one state throughout.
	reqs := annRequests(d, 6)
	for i := range reqs {
		reqs[i].Tenant = "t1"
	}
	want := make([][]spi.Ref, len(reqs))
	for i, req := range reqs {
		var err error
		if want[i], err = embedded.FullScan(s, req); err != nil {
			t.Fatal(err)
		}
	}
	type answer struct {
		refs []spi.Ref
		err  error
	}
	search := func(req spi.VectorRequest) chan answer {
		c := make(chan answer, 1)
		go func() {
			refs, err := s.Retrieve(ctx, req)
			c <- answer{refs, err}
		}()
		return c
	}
	check := func(what string, i int, a answer) {
		t.Helper()
		if a.err != nil || !sameRefs(a.refs, want[i]) {
			t.Fatalf("%s: %v, %v; want %v", what, a.refs, a.err, want[i])
		}
	}
	t9 := func(n int) []spi.Document {
		docs := d.docs(n)
		for i := range docs {
			docs[i].Tenant = "t9"
		}
		return docs
	}

	// B: candidates from the old arrays, stopped before its rescoring.
	beforeRescore.arm()
	b := search(reqs[0])
	<-beforeRescore.parked

	// One more row passes the sixteenth: the regroup builds the renumbered
	// arrays and stops before installing them, holding the writers' mutex.
	regrouped.arm()
	if err := s.Upsert(ctx, t9(1)); err != nil {
		t.Fatal(err)
	}
	<-regrouped.parked

	// C searches the old arrays meanwhile; W writes, and waits for the
	// regroup's writers' mutex.
	check("a search while the regroup holds its arrays", 1, <-search(reqs[1]))
	late := t9(1)[0]
	w := make(chan error, 1)
	go func() { w <- s.Upsert(ctx, []spi.Document{late}) }()

	// A starts as the regroup goes on to install: it scans either the
	// old arrays, and the install waits for its memory lock, or the new
	// ones. Nothing but that lock orders A's reads and the install's
	// writes (the hooks do not), so the race detector sees a missing lock,
	// and an unmapping under A's scan faults.
	afterCandidates.arm()
	regrouped.release()
	a := search(reqs[2])
	<-afterCandidates.parked
	afterCandidates.release()
	check("a search beside the install", 2, <-a)
	if err := <-w; err != nil {
		t.Fatal(err)
	}
	if b := mustBuilt(t, s); b != builds {
		t.Fatalf("%d builds after the regroup, want %d (no training)", b, builds)
	}

	// B's rows were renumbered and its codes unmapped; it rescores from
	// the ids and the file it pinned.
	beforeRescore.release()
	check("a search stopped between candidates and rescoring across the regroup", 0, <-b)

	grouped, rows, contiguous, _ := embedded.Layout(s)
	if rows != 1277 || grouped < 1276 || !contiguous {
		t.Fatalf("after the regroup: %d of %d rows laid out, contiguous %v; want 1276 or 1277 of 1277", grouped, rows, contiguous)
	}
	for i, req := range reqs {
		got, err := s.Retrieve(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprint("after the regroup, request ", i), i, answer{got, nil})
	}
	got, err := s.Retrieve(ctx, spi.VectorRequest{Vector: late.Vector, K: 1, Tenant: "t9"})
	if err != nil || len(got) != 1 || got[0].ID != late.ID {
		t.Fatalf("the write made during the regroup: %v, %v; want %s first", got, err, late.ID)
	}
	sameAsFullScan(t, s, annRequests(d, 30))
}

// A commit whose rows outgrow the codes' mapping copies them into a
// larger one before it takes the memory lock (rowCodes.grown: at
// 1,400,000 rows the copy took 0.5–1.7 s, and every search waited for it
// when it ran under the lock). A search started while the commit is
// stopped right after its copy answers without waiting for the commit,
// from the state before it; once the commit ends, its rows are found and
// every search answers what the full scan does.
func TestCodesGrowBesideSearch(t *testing.T) {
	ctx := context.Background()
	d := newANNData(13)
	s := mustOpen(t, embedded.Config{Dir: t.TempDir(), Dimension: annDim, NoSync: true, ANN: embedded.ANN{MinRows: -1}})
	if err := s.Upsert(ctx, d.docs(100)); err != nil {
		t.Fatal(err)
	}
	room := embedded.CodesRoom(s)
	if room < 100 {
		t.Fatalf("room for %d rows after 100, want a mapping of more", room)
	}
	if err := s.Upsert(ctx, d.docs(room-10)); err != nil { // 10 rows of room left
		t.Fatal(err)
	}
	reqs := annRequests(d, 6)
	want := make([][]spi.Ref, len(reqs))
	for i, req := range reqs {
		var err error
		if want[i], err = embedded.FullScan(s, req); err != nil {
			t.Fatal(err)
		}
	}

	grown := newParking()
	embedded.SetHooks(s, embedded.Hooks{CodesGrown: grown.hook})
	grown.arm()
	batch := d.docs(50)
	w := make(chan error, 1)
	go func() { w <- s.Upsert(ctx, batch) }()
	<-grown.parked

	for i, req := range reqs {
		c := make(chan error, 1)
		var got []spi.Ref
		go func() {
			var err error
			got, err = s.Retrieve(ctx, req)
			c <- err
		}()
		select {
		case err := <-c:
			if err != nil || !sameRefs(got, want[i]) {
				t.Fatalf("request %d beside the copy: %v, %v; want %v", i, got, err, want[i])
			}
		case <-time.After(time.Minute):
			grown.release() // so that the store can close
			t.Fatalf("request %d waited a minute for the commit stopped after its copy: the copy holds the memory lock", i)
		}
	}
	grown.release()
	if err := <-w; err != nil {
		t.Fatal(err)
	}
	if room := embedded.CodesRoom(s); room < 100 {
		t.Fatalf("room for %d rows after the growth, want the mapping doubled", room)
	}
	for _, doc := range batch {
		got, err := s.Retrieve(ctx, spi.VectorRequest{Vector: doc.Vector, K: 1, Tenant: doc.Tenant})
		if err != nil || len(got) != 1 || got[0].ID != doc.ID {
			t.Fatalf("%s after the commit: %v, %v", doc.ID, got, err)
		}
	}
	sameAsFullScan(t, s, annRequests(d, 30))
}
