// Package events keeps the operator's timeline: a bounded ring of typed
// events — breaker transitions, bursts of timed-out or shed source calls,
// server starts and stops — that the console and GET /v1/status/events
// read. Open keeps the ring in a file as well, so the timeline and its
// sequence numbers survive a restart.
//
// Events hold names, states, counts and the operator's own words for a
// manual action, never query text, document bodies or tenants. The ring
// forgets the oldest event when it is full; a reader that asks for events
// after a sequence number the ring no longer holds is told so
// (Page.Dropped) instead of silently missing them, and a reader paging with
// a limit gets every event in order (Page.More), never a gap.
package events

import (
	"sync"
	"time"

	"github.com/ragd/ragd/breaker"
)

// Kind names what an event is about; it says which payload field is set.
type Kind string

// Event kinds. A new kind adds its own payload field to Event.
const (
	// KindBreaker: a circuit breaker changed state (Event.Breaker).
	KindBreaker Kind = "breaker"
	// KindBurst: a source's calls timed out or were shed repeatedly, or such
	// a burst ended (Event.Burst).
	KindBurst Kind = "burst"
	// KindServer: this ragd started or stopped (Event.Server); Source is
	// "ragd".
	KindServer Kind = "server"
)

// Event is one entry of the timeline.
type Event struct {
	// Seq numbers events from 1 in publication order; it never repeats
	// within a process.
	Seq  uint64    `json:"seq"`
	At   time.Time `json:"at"`
	Kind Kind      `json:"kind"`
	// Source is the breaker's or the source's name ("vector", "keyword",
	// "graph", "graph_expand", "embedder"), or "ragd" for KindServer.
	Source  string         `json:"source"`
	Breaker *BreakerChange `json:"breaker,omitempty"`
	Burst   *Burst         `json:"burst,omitempty"`
	Server  *Server        `json:"server,omitempty"`
}

// Server phases.
const (
	ServerStarted = "started"
	ServerStopped = "stopped"
)

// SourceServer is the Source of KindServer events.
const SourceServer = "ragd"

// Server is the payload of a KindServer event.
type Server struct {
	// Phase is ServerStarted or ServerStopped.
	Phase string `json:"phase"`
	// Instance identifies the process (a new one at every start).
	Instance string `json:"instance"`
	Version  string `json:"version,omitempty"`
}

// BreakerChange is the payload of a KindBreaker event.
type BreakerChange struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason"`
	// Failures is the failure count behind the transition.
	Failures int `json:"failures"`
	// OpenedTotal counts the breaker's trips, this one included.
	OpenedTotal uint64 `json:"opened_total"`
	// OpenForMS is the planned cooldown when To is "open" (none for a
	// hold: it lasts until released).
	OpenForMS int64 `json:"open_for_ms,omitempty"`
	// LastedMS is how long the state left (From) actually lasted.
	LastedMS int64 `json:"lasted_ms"`
	// OutageMS, when To is "closed", is how long the breaker was not
	// closed, across every trial and re-trip.
	OutageMS int64 `json:"outage_ms,omitempty"`
	// By names the API key behind a manual transition (reason "forced" or
	// "held"); Note is the reason its operator gave.
	By   string `json:"by,omitempty"`
	Note string `json:"note,omitempty"`
	// ReleasedHoldOf, on a force-close that ended a maintenance hold,
	// names who had placed the hold.
	ReleasedHoldOf string `json:"released_hold_of,omitempty"`
	// HeldSince, on a hold restored after a restart (reason "held",
	// restored), is when the hold was placed: the restore is not a trip.
	HeldSince *time.Time `json:"held_since,omitempty"`
	Restored  bool       `json:"restored,omitempty"`
}

// Burst phases.
const (
	BurstStarted = "started"
	BurstEnded   = "ended"
)

// Burst is the payload of a KindBurst event.
type Burst struct {
	// Status is the per-query source status that repeated: "timeout" (an
	// operator's deadline; a query's own shorter deadline is
	// "caller_deadline" and makes no burst) or "shed".
	Status string `json:"status"`
	// Phase is BurstStarted or BurstEnded.
	Phase string `json:"phase"`
	// Count is how many such calls the burst held so far: the threshold
	// when it started, the total when it ended.
	Count int `json:"count"`
	// DurationMS is, for an ended burst, the time from its first to its
	// last call.
	DurationMS int64 `json:"duration_ms,omitempty"`
}

