package breaker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The breaker's state word packs, from the low bits up: the state (2 bits),
// the consecutive-failure count while closed (32 bits) and the generation
// (30 bits, wrapping). The state and generation bits change only under
// Breaker.mu; the failure bits change lock-free, by compare-and-swap, while
// closed. A word with its failure bits cleared is a "key": it names one
// generation, and results are applied only if the key is still current.
const (
	stClosed   = uint64(Closed)
	stHalfOpen = uint64(HalfOpen)
	stOpen     = uint64(Open)
	stateMask  = uint64(3)
	failShift  = 2
	failUnit   = uint64(1) << failShift
	failMask   = uint64(math.MaxUint32) << failShift
	genUnit    = uint64(1) << 34
)

// Breaker is a circuit breaker. It is safe for concurrent use; create it with
// New.
type Breaker struct {
	word atomic.Uint64
	_    [56]byte // keep the hot word on its own cache line

	phase       atomic.Pointer[phase]
	openErr     atomic.Pointer[openErrCache]
	openedTotal atomic.Uint64

	// Read-only after New.
	name      string
	cfg       Config
	now       func() time.Time
	realClock bool // Config.Now was nil: read only the monotonic clock when no wall time is needed
	epoch     time.Time
	threshold uint64
	lease     int64
	win       *window // nil unless the failure-rate rule is on
	rand      func() float64

	mu             sync.Mutex // serialises transitions and half-open trials
	trials         []trial
	trialSuccesses int
	ticket         uint64
	streak         int // consecutive trips since the breaker last closed

	hooks hookQueue
}

// phase holds what belongs to one generation, published atomically just
// before the generation's word.
type phase struct {
	key      uint64      // state and generation bits of the word
	until    int64       // open: monotonic time the cooldown ends (never while held)
	cause    error       // open, half-open: the failure that tripped
	failures int         // open, half-open: failures since last closed
	done     func(error) // closed: the done func Allow hands out
	hold     *Hold       // open: the maintenance hold, if any

	since      time.Time // when the state began
	sinceMono  int64     // the same, in the breaker's monotonic time
	leftClosed time.Time // open, half-open: when the breaker last left closed
}

// held is the cooldown end of a held breaker: it never admits trials.
const held = math.MaxInt64

// trial is one admitted half-open call.
type trial struct {
	ticket uint64
	at     int64
}

// token identifies an admitted call: the word at admission and, for a
// half-open trial, its ticket (0 otherwise).
type token struct {
	word, ticket uint64
}

// openErrCache is the shared rejection for one generation and one
// millisecond of RetryAfter.
type openErrCache struct {
	key uint64
	ms  int64
	err OpenError
}

type outcome uint8

const (
	success outcome = iota
	failure
	neutral
)

// New returns a closed breaker. name identifies it in errors, snapshots and
// transitions (for ragd: "vector", "keyword", "graph", "embedder").
func New(name string, cfg Config) (*Breaker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("breaker: new %q: %w", name, err)
	}
	b := &Breaker{name: name, cfg: cfg, now: cfg.Now, threshold: uint64(cfg.FailureThreshold), rand: cfg.Backoff.Rand}
	if b.now == nil {
		b.now, b.realClock = time.Now, true
	}
	if b.rand == nil {
		b.rand = rand.Float64
	}
	b.lease = int64(cfg.TrialLease)
	if b.lease == 0 {
		b.lease = int64(max(cfg.ResetTimeout, time.Second))
	}
	b.epoch = b.now()
	if cfg.FailureRate.Enabled() {
		b.win = newWindow(cfg.FailureRate)
		b.win.reset(stClosed)
	}
	b.phase.Store(&phase{key: stClosed, done: b.closedDone(stClosed), since: b.epoch})
	return b, nil
}

// Name returns the breaker's name.
func (b *Breaker) Name() string { return b.name }

// clock reads Config.Now once, returning it and the breaker's monotonic time
// (nanoseconds since New).
func (b *Breaker) clock() (time.Time, int64) {
	t := b.now()
	return t, int64(t.Sub(b.epoch))
}

// mono returns the breaker's monotonic time alone. With the real clock,
// time.Since reads only the monotonic clock, about half the cost of
// time.Now, which matters on the open path.
func (b *Breaker) mono() int64 {
	if b.realClock {
		return int64(time.Since(b.epoch))
	}
	return int64(b.now().Sub(b.epoch))
}

