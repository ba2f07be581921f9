package topk_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ragd/ragd/internal/topk"
	"github.com/ragd/ragd/spi"
)

// The heap keeps exactly what a full sort cut at k keeps, ties by id.
func TestRefsMatchesASortedCut(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		n, k := r.IntN(300), r.IntN(40)
		all := make([]spi.Ref, n)
		for i := range all {
			all[i] = spi.Ref{ID: fmt.Sprintf("d%04d", r.IntN(1000)), Score: float64(r.IntN(20))}
		}
		h := topk.New(k)
		for _, ref := range all {
			h.Offer(ref)
		}
		got := h.Sorted()
		want := slices.Clone(all)
		slices.SortFunc(want, func(a, b spi.Ref) int {
			switch {
			case topk.Below(b, a):
				return -1
			case topk.Below(a, b):
				return 1
			}
			return 0
		})
		want = want[:min(k, len(want))]
		if got == nil || !slices.Equal(got, want) {
			t.Fatalf("round %d (n %d k %d): got %v, want %v", round, n, k, got, want)
		}
	}
}

// A heap of another type keeps what a sorted cut keeps, and Worst is the
// k-th best once full.
func TestHeapOfInts(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 100 {
		n, k := r.IntN(200), 1+r.IntN(20)
		all := make([]int, n)
		for i := range all {
			all[i] = r.IntN(50)
		}
		h := topk.NewHeap(k, func(a, b int) bool { return a < b })
		for _, x := range all {
			h.Offer(x)
		}
		want := slices.Clone(all)
		slices.SortFunc(want, func(a, b int) int { return b - a })
		want = want[:min(k, len(want))]
		if w, ok := h.Worst(); h.Full() && (!ok || w != want[len(want)-1]) {
			t.Fatalf("round %d: Worst = %d, %v; want %d", round, w, ok, want[len(want)-1])
		}
		if got := h.Sorted(); !slices.Equal(got, want) {
			t.Fatalf("round %d (n %d k %d): got %v, want %v", round, n, k, got, want)
		}
	}
}
