package sched_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ragd/ragd/embedder/builtin/internal/sched"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeModel is Config.Run: each pass records the first id of its
// sequences, announces itself on entered and waits for a value on release;
// a sequence's vector is {its first id, its length}, so the test can tell
// which vectors went where.
type fakeModel struct {
	entered chan []int32
	release chan error
	mu      sync.Mutex
	passes  [][]int32
}

func newFake() *fakeModel {
	return &fakeModel{entered: make(chan []int32, 64), release: make(chan error, 64)}
}

func (f *fakeModel) run(seqs [][]int32, _ sched.Priority) ([][]float32, error) {
	ids := make([]int32, len(seqs))
	for i, s := range seqs {
		ids[i] = s[0]
	}
	f.mu.Lock()
	f.passes = append(f.passes, ids)
	f.mu.Unlock()
	f.entered <- ids
	if err := <-f.release; err != nil {
		if err.Error() == "panic" {
			panic("the model broke")
		}
		return nil, err
	}
	out := make([][]float32, len(seqs))
	for i, s := range seqs {
		out[i] = []float32{float32(s[0]), float32(len(s))}
	}
	return out, nil
}

// harness is a scheduler over a fakeModel, with a channel that receives
// the priority of every job once it is queued.
type harness struct {
	f      *fakeModel
	s      *sched.Scheduler
	queued chan sched.Priority
}

func newHarness(cfg sched.Config) *harness {
	h := &harness{f: newFake(), queued: make(chan sched.Priority, 64)}
	cfg.Run = h.f.run
	h.s = sched.New(cfg)
	h.s.SetTestHooks(func(p sched.Priority) { h.queued <- p }, nil)
	return h
}

// result is one Do's answer.
type result struct {
	vecs [][]float32
	err  error
}

// do starts a Do of sequences with first ids ids (length 3 each) and
// returns its answer channel once the job is queued.
func (h *harness) do(ctx context.Context, p sched.Priority, ids ...int32) <-chan result {
	seqs := make([][]int32, len(ids))
	for i, id := range ids {
		seqs[i] = []int32{id, 0, 0}
	}
	ch := make(chan result, 1)
	go func() {
		v, err := h.s.Do(ctx, p, seqs)
		ch <- result{v, err}
	}()
	<-h.queued
	return ch
}

func want(t *testing.T, ch <-chan result, ids ...int32) {
	t.Helper()
	r := <-ch
	if r.err != nil {
		t.Fatalf("Do = %v, want vectors of %v", r.err, ids)
	}
	var got []int32
	for _, v := range r.vecs {
		got = append(got, int32(v[0]))
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("Do returned the vectors of %v, want %v", got, ids)
	}
}

func (h *harness) pass(t *testing.T, ids ...int32) {
	t.Helper()
	got := <-h.f.entered
	if !slices.Equal(got, ids) {
		t.Fatalf("pass of %v, want %v", got, ids)
	}
}

// TestLoneQueryRunsAtOnce: with nothing running, a query's pass starts
// without waiting for company, and ends with no goroutine left behind
// (goleak).
func TestLoneQueryRunsAtOnce(t *testing.T) {
	h := newHarness(sched.Config{})
	ch := h.do(context.Background(), sched.Query, 7)
	h.pass(t, 7)
	h.f.release <- nil
	want(t, ch, 7)
}

// TestWaitingQueriesShareAPass: the queries queued while a pass runs form
// the next pass, in arrival order, each caller getting its own vectors.
func TestWaitingQueriesShareAPass(t *testing.T) {
	h := newHarness(sched.Config{})
	ctx := context.Background()
	a := h.do(ctx, sched.Query, 1)
	h.pass(t, 1)
	b := h.do(ctx, sched.Query, 2, 3)
	c := h.do(ctx, sched.Query, 4)
	d := h.do(ctx, sched.Query, 5)
	h.f.release <- nil
	want(t, a, 1)
	h.pass(t, 2, 3, 4, 5)
	h.f.release <- nil
	want(t, b, 2, 3)
	want(t, c, 4)
	want(t, d, 5)
	if st := h.s.Stats(); st.Passes != 2 || st.QueriesPerPass != 2.5 {
		t.Fatalf("stats %+v, want 2 passes of 2.5 queries on average", st)
	}
}

// TestBatchLimits: a pass takes queued queries up to MaxBatch sequences
// and MaxTokens tokens; the rest wait for the next pass. A job larger than
// MaxTokens still runs, alone.
func TestBatchLimits(t *testing.T) {
	h := newHarness(sched.Config{MaxBatch: 3, MaxTokens: 7})
	ctx := context.Background()
	a := h.do(ctx, sched.Query, 1)
	h.pass(t, 1)
	b := h.do(ctx, sched.Query, 2)
	c := h.do(ctx, sched.Query, 3)
	d := h.do(ctx, sched.Query, 4) // 9 tokens with b and c: over MaxTokens
	e := h.do(ctx, sched.Query, 5, 6, 7)
	h.f.release <- nil
	h.pass(t, 2, 3)
	h.f.release <- nil
	h.pass(t, 4) // e's three with d would be four sequences: over MaxBatch
	h.f.release <- nil
	h.pass(t, 5, 6, 7) // 9 tokens alone
	h.f.release <- nil
	want(t, a, 1)
	want(t, b, 2)
	want(t, c, 3)
	want(t, d, 4)
	want(t, e, 5, 6, 7)
}

