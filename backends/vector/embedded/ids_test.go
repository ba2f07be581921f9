package embedded

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// checkRowIDs checks rowIDs' invariant (ids.go).
func checkRowIDs(t *rowIDs) error {
	live := 0
	for r, s := range t.span {
		start, n := int(s>>16), int(s&0xffff)
		if start+n > len(t.arena) {
			return fmt.Errorf("row %d: span [%d, %d) past the arena (%d bytes)", r, start, start+n, len(t.arena))
		}
		live += n
	}
	if t.dead != len(t.arena)-live {
		return fmt.Errorf("dead %d, want %d (arena %d, live %d)", t.dead, len(t.arena)-live, len(t.arena), live)
	}
	if 2*len(t.span) > len(t.tab) {
		return fmt.Errorf("%d rows in %d cells: more than half full", len(t.span), len(t.tab))
	}
	seen := make([]bool, len(t.span))
	mask := uint64(len(t.tab) - 1)
	for i, c := range t.tab {
		if c == 0 {
			continue
		}
		r := int(c - 1)
		if r >= len(t.span) || seen[r] {
			return fmt.Errorf("cell %d: row %d out of range or twice", i, r)
		}
		seen[r] = true
		// Reachable from its home cell without crossing an empty cell.
		for j := t.home(t.bytesOf(r)); j != uint64(i); j = (j + 1) & mask {
			if t.tab[j] == 0 {
				return fmt.Errorf("row %d (cell %d) unreachable from its home cell", r, i)
			}
		}
	}
	for r, ok := range seen {
		if !ok {
			return fmt.Errorf("row %d in no cell", r)
		}
	}
	return nil
}

// TestRowIDsFollowModel pushes and swap-removes ids at random (long ids
// too, so that compactions happen) and checks, after every step, the
// invariant and that every id of a plain model slice is found at its row.
func TestRowIDsFollowModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ids := newRowIDs()
	var model []string
	next := 0
	compactions := 0
	for step := range 20000 {
		if len(model) == 0 || r.IntN(5) < 3 {
			id := fmt.Sprintf("doc-%d-%s", next, string(make([]byte, r.IntN(40))))
			next++
			if row := ids.push(id); row != len(model) {
				t.Fatalf("step %d: push gave row %d, want %d", step, row, len(model))
			}
			model = append(model, id)
		} else {
			i := r.IntN(len(model))
			if r.IntN(4) == 0 {
				i = len(model) - 1
			}
			arena := len(ids.arena)
			ids.remove(i)
			if len(ids.arena) < arena {
				compactions++
			}
			model[i] = model[len(model)-1]
			model = model[:len(model)-1]
		}
		if step%50 == 0 || step > 19900 {
			if err := checkRowIDs(&ids); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
		if ids.len() != len(model) {
			t.Fatalf("step %d: %d rows, want %d", step, ids.len(), len(model))
		}
		for _, k := range []int{r.IntN(len(model) + 1), len(model) - 1} {
			if k < 0 || k >= len(model) {
				continue
			}
			if got, ok := ids.find(model[k]); !ok || got != k || ids.id(k) != model[k] {
				t.Fatalf("step %d: find(%q) = %d, %v; want %d", step, model[k], got, ok, k)
			}
		}
		if _, ok := ids.find(fmt.Sprintf("doc-%d-", next)); ok {
			t.Fatalf("step %d: found an id never pushed", step)
		}
	}
	for i, id := range model {
		if got, ok := ids.find(id); !ok || got != i {
			t.Fatalf("final: find(%q) = %d, %v; want %d", id, got, ok, i)
		}
	}
	if compactions == 0 {
		t.Fatal("no compaction happened: the test does not cover it")
	}
	ids.reserve(100000)
	if err := checkRowIDs(&ids); err != nil {
		t.Fatalf("after reserve: %v", err)
	}
}
