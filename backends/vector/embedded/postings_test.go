package embedded

import (
	"context"
	"fmt"
	"maps"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ragd/ragd/spi"
)

// TestPostingsFollowRows drives the index through random inserts, replaces
// (new metadata, the same, none), retags (rows near the front given a
// value few others hold, the shape of issue 29's "version=2" after a
// re-ingest), deletes (a random row, the last row, an absent id), shrinks
// (the last half of the rows at once, then as many inserts) and finally deletes every row; after
// each step it checks the postings' invariant (postings.go) and the
// postings against a model holding each id's metadata in a plain map:
// every posting holds exactly the rows carrying its pair, and every
// filter's rows, taken from the postings, from a scan of a random range and
// from a whole filtered search, are the rows whose metadata
// spi.Filter.Match accepts.
func TestPostingsFollowRows(t *testing.T) {
	const dim = 4
	r := rand.New(rand.NewPCG(1, 2))
	ix := newIndex(dim, false)
	model := map[string]map[string]string{}
	nextID, nextUnique := 0, 0

	randMeta := func() map[string]string {
		if r.IntN(10) == 0 {
			return nil
		}
		md := map[string]string{"c": []string{"a", "b", "c"}[r.IntN(3)], "ver": "1"} // dense postings
		if r.IntN(20) == 0 {
			md["rare"] = "yes"
		}
		if r.IntN(2) == 0 {
			md["m"] = fmt.Sprint("v", r.IntN(20)) // lists
		}
		if r.IntN(3) == 0 {
			nextUnique++
			md["u"] = fmt.Sprint("u", nextUnique) // one row each
		}
		return md
	}
	put := func(id string, md map[string]string) {
		vec := make([]float32, dim)
		for i := range vec {
			vec[i] = r.Float32()
		}
		ix.put(id, "", md, vec)
		model[id] = md
	}
	del := func(id string) {
		ix.remove(id)
		delete(model, id)
	}
	randID := func() string {
		if len(ix.ids) == 0 {
			return "absent"
		}
		return ix.ids[r.IntN(len(ix.ids))]
	}
	filters := func() []spi.Filter {
		fs := []spi.Filter{
			{"c": {"a"}}, {"c": {"b", "c"}}, {"rare": {"yes"}}, {"rare": {"no"}},
			{"nokey": {"x"}}, {"c": {"a"}, "rare": {"yes"}}, {"c": {"a", "b"}, "m": {"v1", "v2", "v3"}},
			{"m": {fmt.Sprint("v", r.IntN(21))}}, {"u": {fmt.Sprint("u", r.IntN(nextUnique+2))}},
			{"c": {"c"}, "m": {"v0", "v19"}, "rare": {"yes"}},
			{"ver": {"2"}}, {"ver": {"1", "2"}}, {"ver": {"2"}, "c": {"a"}},
		}
		if id := randID(); model[id] != nil {
			f := spi.Filter{}
			for k, v := range model[id] {
				f[k] = []string{v, "other"}
			}
			fs = append(fs, f)
		}
		return fs
	}

	check := func(step string) {
		t.Helper()
		if len(ix.ids) != len(model) {
			t.Fatalf("%s: %d rows, model %d", step, len(ix.ids), len(model))
		}
		if err := checkPostings(ix.post, len(ix.ids)); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		// Every posting holds exactly the rows carrying its pair.
		want := map[pair][]int{}
		for i, id := range ix.ids {
			for k, v := range model[id] {
				want[pair{k, v}] = append(want[pair{k, v}], i)
			}
		}
		if len(ix.post) != len(want) {
			t.Fatalf("%s: %d postings, want %d", step, len(ix.post), len(want))
		}
		for pk, rows := range want {
			p := ix.post[pk]
			if p == nil {
				t.Fatalf("%s: no posting for %v", step, pk)
			}
			got := postingRows(p)
			if p.n != len(got) || !slices.Equal(got, rows) {
				t.Fatalf("%s: posting %v = %v (n %d), want %v", step, pk, got, p.n, rows)
			}
		}
		// Every filter's rows, whole and over a random range of the scan.
		n := len(ix.ids)
		for _, f := range filters() {
			var matching []int
			for i, id := range ix.ids {
				if f.Match(model[id]) {
					matching = append(matching, i)
				}
			}
			terms := compileFilter(f)
			got := bitsRows(ix.post.rows(terms, n))
			if !slices.Equal(got, matching) {
				t.Fatalf("%s: filter %v: rows %v, want %v", step, f, got, matching)
			}
			lo := r.IntN(n + 1)
			hi := lo + r.IntN(n-lo+1)
			q := query{vec: make([]float32, dim), k: n + 1, anyTen: true, filter: terms, rows: ix.post.rows(terms, n)}
			qq := newQuantQuery(q.vec)
			cands, err := ix.scanRange(context.Background(), q, &qq, lo, hi, newLowerBounds(q.k))
			if err != nil {
				t.Fatal(err)
			}
			var scanned []int
			for _, c := range cands {
				scanned = append(scanned, c.row)
			}
			slices.Sort(scanned)
			inRange := slices.DeleteFunc(slices.Clone(matching), func(i int) bool { return i < lo || i >= hi })
			if !slices.Equal(scanned, inRange) {
				t.Fatalf("%s: filter %v over [%d, %d): rows %v, want %v", step, f, lo, hi, scanned, inRange)
			}
			// A whole search, as Retrieve runs it (split in three).
			q.rows = nil
			ids, err := ix.candidates(context.Background(), q, 3)
			if err != nil {
				t.Fatal(err)
			}
			var searched []int
			for _, id := range ids {
				searched = append(searched, ix.pos[id])
			}
			slices.Sort(searched)
			if !slices.Equal(searched, matching) {
				t.Fatalf("%s: filter %v: search found rows %v, want %v", step, f, searched, matching)
			}
		}
	}

	step := 0
	do := func(what string, op func()) {
		step++
		op()
		check(fmt.Sprintf("step %d (%s)", step, what))
	}
	// Grow past the size where the common values' postings become bitsets.
	for range 700 {
		do("insert", func() { nextID++; put(fmt.Sprint("d", nextID), randMeta()) })
	}
	for range 1500 {
		switch k := r.IntN(10); {
		case k < 3:
			do("insert", func() { nextID++; put(fmt.Sprint("d", nextID), randMeta()) })
		case k < 5:
			do("replace", func() { put(randID(), randMeta()) })
		case k < 6:
			do("replace same", func() {
				id := randID()
				if md, ok := model[id]; ok {
					put(id, md)
				}
			})
		case k < 8:
			do("delete", func() { del(randID()) })
		case k < 9:
			do("delete last", func() {
				if n := len(ix.ids); n > 0 {
					del(ix.ids[n-1])
				}
			})
		default:
			do("delete absent", func() { del("absent") })
		}
		switch r.IntN(25) {
		case 0:
			do("retag", func() {
				// A few rows of the first quarter take ver=2, enough
				// for its set to become a bitset sized for every row.
				for range 1 + r.IntN(40) {
					if n := len(ix.ids); n > 0 {
						id := ix.ids[r.IntN(n/4+1)]
						md := maps.Clone(model[id])
						if md == nil {
							md = map[string]string{}
						}
						md["ver"] = "2"
						put(id, md)
					}
				}
			})
		case 1:
			// Half the rows go from the end, then as many new rows come.
			gone := len(ix.ids) / 2
			do("shrink", func() {
				for range gone {
					del(ix.ids[len(ix.ids)-1])
				}
			})
			do("regrow", func() {
				for range gone {
					nextID++
					put(fmt.Sprint("d", nextID), randMeta())
				}
			})
		}
	}
	// Shrink to nothing: the bitsets turn back into lists, then go.
	for len(ix.ids) > 0 {
		if r.IntN(4) == 0 {
			do("delete last", func() { del(ix.ids[len(ix.ids)-1]) })
		} else {
			do("delete", func() { del(randID()) })
		}
	}
	if len(ix.post) != 0 {
		t.Fatalf("empty index keeps %d postings", len(ix.post))
	}
}