// Call runs fn if the breaker admits it and records the outcome (see the
// package doc for what counts). It returns fn's own error unchanged, or an
// *OpenError without running fn. If fn panics, the failure is recorded and
// the panic continues.
func (b *Breaker) Call(ctx context.Context, fn func(context.Context) error) (err error) {
	w := b.word.Load()
	tok := token{word: w}
	if w&stateMask != stClosed {
		if tok, err = b.admitSlow(w); err != nil {
			return err
		}
	}
	returned := false
	defer func() {
		if returned {
			return
		}
		r := recover()
		if r == nil { // runtime.Goexit: fn neither succeeded nor failed
			b.report(tok, neutral, nil)
			return
		}
		b.report(tok, failure, errPanicked)
		panic(r)
	}()
	err = fn(ctx)
	returned = true
	if err == nil {
		// Fast path: closed, same generation, no failures to reset.
		if tok.ticket == 0 && b.win == nil && b.word.Load() == tok.word&^failMask {
			return nil
		}
		b.report(tok, success, nil)
		return nil
	}
	b.report(tok, b.classify(ctx, err), err)
	return err
}

// classify decides what a non-nil error from fn means.
func (b *Breaker) classify(ctx context.Context, err error) outcome {
	if ctx.Err() != nil && callerGaveUp(ctx, err) {
		return neutral
	}
	if b.cfg.ShouldCount != nil && !b.cfg.ShouldCount(err) {
		return neutral
	}
	return failure
}