// TestQueriesGoFirst: documents run one job a pass and only when no query
// waits: a query queued behind two document jobs runs before both, so it
// waits for at most the document pass already running.
func TestQueriesGoFirst(t *testing.T) {
	h := newHarness(sched.Config{})
	ctx := context.Background()
	d1 := h.do(ctx, sched.Document, 10, 11)
	h.pass(t, 10, 11)
	d2 := h.do(ctx, sched.Document, 20)
	d3 := h.do(ctx, sched.Document, 30)
	q := h.do(ctx, sched.Query, 1)
	q2 := h.do(ctx, sched.Query, 2)
	h.f.release <- nil
	h.pass(t, 1, 2)
	h.f.release <- nil
	h.pass(t, 20)
	h.f.release <- nil
	h.pass(t, 30)
	h.f.release <- nil
	want(t, d1, 10, 11)
	want(t, q, 1)
	want(t, q2, 2)
	want(t, d2, 20)
	want(t, d3, 30)
}

// Batcher vs cancel: a query cancelled while queued returns at once and
// never runs; the pass that would have held it runs the others.
func TestCancelWhileQueued(t *testing.T) {
	h := newHarness(sched.Config{})
	ctx := context.Background()
	a := h.do(ctx, sched.Query, 1)
	h.pass(t, 1)
	bctx, cancel := context.WithCancel(ctx)
	b := h.do(bctx, sched.Query, 2)
	c := h.do(ctx, sched.Query, 3)
	dctx, dcancel := context.WithCancel(ctx)
	d := h.do(dctx, sched.Document, 4)
	cancel()
	dcancel()
	if r := <-b; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled queued query: %v, want context.Canceled", r.err)
	}
	if r := <-d; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled queued document job: %v, want context.Canceled", r.err)
	}
	h.f.release <- nil
	want(t, a, 1)
	h.pass(t, 3) // b dropped
	h.f.release <- nil
	want(t, c, 3)
	e := h.do(ctx, sched.Document, 5)
	h.pass(t, 5) // d, queued before e, dropped
	if st := h.s.Stats(); st.Dropped != 2 || st.Passes != 2 {
		t.Fatalf("stats %+v, want 2 jobs dropped unrun and 2 passes ended", st)
	}
	h.f.release <- nil
	want(t, e, 5)
}

// Batcher vs cancel, the other order: a caller whose ctx ends while its
// pass runs returns at once; the pass's other queries get their vectors.
func TestCancelWhileRunning(t *testing.T) {
	h := newHarness(sched.Config{})
	ctx := context.Background()
	a := h.do(ctx, sched.Query, 1)
	h.pass(t, 1)
	bctx, cancel := context.WithCancel(ctx)
	b := h.do(bctx, sched.Query, 2)
	c := h.do(ctx, sched.Query, 3)
	h.f.release <- nil
	want(t, a, 1)
	h.pass(t, 2, 3)
	cancel()
	if r := <-b; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("query cancelled during its pass: %v, want context.Canceled", r.err)
	}
	h.f.release <- nil
	want(t, c, 3)
}

// Batcher vs hang: a pass that never ends holds the only worker; the
// queries behind it wait until their own deadlines and return them, and no
// second pass starts beside the hung one. Once it ends, the worker goes on
// with what is queued.
func TestHungPass(t *testing.T) {
	h := newHarness(sched.Config{})
	ctx := context.Background()
	actx, acancel := context.WithCancel(ctx)
	a := h.do(actx, sched.Query, 1)
	h.pass(t, 1) // hangs: no release yet
	var late []<-chan result
	var cancels []context.CancelFunc
	for i := range 3 {
		c, cancel := context.WithCancel(ctx) // the query's deadline, run out by hand
		late = append(late, h.do(c, sched.Query, int32(10+i)))
		cancels = append(cancels, cancel)
	}
	acancel()
	for i, ch := range late {
		cancels[i]()
		if r := <-ch; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("query %d behind a hung pass: %v, want its deadline's error", i, r.err)
		}
	}
	if r := <-a; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("query in the hung pass: %v", r.err)
	}
	select {
	case ids := <-h.f.entered:
		t.Fatalf("a second pass (%v) started beside the hung one", ids)
	default:
	}
	e := h.do(ctx, sched.Query, 20)
	if st := h.s.Stats(); st.QueuedQueries != 1 || st.Dropped != 3 {
		t.Fatalf("stats %+v: the queries that timed out behind the hung pass must leave the queue", st)
	}
	h.f.release <- nil // the hung pass ends
	h.pass(t, 20)
	h.f.release <- nil
	want(t, e, 20)
}

