// Package events keeps the operator's timeline: a bounded, in-memory ring of
// typed events — breaker transitions and bursts of timed-out or shed source
// calls — that the console and GET /v1/status/events read.
//
// Events hold names, states and counts only, never query text, document
// bodies or tenants. The ring forgets the oldest event when it is full; a
// reader that asks for events after a sequence number the ring no longer
// holds is told so (Page.Dropped) instead of silently missing them.
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
)

// Event is one entry of the timeline.
type Event struct {
	// Seq numbers events from 1 in publication order; it never repeats
	// within a process.
	Seq  uint64    `json:"seq"`
	At   time.Time `json:"at"`
	Kind Kind      `json:"kind"`
	// Source is the breaker's or the source's name ("vector", "keyword",
	// "graph", "graph_expand", "embedder").
	Source  string         `json:"source"`
	Breaker *BreakerChange `json:"breaker,omitempty"`
	Burst   *Burst         `json:"burst,omitempty"`
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
	// OpenForMS is the chosen open duration when To is "open".
	OpenForMS int64 `json:"open_for_ms,omitempty"`
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
	return Event{
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
		},
	}
}

// DefaultCapacity is the ring size NewRing uses for a capacity below 1.
const DefaultCapacity = 512

// Ring is the bounded event log. It is safe for concurrent use.
type Ring struct {
	mu   sync.Mutex
	buf  []Event // buf[(seq-1) % len(buf)] holds event seq
	last uint64  // sequence number of the newest event; 0 when empty
	now  func() time.Time
}

// NewRing returns an empty ring holding at most capacity events. now stamps
// events published without a time; nil means time.Now.
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
// e.At is zero, and returns it as stored.
func (r *Ring) Publish(e Event) Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.At.IsZero() {
		e.At = r.now()
	}
	r.last++
	e.Seq = r.last
	r.buf[(r.last-1)%uint64(len(r.buf))] = e
	return e
}

// Page is the answer to Since.
type Page struct {
	// Events are in publication order, oldest first.
	Events []Event `json:"events"`
	// Last is the sequence number of the newest event published so far (0
	// before the first): pass it as after to read only newer events.
	Last uint64 `json:"last"`
	// Dropped: some events newer than after are not in Events, because the
	// ring forgot them or limit cut them off.
	Dropped bool `json:"dropped"`
}

// Since returns the newest events with a sequence number greater than after,
// at most limit of them (no bound when limit < 1), oldest first.
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
	if limit > 0 && r.last-from+1 > uint64(limit) {
		from = r.last - uint64(limit) + 1
	}
	p.Dropped = from > after+1
	p.Events = make([]Event, 0, r.last-from+1)
	for seq := from; seq <= r.last; seq++ {
		p.Events = append(p.Events, r.buf[(seq-1)%uint64(len(r.buf))])
	}
	return p
}
