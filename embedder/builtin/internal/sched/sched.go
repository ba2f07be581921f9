// Package sched schedules the built-in encoder's forward passes: queries
// that wait together run as one pass (dynamic micro-batching), documents run
// in short chunks behind them.
//
// Up to Config.Workers passes run at once (default 1). A job that finds a
// worker free starts a pass at once: a lone query never waits. Jobs that
// arrive while every worker runs a pass queue; when a pass ends, the next
// pass takes every queued query, in arrival order, up to MaxBatch sequences
// and MaxTokens tokens. The window in which concurrent queries join one
// pass is therefore the pass before it (no timer: an idle encoder never
// waits for company). Documents run only when no query waits, one job (a
// chunk the caller keeps short) a pass, so a query waits behind at most one
// document chunk.
//
// There is no worker while there is no work: the first job starts a
// goroutine, which runs passes until both queues are empty and then ends.
// Nothing needs closing.
//
// The scheduler measures its passes: ServiceTime is the recent wall time of
// a query pass divided by the queries in it and by the workers, the cost of
// one more queued query under the current batching, from which a guard
// computes a query's expected wait.
package sched

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Priority orders jobs: every queued query runs before any document.
type Priority uint8

const (
	// Query jobs are batched together and go first.
	Query Priority = iota
	// Document jobs run one a pass, when no query waits.
	Document
)

// Config configures a Scheduler.
type Config struct {
	// Run runs one forward pass over seqs, jobs of priority p, and returns
	// one vector per sequence, in order. It is called from one goroutine
	// per worker, so up to Workers calls run at once.
	Run func(seqs [][]int32, p Priority) ([][]float32, error)
	// MaxBatch is the most query sequences in one pass; 0 means 16.
	MaxBatch int
	// MaxTokens is the most tokens in one query pass; 0 means 2048. A single
	// job above it still runs (alone).
	MaxTokens int
	// Workers is the number of passes that may run at once; 0 means 1.
	Workers int
	// Now is the clock of the service-time measurement; nil means time.Now.
	Now func() time.Time
}

// Scheduler runs jobs' sequences through Config.Run in batches. It is safe
// for concurrent use.
type Scheduler struct {
	cfg Config

	mu sync.Mutex
	// queries and docs hold the jobs no pass has taken, in arrival order.
	// Invariant: a job is in at most one of them, at most once, and only
	// until a pass takes it (or drops it, its caller gone).
	queries, docs []*job
	workers       int // worker goroutines running, ≤ cfg.Workers

	perItem atomic.Int64  // ServiceTime, ns; 0 until a query pass ran
	passes  atomic.Uint64 // passes run, queries and documents
	qpasses atomic.Uint64 // query passes that succeeded
	batched atomic.Uint64 // query sequences in them
	dropped atomic.Uint64 // jobs dropped unrun, their callers gone
	// sizes counts query passes by sequences (bucket i: at most
	// SizeBuckets[i], the last also above); waits counts query jobs by
	// the time from Do to their pass's start (WaitBuckets), waitNs sums it.
	sizes  [len(SizeBuckets) + 1]atomic.Uint64
	waits  [len(WaitBuckets) + 1]atomic.Uint64
	waitNs atomic.Int64

	// testHookQueued, when set, runs after a job is queued (outside the
	// lock); testHookPass before each pass with its jobs' priorities.
	testHookQueued func(Priority)
	testHookPass   func(p Priority, seqs int)
}

// job is one Do call's sequences.
type job struct {
	ctx    context.Context
	seqs   [][]int32
	tokens int
	queued time.Time // when Do queued it
	out    [][]float32
	err    error
	done   chan struct{} // closed once out and err are set
}

// ErrRun wraps an error of Config.Run.
var ErrRun = errors.New("sched: forward pass failed")

// New returns a scheduler with cfg's defaults filled in.
func New(cfg Config) *Scheduler {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 16
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 2048
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Scheduler{cfg: cfg}
}