// A failed or panicking pass fails its jobs with ErrRun; the worker lives
// on and the next pass succeeds.
func TestRunFailure(t *testing.T) {
	h := newHarness(sched.Config{})
	ctx := context.Background()
	for _, fault := range []string{"out of memory", "panic"} {
		a := h.do(ctx, sched.Query, 1)
		h.pass(t, 1)
		b := h.do(ctx, sched.Query, 2)
		h.f.release <- errors.New(fault)
		if r := <-a; !errors.Is(r.err, sched.ErrRun) {
			t.Fatalf("%s: %v, want ErrRun", fault, r.err)
		}
		h.pass(t, 2)
		h.f.release <- nil
		want(t, b, 2)
	}
}

// ServiceTime is a query pass's wall time divided by its queries, averaged
// over recent passes; the stats count each pass by its size and each query
// by its wait from Do to its pass's start (a clock the test sets: a query
// alone waits 0, four queued 3ms into an 8ms pass wait 5ms each).
func TestServiceTime(t *testing.T) {
	var mu sync.Mutex
	t0 := time.Unix(1e9, 0)
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = t0.Add(d) }
	h := newHarness(sched.Config{Now: clock})
	ctx := context.Background()
	if st := h.s.ServiceTime(); st != 0 {
		t.Fatalf("ServiceTime before any pass = %v", st)
	}
	a := h.do(ctx, sched.Query, 1)
	h.pass(t, 1)
	set(3 * time.Millisecond)
	var rest []<-chan result
	for i := range 4 {
		rest = append(rest, h.do(ctx, sched.Query, int32(2+i)))
	}
	set(8 * time.Millisecond)
	h.f.release <- nil
	want(t, a, 1)
	h.pass(t, 2, 3, 4, 5)
	if st := h.s.ServiceTime(); st != 8*time.Millisecond {
		t.Fatalf("ServiceTime after a pass of 1 in 8ms = %v, want 8ms", st)
	}
	set(16 * time.Millisecond)
	h.f.release <- nil
	for i, ch := range rest {
		want(t, ch, int32(2+i))
	}
	if st := h.s.ServiceTime(); st != 7250*time.Microsecond { // 8ms + (2ms-8ms)/8
		t.Fatalf("ServiceTime after a pass of 4 in 8ms = %v, want 7.25ms", st)
	}
	st := h.s.Stats()
	var sizes [len(sched.SizeBuckets) + 1]uint64
	sizes[0], sizes[3] = 1, 1 // a pass of 1, a pass of 4 (bucket ≤ 4)
	var waits [len(sched.WaitBuckets) + 1]uint64
	waits[0], waits[4] = 1, 4 // 0 (≤ 100µs), four of 5ms (≤ 5ms)
	if st.QueryPasses != 2 || st.QuerySeqs != 5 || st.Sizes != sizes || st.Waits != waits || st.Waited != 20*time.Millisecond {
		t.Fatalf("stats %+v, want 2 query passes of 5 sequences, sizes %v, waits %v, 20ms waited", st, sizes, waits)
	}
}

// TestWorkers: with two workers a second query starts its own pass beside
// the first (no wait for company while a worker is free); once both run,
// later queries queue and share the next pass of whichever ends first.
// ServiceTime divides a pass's time per query by the workers: 8ms for one
// query over two workers adds 4ms to a queued query's wait.
func TestWorkers(t *testing.T) {
	var mu sync.Mutex
	t0 := time.Unix(1e9, 0)
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h := newHarness(sched.Config{Workers: 2, Now: clock})
	ctx := context.Background()
	a := h.do(ctx, sched.Query, 1)
	h.pass(t, 1)
	b := h.do(ctx, sched.Query, 2)
	h.pass(t, 2) // beside a's, not after it
	c := h.do(ctx, sched.Query, 3)
	d := h.do(ctx, sched.Query, 4)
	select {
	case ids := <-h.f.entered:
		t.Fatalf("a third pass (%v) started beside two", ids)
	default:
	}
	mu.Lock()
	now = t0.Add(8 * time.Millisecond)
	mu.Unlock()
	h.f.release <- nil // a's or b's pass ends; its worker takes c and d
	h.pass(t, 3, 4)
	if st := h.s.ServiceTime(); st != 4*time.Millisecond {
		t.Fatalf("ServiceTime = %v, want 8ms / 1 query / 2 workers = 4ms", st)
	}
	h.f.release <- nil
	h.f.release <- nil
	want(t, a, 1)
	want(t, b, 2)
	want(t, c, 3)
	want(t, d, 4)
	if st := h.s.Stats(); st.QueryPasses != 3 || st.QuerySeqs != 4 {
		t.Fatalf("stats %+v, want 3 query passes of 4 queries", st)
	}
}
