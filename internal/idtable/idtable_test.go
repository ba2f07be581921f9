package idtable_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/ragd/ragd/internal/idtable"
)

// model is what a Table must answer: each entry's id and whether it is
// linked, and the entry of each linked id.
type model struct {
	ids    []string
	linked []bool
	of     map[string]int
}

// driver runs one operation at a time on a Table and the model, and
// checks after each that they agree.
type driver struct {
	tb          testing.TB
	t           idtable.Table
	m           model
	next        int // ids made so far: "id-<next>" was never appended
	compactions int
}

func newDriver(tb testing.TB) *driver {
	return &driver{tb: tb, m: model{of: map[string]int{}}}
}

// step applies operation op with argument arg (any values: they are
// brought into range), then checks the table against the model.
func (d *driver) step(op, arg int, long bool) {
	d.tb.Helper()
	m := &d.m
	n := len(m.ids)
	switch op % 6 {
	case 0, 1: // append a new id, or one that no linked entry holds
		id := fmt.Sprintf("id-%d", d.next)
		if long {
			id += strings.Repeat("x", arg%1000)
		}
		reuse := op%6 == 1 && n > 0
		if reuse {
			_, taken := m.of[m.ids[arg%n]]
			reuse = !taken
		}
		if reuse {
			id = m.ids[arg%n]
		} else {
			d.next++
		}
		if e := d.t.Append(id); e != n {
			d.tb.Fatalf("Append(%q) = %d, want %d", id, e, n)
		}
		m.ids, m.linked = append(m.ids, id), append(m.linked, true)
		m.of[id] = n
	case 2: // unlink a linked entry
		if n == 0 || !m.linked[arg%n] {
			return
		}
		e := arg % n
		d.t.Unlink(e)
		m.linked[e] = false
		delete(m.of, m.ids[e])
	case 3: // swap-remove any entry, the last one often
		if n == 0 {
			return
		}
		e := arg % n
		if arg%4 == 0 {
			e = n - 1
		}
		before := d.t.Footprint().Arena
		d.t.SwapRemove(e)
		if d.t.Footprint().Arena < before {
			d.compactions++
		}
		if m.linked[e] {
			delete(m.of, m.ids[e])
		}
		m.ids[e], m.linked[e] = m.ids[n-1], m.linked[n-1]
		m.ids, m.linked = m.ids[:n-1], m.linked[:n-1]
		if e < n-1 && m.linked[e] {
			m.of[m.ids[e]] = e
		}
	case 4: // reserve room
		d.t.Reserve(arg%100, arg%1000)
	case 5: // look up an id never appended, and one of the model's
		if e, ok := d.t.Lookup(fmt.Sprintf("id-%d", d.next)); ok {
			d.tb.Fatalf("Lookup of an id never appended found entry %d", e)
		}
		if n > 0 {
			id := m.ids[arg%n]
			e, ok := d.t.Lookup(id)
			if want, wok := m.of[id]; ok != wok || e != want {
				d.tb.Fatalf("Lookup(%q) = %d, %v; want %d, %v", id, e, ok, want, wok)
			}
		}
	}
	d.check()
}

// check compares the table with the model: the invariant, the counts,
// and every entry's id and lookup.
func (d *driver) check() {
	d.tb.Helper()
	if err := d.t.Check(); err != nil {
		d.tb.Fatal(err)
	}
	if d.t.Len() != len(d.m.ids) || d.t.Linked() != len(d.m.of) {
		d.tb.Fatalf("Len %d, Linked %d; model %d, %d", d.t.Len(), d.t.Linked(), len(d.m.ids), len(d.m.of))
	}
	for e, id := range d.m.ids {
		if got := d.t.String(e); got != id {
			d.tb.Fatalf("entry %d holds %q, want %q", e, got, id)
		}
	}
	for id, want := range d.m.of {
		if e, ok := d.t.Lookup(id); !ok || e != want {
			d.tb.Fatalf("Lookup(%q) = %d, %v; want %d", id, e, ok, want)
		}
	}
}

// Random operations, checked against the model after every one: appends
// of new and of unlinked ids, unlinks, swap-removes (long ids too, so
// that the arena is compacted), reserves and lookups.
func TestTableFollowsModel(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			d := newDriver(t)
			// Grow, then shrink: appends outweigh removals, then the
			// other way round.
			grow, shrink := []int{0, 0, 1, 1, 2, 3, 4, 5}, []int{0, 1, 2, 3, 3, 3, 3, 4, 5}
			for i := range 3000 {
				ops := grow
				if i%1000 >= 600 {
					ops = shrink
				}
				d.step(ops[r.IntN(len(ops))], r.IntN(1<<20), true)
			}
			t.Logf("%d entries, %d compactions", d.t.Len(), d.compactions)
			if d.compactions == 0 {
				t.Fatal("no compaction happened: the test does not cover it")
			}
		})
	}
}

// Fuzzed operation sequences, on ids short enough to collide in the
// same cells often.
func FuzzTable(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 2, 0, 1, 0, 3, 3, 5, 0})
	f.Add([]byte{0, 9, 0, 8, 0, 7, 2, 1, 3, 0, 1, 1, 5, 2})
	f.Fuzz(func(t *testing.T, ops []byte) {
		d := newDriver(t)
		for i := 0; i+1 < len(ops) && i < 2000; i += 2 {
			d.step(int(ops[i]), int(ops[i+1]), false)
		}
	})
}

