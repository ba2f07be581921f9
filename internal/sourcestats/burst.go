package sourcestats

import (
	"time"

	"github.com/ragd/ragd/internal/events"
	"github.com/ragd/ragd/retriever"
)

type burstKey struct {
	source string
	status retriever.Status
}

// burst tracks one source and status.
type burst struct {
	recent []time.Time // the last BurstThreshold calls' times, a ring
	n      int         // calls recorded in recent since the last burst
	active bool
	first  time.Time // active: the burst's first call
	last   time.Time // the latest call
	count  int       // active: calls in the burst
}

// burstCall records one call that ended with status and returns the event
// when it starts a burst. The caller holds w.mu.
func (w *Window) burstCall(source string, status retriever.Status, now time.Time) (events.Event, bool) {
	k := burstKey{source, status}
	b := w.bursts[k]
	if b == nil {
		b = &burst{recent: make([]time.Time, w.cfg.BurstThreshold)}
		w.bursts[k] = b
	}
	b.last = now
	if b.active {
		b.count++
		return events.Event{}, false
	}
	th := len(b.recent)
	b.recent[b.n%th] = now
	b.n++
	oldest := b.recent[b.n%th] // the slot written next holds the oldest
	if b.n < th || now.Sub(oldest) > w.cfg.BurstWindow {
		return events.Event{}, false
	}
	b.active, b.first, b.count = true, oldest, th
	return burstEvent(k, now, events.Burst{Phase: events.BurstStarted, Count: th}), true
}

// endBursts ends the bursts without a call for BurstWindow. The caller
// holds w.mu.
func (w *Window) endBursts(now time.Time) []events.Event {
	var evs []events.Event
	for k, b := range w.bursts {
		if now.Sub(b.last) <= w.cfg.BurstWindow {
			continue
		}
		if b.active {
			evs = append(evs, burstEvent(k, now, events.Burst{
				Phase: events.BurstEnded, Count: b.count, DurationMS: b.last.Sub(b.first).Milliseconds(),
			}))
		}
		delete(w.bursts, k)
	}
	return evs
}

func burstEvent(k burstKey, at time.Time, b events.Burst) events.Event {
	b.Status = string(k.status)
	return events.Event{At: at, Kind: events.KindBurst, Source: k.source, Burst: &b}
}