// checkPostings checks the invariant written beside posting (postings.go)
// for an index of nrows rows.
func checkPostings(ps postings, nrows int) error {
	for pk, p := range ps {
		if p.bits != nil && p.rows != nil {
			return fmt.Errorf("posting %v holds both a list and a bitset", pk)
		}
		got := postingRows(p)
		if p.n < 1 || p.n != len(got) {
			return fmt.Errorf("posting %v: n %d, holds %d rows", pk, p.n, len(got))
		}
		for i, x := range got {
			if x < 0 || x >= nrows {
				return fmt.Errorf("posting %v holds row %d of %d", pk, x, nrows)
			}
			if i > 0 && got[i-1] == x {
				return fmt.Errorf("posting %v lists row %d twice", pk, x)
			}
		}
		if p.bits != nil {
			if p.bits[len(p.bits)-1] == 0 {
				return fmt.Errorf("posting %v: bitset of %d words ends in a zero word", pk, len(p.bits))
			}
			if len(p.bits) > (nrows+63)>>6 {
				return fmt.Errorf("posting %v: bitset of %d words for %d rows", pk, len(p.bits), nrows)
			}
		}
	}
	return nil
}

// postingRows lists a posting's rows in order.
func postingRows(p *posting) []int {
	if p.bits == nil {
		rows := make([]int, 0, len(p.rows))
		for _, x := range p.rows {
			rows = append(rows, int(x))
		}
		slices.Sort(rows)
		return rows
	}
	return bitsRows(p.bits)
}

func bitsRows(b []uint64) []int {
	var rows []int
	for w, x := range b {
		for ; x != 0; x &= x - 1 {
			rows = append(rows, w<<6+bits.TrailingZeros64(x))
		}
	}
	return rows
}

// TestPostingsTurnDenseAndBack checks that the test above reaches both
// forms: a pair held by a third of 700 rows is a bitset, and a list again
// once few rows hold it.
func TestPostingsTurnDenseAndBack(t *testing.T) {
	ix := newIndex(2, false)
	for i := range 700 {
		ix.put(fmt.Sprint(i), "", map[string]string{"c": fmt.Sprint(i % 3)}, []float32{1, 0})
	}
	if p := ix.post[pair{"c", "0"}]; p.bits == nil || p.n != 234 {
		t.Fatalf("c=0 with 234 of 700 rows: bits %v, n %d", p.bits != nil, p.n)
	}
	for i := range 650 {
		ix.remove(fmt.Sprint(i))
	}
	if p := ix.post[pair{"c", "0"}]; p.bits != nil || p.n != 17 || len(p.rows) != 17 {
		t.Fatalf("c=0 with 17 of 50 rows: bits %v, n %d, %d listed", p.bits != nil, p.n, len(p.rows))
	}
}
