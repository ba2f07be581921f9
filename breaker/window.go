package breaker

import "sync"

// window is the rolling window of the failure-rate rule: a ring of buckets,
// each covering width nanoseconds of the breaker's monotonic clock. It
// belongs to one closed generation at a time; records for any other
// generation are dropped.
type window struct {
	mu      sync.Mutex
	gen     uint64 // word (state and generation bits) it counts for
	width   int64
	buckets []bucket
}

type bucket struct {
	index           int64 // t / width of the period the counts belong to
	calls, failures int
}

func newWindow(r FailureRate) *window {
	n := r.Buckets
	if n == 0 {
		n = 10
	}
	return &window{width: max(int64(r.Window)/int64(n), 1), buckets: make([]bucket, n)}
}

// reset empties the window and binds it to the generation in word.
func (w *window) reset(word uint64) {
	w.mu.Lock()
	w.gen = word
	clear(w.buckets)
	w.mu.Unlock()
}

// record adds one completed call at monotonic time t for the generation in
// word. For a failure it returns the window's totals afterwards (only a
// failure can trip); ok is false when the record was dropped as stale.
func (w *window) record(word uint64, t int64, failed bool) (calls, failures int, ok bool) {
	t = max(t, 0)
	idx := t / w.width
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gen != word {
		return 0, 0, false
	}
	n := int64(len(w.buckets))
	b := &w.buckets[idx%n]
	if b.index != idx {
		*b = bucket{index: idx}
	}
	b.calls++
	if !failed {
		return 0, 0, true
	}
	b.failures++
	for i := range w.buckets {
		if bb := &w.buckets[i]; bb.index > idx-n && bb.index <= idx {
			calls += bb.calls
			failures += bb.failures
		}
	}
	return calls, failures, true
}
