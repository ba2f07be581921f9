// Package topk keeps the k best of a stream in a bounded heap, so ranking
// thousands of candidates for a window of 100 sorts only those 100. It is
// ragd's one top-k: Refs ranks spi.Refs in ragd's order everywhere (score
// descending, then id ascending); Heap ranks anything by a given order.
package topk

import (
	"slices"

	"github.com/ragd/ragd/spi"
)

// Heap is a bounded heap of the k best values offered, whose root is the
// worst kept. The zero value keeps nothing; create it with NewHeap.
type Heap[T any] struct {
	k     int
	h     []T
	below func(a, b T) bool
}

// NewHeap returns a heap keeping the k best values offered, where
// below(a, b) reports that a ranks below b. below must be a strict order;
// values it cannot tell apart are kept in no particular order.
func NewHeap[T any](k int, below func(a, b T) bool) *Heap[T] {
	k = max(k, 0)
	return &Heap[T]{k: k, h: make([]T, 0, min(k, 1024)), below: below}
}

// Len is the number of values kept.
func (t *Heap[T]) Len() int { return len(t.h) }

// Full reports whether k values are kept, so that a value must beat
// Worst to get in.
func (t *Heap[T]) Full() bool { return len(t.h) == t.k }

// Worst returns the worst value kept (the k-th best once Full); false
// when nothing is kept.
func (t *Heap[T]) Worst() (T, bool) {
	if len(t.h) == 0 {
		var zero T
		return zero, false
	}
	return t.h[0], true
}

// Kept returns the values kept, in no particular order; the slice is the
// heap's own and must not be modified.
func (t *Heap[T]) Kept() []T { return t.h }

// Offer considers x.
func (t *Heap[T]) Offer(x T) {
	h := t.h
	if len(h) < t.k {
		h = append(h, x)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if !t.below(h[i], h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		t.h = h
		return
	}
	if t.k == 0 || !t.below(h[0], x) {
		return
	}
	h[0] = x
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(h) && t.below(h[l], h[m]) {
			m = l
		}
		if l+1 < len(h) && t.below(h[l+1], h[m]) {
			m = l + 1
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// Sorted returns the values kept, best first (never nil). The heap is
// consumed.
func (t *Heap[T]) Sorted() []T {
	if t.h == nil {
		t.h = []T{}
	}
	slices.SortFunc(t.h, func(a, b T) int {
		switch {
		case t.below(b, a):
			return -1
		case t.below(a, b):
			return 1
		}
		return 0
	})
	return t.h
}

// Refs is a heap of refs in ragd's order.
type Refs = Heap[spi.Ref]

// New returns a heap keeping the k best refs offered.
func New(k int) *Refs { return NewHeap(k, Below) }

// Below reports whether a ranks below b: a lower score, or on a tie the
// larger id.
func Below(a, b spi.Ref) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return a.ID > b.ID
}