// Do runs seqs (non-empty) with priority p and returns one vector per
// sequence. Query jobs may share a pass with other queries; a document job
// runs alone. A ctx that ends first returns its error at once: a queued job
// is then dropped unrun, a running one's vectors discarded.
func (s *Scheduler) Do(ctx context.Context, p Priority, seqs [][]int32) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(seqs) == 0 {
		return nil, nil
	}
	j := &job{ctx: ctx, seqs: seqs, queued: s.cfg.Now(), done: make(chan struct{})}
	for _, sq := range seqs {
		j.tokens += len(sq)
	}
	s.mu.Lock()
	if p == Query {
		s.queries = append(s.prune(s.queries), j)
	} else {
		s.docs = append(s.prune(s.docs), j)
	}
	start := s.workers < s.cfg.Workers
	if start {
		s.workers++
	}
	s.mu.Unlock()
	if start {
		go s.work()
	}
	if h := s.testHookQueued; h != nil {
		h(p)
	}
	select {
	case <-j.done:
		return j.out, j.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// work runs passes until no job is queued.
func (s *Scheduler) work() {
	for {
		batch, p := s.take()
		if batch == nil {
			return
		}
		s.pass(batch, p)
	}
}

// take removes the next pass's jobs from the queues: the queued queries
// that fit, else one document job; nil (and the worker counted out) when
// both queues are empty. Jobs whose callers are gone are dropped.
func (s *Scheduler) take() ([]*job, Priority) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var batch []*job
	seqs, tokens, n := 0, 0, 0
	for _, j := range s.queries {
		if j.ctx.Err() != nil {
			s.dropped.Add(1)
			n++
			continue
		}
		if len(batch) > 0 && (seqs+len(j.seqs) > s.cfg.MaxBatch || tokens+j.tokens > s.cfg.MaxTokens) {
			break
		}
		batch = append(batch, j)
		seqs += len(j.seqs)
		tokens += j.tokens
		n++
	}
	s.queries = shift(s.queries, n)
	if len(batch) > 0 {
		return batch, Query
	}
	for len(s.docs) > 0 {
		j := s.docs[0]
		s.docs = shift(s.docs, 1)
		if j.ctx.Err() != nil {
			s.dropped.Add(1)
			continue
		}
		return []*job{j}, Document
	}
	s.workers--
	return nil, 0
}

// prune drops the jobs at the head of q whose callers are gone, so a
// queue behind a hung pass does not keep every job that timed out in it.
func (s *Scheduler) prune(q []*job) []*job {
	n := 0
	for n < len(q) && q[n].ctx.Err() != nil {
		n++
	}
	if n == 0 {
		return q
	}
	s.dropped.Add(uint64(n))
	return shift(q, n)
}

// shift drops the first n jobs of q, clearing their slots so the backing
// array does not keep finished jobs alive.
func shift(q []*job, n int) []*job {
	clear(q[:n])
	q = q[n:]
	if len(q) == 0 {
		return q[:0:0]
	}
	return q
}

// pass runs one batch and delivers each job its vectors.
func (s *Scheduler) pass(batch []*job, p Priority) {
	var seqs [][]int32
	if len(batch) == 1 {
		seqs = batch[0].seqs
	} else {
		for _, j := range batch {
			seqs = append(seqs, j.seqs...)
		}
	}
	if h := s.testHookPass; h != nil {
		h(p, len(seqs))
	}
	start := s.cfg.Now()
	if p == Query {
		for _, j := range batch {
			s.observeWait(start.Sub(j.queued))
		}
	}
	out, err := s.run(seqs, p)
	took := s.cfg.Now().Sub(start)
	s.passes.Add(1)
	if p == Query && err == nil {
		s.qpasses.Add(1)
		s.batched.Add(uint64(len(seqs)))
		s.sizes[bucket(SizeBuckets[:], len(seqs))].Add(1)
		s.observe(took, len(seqs))
	}
	off := 0
	for _, j := range batch {
		if err != nil {
			j.err = err
		} else {
			j.out = out[off : off+len(j.seqs) : off+len(j.seqs)]
		}
		off += len(j.seqs)
		close(j.done)
	}
}