// FromTransition turns a breaker transition into a KindBreaker event.
func FromTransition(t breaker.Transition) Event {
	e := Event{
		At:     t.At,
		Kind:   KindBreaker,
		Source: t.Name,
		Breaker: &BreakerChange{
			From:        t.From.String(),
			To:          t.To.String(),
			Reason:      string(t.Reason),
			Failures:    t.Failures,
			OpenedTotal: t.OpenedTotal,
			OpenForMS:   t.OpenFor.Milliseconds(),
			LastedMS:    t.Lasted.Milliseconds(),
			OutageMS:    t.Outage.Milliseconds(),
			By:          t.By,
			Note:        t.Note,
		},
	}
	if t.Released != nil {
		e.Breaker.ReleasedHoldOf = t.Released.By
	}
	if t.Restored != nil {
		since := t.Restored.Since
		e.Breaker.Restored, e.Breaker.HeldSince = true, &since
	}
	return e
}

// DefaultCapacity is the ring size NewRing and Open use for a capacity
// below 1.
const DefaultCapacity = 512

// Ring is the bounded event log. It is safe for concurrent use.
type Ring struct {
	mu   sync.Mutex
	buf  []Event // buf[(seq-1) % len(buf)] holds event seq
	last uint64  // sequence number of the newest event; 0 when empty
	now  func() time.Time
	file *file // nil: memory only
}

// NewRing returns an empty in-memory ring holding at most capacity events.
// now stamps events published without a time; nil means time.Now.
func NewRing(capacity int, now func() time.Time) *Ring {
	if capacity < 1 {
		capacity = DefaultCapacity
	}
	if now == nil {
		now = time.Now
	}
	return &Ring{buf: make([]Event, capacity), now: now}
}

// Publish appends e, numbering it and stamping it with the ring's clock when
// e.At is zero, and returns it as stored. A ring opened with Open also
// appends it to its file; a failed write leaves the event in memory (see
// Err).
func (r *Ring) Publish(e Event) Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.At.IsZero() {
		e.At = r.now()
	}
	r.last++
	e.Seq = r.last
	r.buf[(r.last-1)%uint64(len(r.buf))] = e
	if r.file != nil {
		r.file.append(e, r.held)
	}
	return e
}

// held returns the events the ring holds, oldest first. The caller holds mu.
func (r *Ring) held() []Event {
	size := uint64(len(r.buf))
	from := uint64(1)
	if r.last > size {
		from = r.last - size + 1
	}
	out := make([]Event, 0, r.last-from+1)
	for seq := from; seq <= r.last; seq++ {
		if e := r.buf[(seq-1)%size]; e.Seq == seq { // a file read back may have gaps
			out = append(out, e)
		}
	}
	return out
}

// Page is the answer to Since.
type Page struct {
	// Events are in publication order, oldest first.
	Events []Event `json:"events"`
	// Last is the sequence number of the newest event published so far (0
	// before the first). A Last below the after a reader sent means the
	// timeline started over (a new data directory): read it again from 0.
	Last uint64 `json:"last"`
	// Dropped: events right after after are no longer held (the ring
	// forgot them); Events starts with the oldest one still held.
	Dropped bool `json:"dropped"`
	// More: limit cut the page short; ask again after its last event.
	More bool `json:"more"`
}

// Since returns the events with a sequence number greater than after,
// oldest first, at most limit of them (no bound when limit < 1). Paging
// with the last returned sequence number reads every held event once, in
// order.
func (r *Ring) Since(after uint64, limit int) Page {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := Page{Events: []Event{}, Last: r.last}
	if after >= r.last {
		return p
	}
	from := after + 1 // the oldest event to return
	if size := uint64(len(r.buf)); r.last > size {
		from = max(from, r.last-size+1)
	}
	p.Dropped = from > after+1
	n := r.last - from + 1
	if limit > 0 {
		n = min(n, uint64(limit))
	}
	p.Events = make([]Event, 0, n)
	for seq := from; seq <= r.last; seq++ {
		if limit > 0 && len(p.Events) == limit {
			p.More = true
			break
		}
		if e := r.buf[(seq-1)%uint64(len(r.buf))]; e.Seq == seq { // a file read back may have gaps
			p.Events = append(p.Events, e)
		}
	}
	return p
}