// The zero Table is empty and usable; growth keeps the table at most
// half full and every id found; unlink and swap-remove at the edges.
func TestTableBasics(t *testing.T) {
	var tab idtable.Table
	if _, ok := tab.Lookup("a"); ok || tab.Len() != 0 || tab.Linked() != 0 {
		t.Fatal("zero Table not empty")
	}
	if err := tab.Check(); err != nil {
		t.Fatal(err)
	}
	const n = 100000
	for i := range n {
		if e := tab.Append(fmt.Sprintf("d%07d", i)); e != i {
			t.Fatalf("Append gave %d, want %d", e, i)
		}
	}
	if err := tab.Check(); err != nil {
		t.Fatal(err)
	}
	if got := tab.Footprint().Cells; got != 4*(1<<18) {
		t.Fatalf("%d ids in %d bytes of cells, want 2^18 cells", n, got)
	}
	for i := range n {
		id := fmt.Sprintf("d%07d", i)
		if e, ok := tab.Lookup(id); !ok || e != i || tab.String(e) != id {
			t.Fatalf("Lookup(%q) = %d, %v", id, e, ok)
		}
	}
	b := tab.Bytes(5)
	if len(b) != cap(b) {
		t.Fatalf("Bytes' capacity %d past its id (%d): an append would write the arena", cap(b), len(b))
	}

	tab.Unlink(0)
	if _, ok := tab.Lookup("d0000000"); ok || tab.String(0) != "d0000000" || tab.Linked() != n-1 {
		t.Fatal("unlinked entry still found, or its id lost")
	}
	tab.SwapRemove(n - 1) // the last entry: nothing moves
	tab.SwapRemove(0)     // an unlinked entry: the last moves in
	if e, ok := tab.Lookup(fmt.Sprintf("d%07d", n-2)); !ok || e != 0 || tab.Len() != n-2 {
		t.Fatalf("after swap-removes: last id at %d, %v; Len %d", e, ok, tab.Len())
	}
	if err := tab.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestTablePanics(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", name)
			}
		}()
		f()
	}
	var tab idtable.Table
	tab.Append("a")
	tab.Unlink(0)
	mustPanic("Unlink of an unlinked entry", func() { tab.Unlink(0) })
	mustPanic("Append of an id past MaxLen", func() { tab.AppendBytes(make([]byte, idtable.MaxLen+1)) })
	if e := tab.AppendBytes(make([]byte, 1000)); e != 1 {
		t.Fatalf("Append after the panics gave %d", e)
	}
	if err := tab.Check(); err != nil {
		t.Fatal(err)
	}
}

// After Reserve, appending that many ids allocates nothing.
func TestReserve(t *testing.T) {
	var tab idtable.Table
	tab.Append("first")
	tab.Reserve(2000, 2000*8)
	i := 0
	allocs := testing.AllocsPerRun(1, func() {
		var id [8]byte
		for range 1000 {
			binary.BigEndian.PutUint64(id[:], uint64(i))
			i++
			tab.AppendBytes(id[:])
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations appending reserved ids", allocs)
	}
	if err := tab.Check(); err != nil {
		t.Fatal(err)
	}
}

// A frozen view is read on one goroutine while the table appends and
// unlinks on another, with nothing ordering them: the race detector
// checks Frozen's claim that those writes never touch what the view
// reads, and the view must answer as the table did when frozen.
func TestFrozenBesideWrites(t *testing.T) {
	var tab idtable.Table
	const n = 5000
	for i := range n {
		tab.Append(fmt.Sprint("doc-", i))
	}
	view := tab.Frozen()
	if _, ok := view.Lookup("doc-1"); ok {
		t.Fatal("a frozen view's Lookup found an entry")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	wg.Go(func() {
		for round := range 20 {
			for e := range view.Len() {
				if got, want := view.String(e), fmt.Sprint("doc-", e); got != want {
					errs <- fmt.Errorf("round %d: view entry %d holds %q, want %q", round, e, got, want)
					return
				}
			}
		}
	})
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		tab.Append(fmt.Sprint("new-", i))
		e := r.IntN(tab.Len())
		if got, ok := tab.Lookup(tab.String(e)); ok && got == e {
			tab.Unlink(e)
		}
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if view.Len() != n {
		t.Fatalf("view has %d entries, frozen with %d", view.Len(), n)
	}
	if err := tab.Check(); err != nil {
		t.Fatal(err)
	}
}

// Lookups on many goroutines at once, nothing writing: the race detector
// checks that a lookup writes nothing.
func TestConcurrentLookups(t *testing.T) {
	var tab idtable.Table
	for i := range 10000 {
		tab.Append(fmt.Sprint("doc-", i))
	}
	var wg sync.WaitGroup
	var bad sync.Map
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < 10000; i += 3 {
				if e, ok := tab.Lookup(fmt.Sprint("doc-", i)); !ok || e != i {
					bad.Store(i, e)
				}
			}
		})
	}
	wg.Wait()
	bad.Range(func(k, v any) bool {
		t.Errorf("Lookup(doc-%v) = %v", k, v)
		return true
	})
}
