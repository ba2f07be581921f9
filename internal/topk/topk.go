// Package topk keeps the k best of a stream of ranked refs in a bounded
// heap, so ranking thousands of candidates for a window of 100 sorts only
// those 100. The order is ragd's everywhere: score descending, then id
// ascending.
package topk

import (
	"slices"

	"github.com/ragd/ragd/spi"
)

// Refs is a bounded heap of refs whose root is the worst kept. The zero
// value keeps nothing; create it with New.
type Refs struct {
	k int
	h []spi.Ref
}

// New returns a heap keeping the k best refs offered.
func New(k int) *Refs { return &Refs{k: max(k, 0), h: make([]spi.Ref, 0, min(max(k, 0), 1024))} }

// Below reports whether a ranks below b: a lower score, or on a tie the
// larger id.
func Below(a, b spi.Ref) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return a.ID > b.ID
}

// Offer considers r.
func (t *Refs) Offer(r spi.Ref) {
	h := t.h
	if len(h) < t.k {
		h = append(h, r)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if !Below(h[i], h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		t.h = h
		return
	}
	if t.k == 0 || !Below(h[0], r) {
		return
	}
	h[0] = r
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(h) && Below(h[l], h[m]) {
			m = l
		}
		if l+1 < len(h) && Below(h[l+1], h[m]) {
			m = l + 1
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// Sorted returns the refs kept, best first (never nil). The heap is
// consumed.
func (t *Refs) Sorted() []spi.Ref {
	slices.SortFunc(t.h, func(a, b spi.Ref) int {
		switch {
		case Below(b, a):
			return -1
		case Below(a, b):
			return 1
		}
		return 0
	})
	return t.h
}