// callerGaveUp reports whether err is the caller's own (done) ctx speaking.
// A ctx that ended on a per-call deadline whose cause matches ErrCallTimeout
// is not the caller giving up: the backend was too slow.
func callerGaveUp(ctx context.Context, err error) bool {
	if cause := context.Cause(ctx); cause != nil && errors.Is(cause, ErrCallTimeout) {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	cause := context.Cause(ctx)
	return cause != nil && errors.Is(err, cause)
}

// classifyDone decides what the error passed to an Allow done func means.
func (b *Breaker) classifyDone(err error) outcome {
	switch {
	case err == nil:
		return success
	case errors.Is(err, context.Canceled):
		return neutral
	case b.cfg.ShouldCount != nil && !b.cfg.ShouldCount(err):
		return neutral
	default:
		return failure
	}
}

// Allow is the two-step form of Call for callers that run the protected
// work themselves. If the breaker admits the call, Allow returns a done func
// that the caller must call exactly once with the work's error (nil for
// success); otherwise it returns an *OpenError.
//
// done applies ShouldCount, except that an error matching context.Canceled is
// neutral (the caller gave up). done cannot see the caller's ctx, so a
// deadline is a failure: report a deadline of your own ctx as
// context.Canceled, or not at all if you prefer (an unreported half-open
// trial is reclaimed after Config.TrialLease).
//
// While closed, Allow returns a done func shared by the generation and
// allocates nothing.
func (b *Breaker) Allow() (done func(error), err error) {
	w := b.word.Load()
	if w&stateMask == stClosed {
		if p := b.phase.Load(); p.key == w&^failMask {
			return p.done, nil
		}
	}
	tok, err := b.admitSlow(w)
	if err != nil {
		return nil, err
	}
	if tok.ticket == 0 {
		if p := b.phase.Load(); p.key == tok.word&^failMask {
			return p.done, nil
		}
		return b.closedDone(tok.word &^ failMask), nil
	}
	return func(err error) { b.report(tok, b.classifyDone(err), err) }, nil
}

// closedDone returns the done func for calls admitted in the closed
// generation key.
func (b *Breaker) closedDone(key uint64) func(error) {
	return func(err error) { b.report(token{word: key}, b.classifyDone(err), err) }
}

// admitSlow admits a call when the word read was not closed: it rejects
// cheaply while the cooldown runs, and otherwise takes the lock.
func (b *Breaker) admitSlow(w uint64) (token, error) {
	if w&stateMask == stOpen {
		if p := b.phase.Load(); p.key == w {
			if t := b.mono(); t < p.until {
				return token{}, b.rejection(p, p.until-t)
			}
		}
	}
	b.mu.Lock()
	now, t := b.clock()
	b.advance(now, t)
	w = b.word.Load()
	p := b.phase.Load()
	switch w & stateMask {
	case stClosed:
		b.mu.Unlock()
		return token{word: w}, nil
	case stOpen:
		b.mu.Unlock()
		return token{}, b.rejection(p, p.until-t)
	}
	// Half-open: the slot is reserved under the same lock as the state check.
	b.reclaim(t)
	if len(b.trials) >= b.cfg.HalfOpenMaxCalls {
		b.mu.Unlock()
		b.flush()
		return token{}, b.rejection(p, 0)
	}
	b.ticket++
	b.trials = append(b.trials, trial{ticket: b.ticket, at: t})
	tok := token{word: w, ticket: b.ticket}
	b.mu.Unlock()
	b.flush()
	return tok, nil
}

// advance makes the open → half-open transition once the cooldown is over.
// The caller holds mu.
func (b *Breaker) advance(now time.Time, t int64) {
	if b.word.Load()&stateMask != stOpen {
		return
	}
	if p := b.phase.Load(); t >= p.until {
		b.transition(stHalfOpen, ReasonCooldown, now, t, p.failures, 0, p.cause, Manual{})
	}
}

// reclaim frees the slots of trials whose lease expired. The caller holds mu.
func (b *Breaker) reclaim(t int64) {
	b.trials = slices.DeleteFunc(b.trials, func(tr trial) bool { return t-tr.at >= b.lease })
}

// rejection returns the shared *OpenError for phase p with remaining
// nanoseconds of cooldown.
func (b *Breaker) rejection(p *phase, remaining int64) error {
	var ms int64
	if remaining > 0 && p.hold == nil { // a hold has no end to announce
		ms = (remaining + int64(time.Millisecond) - 1) / int64(time.Millisecond)
	}
	if c := b.openErr.Load(); c != nil && c.key == p.key && c.ms == ms {
		return &c.err
	}
	c := &openErrCache{key: p.key, ms: ms, err: OpenError{Name: b.name, RetryAfter: time.Duration(ms) * time.Millisecond, Cause: p.cause}}
	b.openErr.Store(c)
	return &c.err
}

// report applies an outcome to the generation that admitted the call.
func (b *Breaker) report(tok token, o outcome, cause error) {
	if tok.ticket != 0 {
		b.reportTrial(tok, o, cause)
		return
	}
	switch o {
	case success:
		b.closedSuccess(tok.word &^ failMask)
	case failure:
		b.closedFailure(tok.word&^failMask, cause)
	}
}

func (b *Breaker) closedSuccess(key uint64) {
	for {
		w := b.word.Load()
		if w&^failMask != key {
			return // another generation
		}
		if w == key || b.word.CompareAndSwap(w, key) {
			break
		}
	}
	if b.win != nil {
		b.win.record(key, b.mono(), false)
	}
}

func (b *Breaker) closedFailure(key uint64, cause error) {
	for {
		w := b.word.Load()
		if w&^failMask != key {
			return // another generation
		}
		f := (w&failMask)>>failShift + 1
		if f >= b.threshold {
			b.trip(key, ReasonFailureThreshold, int(f), 0, cause)
			return
		}
		if b.word.CompareAndSwap(w, w+failUnit) {
			break
		}
	}
	if b.win != nil {
		calls, failures, ok := b.win.record(key, b.mono(), true)
		r := b.cfg.FailureRate
		if ok && calls >= r.MinCalls && float64(failures)/float64(calls) >= r.Threshold {
			b.trip(key, ReasonFailureRate, failures, calls, cause)
		}
	}
}

// trip opens the breaker if generation key is still current.
func (b *Breaker) trip(key uint64, reason Reason, failures, calls int, cause error) {
	b.mu.Lock()
	if b.word.Load()&^failMask != key {
		b.mu.Unlock()
		return
	}
	now, t := b.clock()
	b.transition(stOpen, reason, now, t, failures, calls, cause, Manual{})
	b.mu.Unlock()
	b.flush()
}

func (b *Breaker) reportTrial(tok token, o outcome, cause error) {
	b.mu.Lock()
	if b.word.Load() != tok.word {
		b.mu.Unlock()
		return // another generation: the slot went with it
	}
	i := slices.IndexFunc(b.trials, func(tr trial) bool { return tr.ticket == tok.ticket })
	if i < 0 {
		b.mu.Unlock()
		return // reclaimed after its lease, or reported twice
	}
	b.trials = slices.Delete(b.trials, i, i+1)
	switch o {
	case success:
		b.trialSuccesses++
		if b.trialSuccesses >= b.cfg.SuccessThreshold {
			now, t := b.clock()
			b.transition(stClosed, ReasonTrialSuccess, now, t, 0, 0, nil, Manual{})
		}
	case failure:
		now, t := b.clock()
		b.transition(stOpen, ReasonTrialFailure, now, t, b.phase.Load().failures+1, 0, cause, Manual{})
	}
	b.mu.Unlock()
	b.flush()
}

// transition moves the breaker to state `to` in a new generation and queues
// the event; m is the operator behind a manual transition. ReasonHeld makes
// the open state a hold: no cooldown ends it. The caller holds mu.
func (b *Breaker) transition(to uint64, reason Reason, now time.Time, t int64, failures, calls int, cause error, m Manual) {
	old := b.word.Load()
	prev := b.phase.Load()
	key := (old&^(failMask|stateMask) + genUnit) | to
	ev := Transition{Name: b.name, From: State(old & stateMask), To: State(to), Reason: reason, Failures: failures, Calls: calls, At: now,
		By: m.By, Note: m.Note}
	if ev.From == HalfOpen {
		ev.TrialSuccesses = b.trialSuccesses
	}
	// How long the state being left lasted: an open state ended when its
	// cooldown did, even if the next call made the transition later.
	end := t
	if ev.From == Open && prev.until < end {
		end = prev.until
	}
	ev.Lasted = time.Duration(max(end-prev.sinceMono, 0))
	p := &phase{key: key, cause: cause, failures: failures, since: now, sinceMono: t, leftClosed: prev.leftClosed}
	if ev.From == Closed {
		p.leftClosed = now
	}
	switch to {
	case stOpen:
		if reason == ReasonHeld {
			p.until = held
			p.hold = &Hold{By: m.By, Reason: m.Note, Since: now}
			if ev.From == Open {
				// Already open: the hold keeps the trip, its cause and
				// its start; it is not another trip.
				p.cause, p.failures, p.since, p.sinceMono = prev.cause, prev.failures, prev.since, prev.sinceMono
				ev.Failures = prev.failures
				ev.OpenedTotal = b.openedTotal.Load()
			}
			if !m.Since.IsZero() {
				// A hold restored after a restart: it began, and the
				// breaker left closed, at m.Since (never later than now);
				// the process that placed it counted the trip.
				since := m.Since
				if since.After(now) {
					since = now
				}
				p.hold.Since = since
				if ev.From != Open {
					p.since, p.sinceMono, p.leftClosed = since, t-int64(now.Sub(since)), since
				}
				ev.OpenedTotal = b.openedTotal.Load()
				h := *p.hold
				ev.Restored = &h
				break
			}
			if ev.From != Open {
				b.streak++
				ev.OpenedTotal = b.openedTotal.Add(1)
			}
			break
		}
		b.streak++
		d := b.openDuration()
		p.until = t + int64(d)
		ev.OpenFor = d
		ev.OpenedTotal = b.openedTotal.Add(1)
	case stHalfOpen:
		ev.OpenedTotal = b.openedTotal.Load()
		if ev.From == Open && prev.until < t {
			// Made lazily by a later call: half-open since the cooldown ended.
			p.sinceMono = prev.until
			p.since = prev.since.Add(time.Duration(prev.until - prev.sinceMono))
		}
	case stClosed:
		b.streak = 0
		p.cause, p.failures = nil, 0
		p.done = b.closedDone(key)
		p.leftClosed = time.Time{}
		ev.OpenedTotal = b.openedTotal.Load()
		if !prev.leftClosed.IsZero() {
			ev.Outage = now.Sub(prev.leftClosed)
		}
		ev.Released = prev.hold
	}
	b.trials = b.trials[:0]
	b.trialSuccesses = 0
	b.phase.Store(p)
	for !b.word.CompareAndSwap(old, key) { // only failure bits can move meanwhile
		old = b.word.Load()
	}
	if b.win != nil {
		b.win.reset(key)
	}
	if b.cfg.OnStateChange != nil {
		b.hooks.push(ev)
	}
}

// openDuration is the cooldown of the trip being made (b.streak counts it).
func (b *Breaker) openDuration() time.Duration {
	d := b.cfg.ResetTimeout
	bo := b.cfg.Backoff
	if bo.Multiplier > 1 && b.streak > 1 {
		f := float64(d) * math.Pow(bo.Multiplier, float64(b.streak-1))
		if f >= float64(bo.Max) {
			d = bo.Max
		} else {
			d = time.Duration(f)
		}
	}
	if bo.Max > 0 && d > bo.Max {
		d = bo.Max
	}
	if bo.Jitter > 0 {
		r := min(max(b.rand(), 0), 1)
		d -= time.Duration(float64(d) * bo.Jitter * r)
	}
	return d
}

// flush delivers queued transitions. The caller must not hold mu.
func (b *Breaker) flush() {
	if b.cfg.OnStateChange != nil {
		b.hooks.drain(b.cfg.OnStateChange)
	}
}

// view returns a consistent word and phase.
func (b *Breaker) view() (uint64, *phase) {
	for range 3 {
		w, p := b.word.Load(), b.phase.Load()
		if p.key == w&^failMask {
			return w, p
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.word.Load(), b.phase.Load()
}

// State returns the current state. It never blocks on other callers: it is
// a few atomic loads, plus a clock read while open. Once the cooldown has
// passed it reports HalfOpen, even before a call makes the transition.
func (b *Breaker) State() State {
	w, p := b.view()
	s := State(w & stateMask)
	if s == Open {
		if b.mono() >= p.until {
			return HalfOpen
		}
	}
	return s
}

// Snapshot returns the breaker's state and counters, lazily like State.
func (b *Breaker) Snapshot() Snapshot {
	w, p := b.view()
	s := Snapshot{
		Name:             b.name,
		State:            State(w & stateMask),
		FailureThreshold: b.cfg.FailureThreshold,
		OpenedTotal:      b.openedTotal.Load(),
		ResetTimeout:     b.cfg.ResetTimeout,
	}
	switch s.State {
	case Closed:
		s.FailureCount = int((w & failMask) >> failShift)
	case Open:
		s.FailureCount = p.failures
		switch t := b.mono(); {
		case p.hold != nil:
			h := *p.hold
			s.Hold = &h
		case t < p.until:
			s.RetryIn = time.Duration(p.until - t)
		default:
			s.State = HalfOpen
			s.Since = p.since.Add(time.Duration(p.until - p.sinceMono))
			return s
		}
	case HalfOpen:
		s.FailureCount = p.failures
	}
	s.Since = p.since
	return s
}

// Manual names the operator behind a manual action: By who (for ragd, the
// API key's name), Note why (free text, may be empty). Both travel in the
// Transition and, for a hold, in the Snapshot.
type Manual struct {
	By, Note string
	// Since, for Hold only, restores a hold kept across a restart: the
	// hold began at Since (a time after now counts as now), and so did the
	// open state and the outage when the breaker was not open already, so
	// Snapshot.Since, a release's Lasted and Outage count from Since. The
	// restore is no trip (OpenedTotal does not move: the process that
	// placed the hold counted it) and its Transition carries Restored.
	// Zero means a new hold, beginning now.
	Since time.Time
}

// ForceOpen trips the breaker now, as if it had failed: it stays open for
// the usual (backed-off) cooldown, then admits trials. It does nothing if
// the breaker is open and cooling down, or held. The trip counts in
// OpenedTotal.
func (b *Breaker) ForceOpen() { b.ForceOpenBy(Manual{}) }

// ForceOpenBy is ForceOpen with the operator named in the transition.
func (b *Breaker) ForceOpenBy(m Manual) {
	b.mu.Lock()
	now, t := b.clock()
	b.advance(now, t)
	w := b.word.Load()
	if w&stateMask != stOpen {
		b.transition(stOpen, ReasonForced, now, t, b.failuresNow(w), 0, nil, m)
	}
	b.mu.Unlock()
	b.flush()
}

// failuresNow is the failure count behind a manual trip from word w. The
// caller holds mu.
func (b *Breaker) failuresNow(w uint64) int {
	if w&stateMask == stClosed {
		return int((w & failMask) >> failShift)
	}
	return b.phase.Load().failures
}

// Hold opens the breaker for maintenance and keeps it open until
// ForceClose: no cooldown ends it, so it admits no trial (and a background
// prober sees no half-open state to probe). Holding a closed or half-open
// breaker is a trip (it counts in OpenedTotal), unless it restores a hold
// (Manual.Since); holding an open one keeps its trip and stops its
// cooldown. Holding a held breaker replaces the hold's operator and note.
// Every hold is a transition with ReasonHeld.
func (b *Breaker) Hold(m Manual) {
	b.mu.Lock()
	now, t := b.clock()
	b.advance(now, t)
	b.transition(stOpen, ReasonHeld, now, t, b.failuresNow(b.word.Load()), 0, nil, m)
	b.mu.Unlock()
	b.flush()
}

// ForceClose closes the breaker now, releasing a hold, and clears its
// failure counts and backoff streak. In-flight calls admitted before it are
// ignored when they report: a breaker that is already closed still moves to
// a new generation (without a transition event).
func (b *Breaker) ForceClose() { b.ForceCloseBy(Manual{}) }

// ForceCloseBy is ForceClose with the operator named in the transition.
func (b *Breaker) ForceCloseBy(m Manual) {
	b.mu.Lock()
	now, t := b.clock()
	b.advance(now, t)
	if w := b.word.Load(); w&stateMask == stClosed {
		key := (w&^(failMask|stateMask) + genUnit) | stClosed
		b.streak = 0
		b.phase.Store(&phase{key: key, done: b.closedDone(key), since: b.phase.Load().since, sinceMono: b.phase.Load().sinceMono})
		for !b.word.CompareAndSwap(w, key) { // only failure bits can move meanwhile
			w = b.word.Load()
		}
		if b.win != nil {
			b.win.reset(key)
		}
	} else {
		b.transition(stClosed, ReasonForced, now, t, 0, 0, nil, m)
	}
	b.mu.Unlock()
	b.flush()
}

// CloseUnlessHeld is ForceClose for a component that knows its refusals
// are over (a store that finished loading): it closes an open or
// half-open breaker, but leaves a maintenance hold alone, which is the
// operator's to release. It reports whether it made a transition.
func (b *Breaker) CloseUnlessHeld() bool {
	b.mu.Lock()
	now, t := b.clock()
	b.advance(now, t)
	closed := false
	if b.word.Load()&stateMask != stClosed && b.phase.Load().hold == nil {
		b.transition(stClosed, ReasonForced, now, t, 0, 0, nil, Manual{})
		closed = true
	}
	b.mu.Unlock()
	b.flush()
	return closed
}

// Ticket is one call admitted by Admit. Report its outcome exactly once
// with Success, Failure or Neutral; a half-open trial that is never
// reported is reclaimed after Config.TrialLease. The zero Ticket reports
// nothing.
type Ticket struct {
	b   *Breaker
	tok token
}

// Admit is the two-step form of Call for callers that classify outcomes
// themselves (package guard does): it returns a Ticket if the breaker
// admits a call now, otherwise an *OpenError. ShouldCount is not consulted:
// the caller says what the outcome was. While closed, Admit takes no lock
// and allocates nothing.
func (b *Breaker) Admit() (Ticket, error) {
	w := b.word.Load()
	if w&stateMask == stClosed {
		return Ticket{b: b, tok: token{word: w}}, nil
	}
	tok, err := b.admitSlow(w)
	if err != nil {
		return Ticket{}, err
	}
	return Ticket{b: b, tok: tok}, nil
}

// Trial reports whether the ticket is a half-open trial.
func (t Ticket) Trial() bool { return t.tok.ticket != 0 }

// Success records a success.
func (t Ticket) Success() {
	if t.b != nil {
		if t.tok.ticket == 0 && t.b.win == nil && t.b.word.Load() == t.tok.word&^failMask {
			return // closed, same generation, nothing to reset
		}
		t.b.report(t.tok, success, nil)
	}
}

// Failure records a failure caused by cause.
func (t Ticket) Failure(cause error) {
	if t.b != nil {
		t.b.report(t.tok, failure, cause)
	}
}

// Neutral records an outcome that says nothing about the protected
// backend; it still frees a half-open trial slot.
func (t Ticket) Neutral() {
	if t.b != nil {
		t.b.report(t.tok, neutral, nil)
	}
}