// run calls Config.Run, turning a panic or a wrong count into an error so
// that one bad pass fails its jobs, not the process or the worker.
func (s *Scheduler) run(seqs [][]int32, p Priority) (out [][]float32, err error) {
	defer func() {
		if v := recover(); v != nil {
			out, err = nil, fmt.Errorf("%w: panic: %v", ErrRun, v)
		}
	}()
	out, err = s.cfg.Run(seqs, p)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrRun, err)
	case len(out) != len(seqs):
		return nil, fmt.Errorf("%w: %d vectors for %d sequences", ErrRun, len(out), len(seqs))
	}
	return out, nil
}

// observe folds a query pass of n sequences that took d into ServiceTime:
// an exponentially weighted mean of d/n, each pass weighing 1/8.
func (s *Scheduler) observe(d time.Duration, n int) {
	x := int64(d) / int64(n)
	for {
		old := s.perItem.Load()
		nv := x
		if old > 0 {
			nv = old + (x-old)/8
		}
		if s.perItem.CompareAndSwap(old, nv) {
			return
		}
	}
}

// SizeBuckets are the upper bounds of Stats.Sizes: sequences in a query
// pass.
var SizeBuckets = [...]int{1, 2, 3, 4, 6, 8, 12, 16, 32}

// WaitBuckets are the upper bounds of Stats.Waits: how long a query job
// waited from Do to the start of its pass.
var WaitBuckets = [...]time.Duration{
	100 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond,
}

// bucket is the index of the first bound ≥ v, len(bounds) above them all.
func bucket[T int | time.Duration](bounds []T, v T) int {
	for i, b := range bounds {
		if v <= b {
			return i
		}
	}
	return len(bounds)
}

// observeWait counts a query job that waited d for its pass.
func (s *Scheduler) observeWait(d time.Duration) {
	s.waits[bucket(WaitBuckets[:], d)].Add(1)
	s.waitNs.Add(int64(d))
}

// SetTestHooks sets hooks for tests (of this package and of the embedder
// using it): queued runs after a job is queued, pass before each pass with
// its priority and sequence count. Set them before the first Do; nil
// removes them.
func (s *Scheduler) SetTestHooks(queued func(Priority), pass func(p Priority, seqs int)) {
	s.testHookQueued, s.testHookPass = queued, pass
}

// ServiceTime is what one more queued query adds to the wait, as recently
// measured: a query pass's wall time divided by its queries and by the
// workers that run passes side by side (0 before the first pass).
func (s *Scheduler) ServiceTime() time.Duration {
	return time.Duration(s.perItem.Load() / int64(s.cfg.Workers))
}

// Stats are a scheduler's counters.
type Stats struct {
	Passes         uint64  // passes run, queries and documents
	QueryPasses    uint64  // query passes that succeeded
	QuerySeqs      uint64  // query sequences in them
	QueriesPerPass float64 // QuerySeqs / QueryPasses
	Dropped        uint64  // jobs dropped unrun, their callers gone
	QueuedQueries  int     // query jobs waiting now
	QueuedDocs     int     // document jobs waiting now
	// Sizes[i] counts the successful query passes of at most
	// SizeBuckets[i] sequences (and more than the bound before); the last
	// element those above every bound.
	Sizes [len(SizeBuckets) + 1]uint64
	// Waits[i] counts the query jobs that waited at most WaitBuckets[i]
	// (and more than the bound before) from Do to the start of their pass,
	// the last element longer; Waited is their total wait.
	Waits  [len(WaitBuckets) + 1]uint64
	Waited time.Duration
}

// Stats returns the scheduler's counters.
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	st := Stats{QueuedQueries: len(s.queries), QueuedDocs: len(s.docs)}
	s.mu.Unlock()
	st.Passes, st.Dropped = s.passes.Load(), s.dropped.Load()
	st.QueryPasses, st.QuerySeqs = s.qpasses.Load(), s.batched.Load()
	if st.QueryPasses > 0 {
		st.QueriesPerPass = float64(st.QuerySeqs) / float64(st.QueryPasses)
	}
	for i := range s.sizes {
		st.Sizes[i] = s.sizes[i].Load()
	}
	for i := range s.waits {
		st.Waits[i] = s.waits[i].Load()
	}
	st.Waited = time.Duration(s.waitNs.Load())
	return st
}
