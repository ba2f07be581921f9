package embedded

import (
	"context"
	"fmt"
	"maps"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/ragd/ragd/spi"
)

// TestIndexFollowsRows drives the index through random inserts, replaces
// (new metadata, the same, none; another tenant), retags (rows near the
// front given a value few others hold, the shape of issue 29's
// "version=2" after a re-ingest), deletes (a random row, the last row, an
// absent id), shrinks (the last half of the rows at once, then as many
// inserts), IVF builds (centroids trained on a sample, then rows assigned
// a chunk at a time between the other operations, as a Store's background
// build does) and finally deletes every row. After each step it checks
// the invariants written beside posting (postings.go) and ivf (ivf.go),
// and the index against a model holding each id's tenant and metadata in
// plain maps: every posting holds exactly the rows carrying its pair (or
// tenant), every assigned row is in the list of its nearest centroid, and
// every filter's rows, taken from the postings, from a scan of a random
// range, from a probe of every list and from a whole search, are the
// rows of the tenant whose metadata spi.Filter.Match accepts.
func TestIndexFollowsRows(t *testing.T) {
	const dim = 4
	r := rand.New(rand.NewPCG(1, 2))
	ix := newIndex(dim, true)
	model := map[string]spi.Metadata{}
	tenant := map[string]string{}
	nextID, nextUnique := 0, 0
	vids, nextVid := map[string]uint64{}, uint64(1) // each put's vector entry
	tenants := []string{"", "t1", "t2", "t2", "t2"}

	randMeta := func() spi.Metadata {
		if r.IntN(10) == 0 {
			return nil
		}
		md := spi.Metadata{"c": spi.String([]string{"a", "b", "c"}[r.IntN(3)]), "ver": spi.String("1")} // dense postings
		if r.IntN(20) == 0 {
			md["rare"] = spi.String("yes")
		}
		if r.IntN(2) == 0 {
			md["m"] = spi.String(fmt.Sprint("v", r.IntN(20))) // lists
		}
		if r.IntN(3) == 0 {
			nextUnique++
			md["u"] = spi.String(fmt.Sprint("u", nextUnique)) // one row each
		}
		// Typed values: numbers (an integral float equals its integer),
		// a list with repeated items, a time.
		switch r.IntN(3) {
		case 0:
			md["n"] = spi.Int(int64(r.IntN(10)))
		case 1:
			md["n"] = spi.Float(float64(r.IntN(20)) / 2)
		}
		if r.IntN(2) == 0 {
			md["l"] = spi.List(spi.Int(int64(r.IntN(3))), spi.String("x"), spi.Int(int64(r.IntN(3))))
		}
		if r.IntN(4) == 0 {
			md["t"] = spi.MustTime(time.Unix(int64(r.IntN(5))*3600, 0))
		}
		return md
	}
	randTenant := func() string {
		if r.IntN(50) == 0 {
			return "rare"
		}
		return tenants[r.IntN(len(tenants))]
	}
	put := func(id, ten string, md spi.Metadata) {
		vec := make([]float32, dim)
		for i := range vec {
			vec[i] = float32(r.NormFloat64())
		}
		ix.put(id, ten, md, vec, nextVid)
		model[id], tenant[id], vids[id] = md, ten, nextVid
		nextVid++
	}
	del := func(id string) {
		ix.remove(id)
		delete(model, id)
		delete(tenant, id)
		delete(vids, id)
	}
	randID := func() string {
		if ix.len() == 0 {
			return "absent"
		}
		return ix.ids.String(r.IntN(ix.len()))
	}
	filters := func() []spi.Filter {
		fs := []spi.Filter{{}} // the empty filter: every row (of the tenant)
		for _, m := range []map[string][]string{
			{"c": {"a"}}, {"c": {"b", "c"}}, {"rare": {"yes"}}, {"rare": {"no"}},
			{"nokey": {"x"}}, {"c": {"a"}, "rare": {"yes"}}, {"c": {"a", "b"}, "m": {"v1", "v2", "v3"}},
			{"m": {fmt.Sprint("v", r.IntN(21))}}, {"u": {fmt.Sprint("u", r.IntN(nextUnique+2))}},
			{"c": {"c"}, "m": {"v0", "v19"}, "rare": {"yes"}},
			{"ver": {"2"}}, {"ver": {"1", "2"}}, {"ver": {"2"}, "c": {"a"}},
		} {
			fs = append(fs, spi.StringFilter(m))
		}
		ops := []spi.CmpOp{spi.OpGt, spi.OpGte, spi.OpLt, spi.OpLte}
		fs = append(fs,
			spi.Eq("n", spi.Int(int64(r.IntN(10)))), spi.Eq("n", spi.Float(float64(r.IntN(20))/2)),
			spi.Cmp("n", ops[r.IntN(4)], spi.Float(float64(r.IntN(20))/2)),
			spi.Cmp("l", ops[r.IntN(4)], spi.Int(1)), spi.In("l", spi.String("x")), spi.Eq("l", spi.Int(2)),
			spi.Cmp("t", ops[r.IntN(4)], spi.MustTime(time.Unix(int64(r.IntN(5))*3600, 0))),
			spi.Exists("n"), spi.Not(spi.Exists("l")), spi.Ne("c", spi.String("a")),
			spi.Or(spi.Eq("rare", spi.String("yes")), spi.Lt("n", spi.Int(2))),
			spi.Not(spi.And(spi.Exists("t"), spi.Gte("n", spi.Int(5)))),
		)
		if id := randID(); model[id] != nil {
			var parts []spi.Filter
			for k, v := range model[id] {
				parts = append(parts, spi.In(k, append(v.Scalars(), spi.String("other"))...))
			}
			fs = append(fs, spi.And(parts...))
		}
		return fs
	}

	check := func(step string) {
		t.Helper()
		n := ix.len()
		if n != len(model) {
			t.Fatalf("%s: %d rows, model %d", step, n, len(model))
		}
		if err := ix.ids.Check(); err != nil {
			t.Fatalf("%s: ids: %v", step, err)
		}
		if ix.ids.Linked() != n {
			t.Fatalf("%s: %d of %d rows' ids linked", step, ix.ids.Linked(), n)
		}
		for id := range model {
			if r, ok := ix.ids.Lookup(id); !ok || ix.ids.String(r) != id {
				t.Fatalf("%s: id %q not found at its row (%d, %v)", step, id, r, ok)
			}
		}
		// Every row's vid is its last put's.
		if len(ix.vids) != n {
			t.Fatalf("%s: %d vids for %d rows", step, len(ix.vids), n)
		}
		for i := range n {
			if id := ix.ids.String(i); ix.vids[i] != vids[id] {
				t.Fatalf("%s: row %d (%q) has vid %d, want %d", step, i, id, ix.vids[i], vids[id])
			}
		}
		if err := checkMetaSet(ix); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if err := checkPostings(ix.post, n); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if err := checkIVF(ix, ix.ivf, n, n); err != nil {
			t.Fatalf("%s: ivf: %v", step, err)
		}
		if ix.next != nil {
			if err := checkIVF(ix, ix.next, n, ix.next.cursor); err != nil {
				t.Fatalf("%s: next: %v", step, err)
			}
		}
		// Every posting holds exactly the rows carrying its pair.
		want := map[pair][]int{}
		for i := range n {
			id := ix.ids.String(i)
			for pk := range rowPairs(model[id]) {
				want[pk] = append(want[pk], i)
			}
			tp := tenantPair(tenant[id])
			want[tp] = append(want[tp], i)
		}
		if len(ix.post.m) != len(want) {
			t.Fatalf("%s: %d postings, want %d", step, len(ix.post.m), len(want))
		}
		for pk, rows := range want {
			p := ix.post.m[pk]
			if p == nil {
				t.Fatalf("%s: no posting for %v", step, pk)
			}
			got := postingRows(p)
			if p.n != len(got) || !slices.Equal(got, rows) {
				t.Fatalf("%s: posting %v = %v (n %d), want %v", step, pk, got, p.n, rows)
			}
		}
		// Every filter's rows, of every tenant or one: from the postings,
		// over a random range of the scan, from a probe of every list
		// and from a whole search.
		for _, f := range filters() {
			ten, anyTen := randTenant(), r.IntN(3) == 0
			var matching []int
			for i := range ix.len() {
				if id := ix.ids.String(i); f.Match(model[id]) && (anyTen || tenant[id] == ten) {
					matching = append(matching, i)
				}
			}
			q := query{vec: make([]float32, dim), k: n + 1, anyTen: anyTen, tenantName: ten, filter: f}
			q.tenant = ix.tenantIDs[ten]
			if e := q.eligibleExpr(); e != nil {
				q.rows = ix.post.rows(e, n)
				if got := bitsRows(q.rows); !slices.Equal(got, matching) {
					t.Fatalf("%s: filter %v tenant %q: rows %v, want %v", step, f, ten, got, matching)
				}
			}
			q.vec[r.IntN(dim)] = 1
			qq := newQuantQuery(q.vec)
			lo := r.IntN(n + 1)
			hi := lo + r.IntN(n-lo+1)
			cands, err := ix.scanRange(context.Background(), q, &qq, lo, hi, newLowerBounds(q.k))
			if err != nil {
				t.Fatal(err)
			}
			inRange := slices.DeleteFunc(slices.Clone(matching), func(i int) bool { return i < lo || i >= hi })
			if got := candRows(cands); !slices.Equal(got, inRange) {
				t.Fatalf("%s: filter %v over [%d, %d): rows %v, want %v", step, f, lo, hi, got, inRange)
			}
			if ix.ivf != nil {
				for _, dense := range []bool{false, true} {
					cands, seen, err := ix.probe(context.Background(), q, &qq, newLowerBounds(q.k), ix.ivf.nlist(), n+1, dense)
					if err != nil {
						t.Fatal(err)
					}
					if got := candRows(cands); !slices.Equal(got, matching) || seen != len(matching) {
						t.Fatalf("%s: filter %v: a probe (dense %v) of every list found rows %v (saw %d), want %v", step, f, dense, got, seen, matching)
					}
				}
			}
			// A whole search, as Retrieve runs it (split in three).
			q.rows = nil
			ids, _, _, err := ix.candidates(context.Background(), q, 3)
			if err != nil {
				t.Fatal(err)
			}
			var searched []int
			for _, id := range ids {
				r, _ := ix.ids.Lookup(id)
				searched = append(searched, r)
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
	insert := func() { nextID++; put(fmt.Sprint("d", nextID), randTenant(), randMeta()) }
	// Grow past the size where the common values' postings become bitsets.
	for range 700 {
		do("insert", insert)
	}
	for range 1500 {
		switch k := r.IntN(10); {
		case k < 3:
			do("insert", insert)
		case k < 5:
			do("replace", func() {
				id := randID()
				ten := tenant[id]
				if r.IntN(5) == 0 {
					ten = randTenant()
				}
				put(id, ten, randMeta())
			})
		case k < 6:
			do("replace same", func() {
				id := randID()
				if md, ok := model[id]; ok {
					put(id, tenant[id], md)
				}
			})
		case k < 8:
			do("delete", func() { del(randID()) })
		case k < 9:
			do("delete last", func() {
				if n := ix.len(); n > 0 {
					del(ix.ids.String(n - 1))
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
					if n := ix.len(); n > 0 {
						id := ix.ids.String(r.IntN(n/4 + 1))
						md := maps.Clone(model[id])
						if md == nil {
							md = spi.Metadata{}
						}
						md["ver"] = spi.String("2")
						put(id, tenant[id], md)
					}
				}
			})
		case 1:
			// Half the rows go from the end, then as many new rows come.
			gone := ix.len() / 2
			do("shrink", func() {
				for range gone {
					del(ix.ids.String(ix.len() - 1))
				}
			})
			do("regrow", func() {
				for range gone {
					insert()
				}
			})
		case 2:
			if ix.next == nil {
				do("train", func() {
					nlist := 1 + r.IntN(12)
					cent, err := kmeans(context.Background(), ix.drawSample(8*nlist, r), nlist, 4, true, r)
					if err != nil {
						t.Fatal(err)
					}
					ix.next = newIVF(cent, dim, false, ix.len(), ix.len())
				})
			}
		case 3, 4, 5:
			if ix.next != nil {
				do("assign", func() {
					if ix.assignNext(1 + r.IntN(300)) {
						freeCodes(ix.install(ix.regroup(ix.next)))
					}
				})
			}
		case 6:
			if ix.ivf != nil && r.IntN(4) == 0 {
				do("drop ivf", func() { ix.ivf = nil })
			}
		}
	}
	if ix.ivf == nil {
		t.Fatal("no IVF was ever completed: the test does not reach the searches that probe one")
	}
	// Shrink to nothing: the bitsets turn back into lists, then go.
	for ix.len() > 0 {
		if r.IntN(4) == 0 {
			do("delete last", func() { del(ix.ids.String(ix.len() - 1)) })
		} else {
			do("delete", func() { del(randID()) })
		}
	}
	if len(ix.post.m) != 0 || len(ix.post.ranged) != 0 {
		t.Fatalf("empty index keeps %d postings, %d ranged keys", len(ix.post.m), len(ix.post.ranged))
	}
}

// candRows lists candidates' rows in order.
func candRows(cands []candidate) []int {
	var rows []int
	for _, c := range cands {
		rows = append(rows, c.row)
	}
	slices.Sort(rows)
	return rows
}

// checkIVF checks the invariant written beside ivf (ivf.go) for v over
// ix's nrows rows, of which those below assigned must be assigned; and
// that every assigned row is in the list of its nearest centroid.
func checkIVF(ix *index, v *ivf, nrows, assigned int) error {
	if v == nil {
		return nil
	}
	if len(v.of) != nrows || len(v.at) != nrows {
		return fmt.Errorf("of %d, at %d, for %d rows", len(v.of), len(v.at), nrows)
	}
	inLists := 0
	for c, l := range v.lists {
		for j, r := range l {
			if r < 0 || int(r) >= nrows {
				return fmt.Errorf("list %d holds row %d of %d", c, r, nrows)
			}
			if v.of[r] != int32(c) || v.at[r] != int32(j) {
				return fmt.Errorf("list %d holds row %d at %d, which says list %d at %d", c, r, j, v.of[r], v.at[r])
			}
		}
		inLists += len(l)
	}
	nAssigned := 0
	for r := range nrows {
		c := v.of[r]
		if c < 0 {
			if r < assigned {
				return fmt.Errorf("row %d is not assigned", r)
			}
			continue
		}
		nAssigned++
		if int(c) >= len(v.lists) || int(v.at[r]) >= len(v.lists[c]) || v.lists[c][v.at[r]] != int32(r) {
			return fmt.Errorf("row %d says list %d at %d, which does not hold it", r, c, v.at[r])
		}
		if near := v.nearest(ix.codes.b[r*ix.dim:(r+1)*ix.dim], ix.quant[r].scale); near != c {
			return fmt.Errorf("row %d is in list %d, its nearest centroid is %d", r, c, near)
		}
	}
	if nAssigned != inLists {
		return fmt.Errorf("%d rows assigned, %d in lists", nAssigned, inLists)
	}
	return nil
}

// checkPostings checks the invariant written beside posting (postings.go)
// for an index of nrows rows.
func checkPostings(ps postings, nrows int) error {
	ranged := 0
	for pk, p := range ps.m {
		if pk.val != "" && (p.val.IsNumber() || p.val.Kind() == spi.KindTime) {
			ranged++
			sv := ps.ranged[pk.key]
			if sv == nil || !slices.Contains(*sv.slot(p.val), p) {
				return fmt.Errorf("posting %v (a number or time) is not in its key's sorted values", pk)
			}
		}
	}
	n := 0
	for k, sv := range ps.ranged {
		if len(sv.nums) == 0 && len(sv.times) == 0 {
			return fmt.Errorf("ranged keeps key %q without values", k)
		}
		for _, sl := range [][]*posting{sv.nums, sv.times} {
			n += len(sl)
			for i := 1; i < len(sl); i++ {
				if c, ok := spi.Compare(sl[i-1].val, sl[i].val); !ok || c >= 0 {
					return fmt.Errorf("key %q: sorted values %v then %v", k, sl[i-1].val, sl[i].val)
				}
			}
		}
	}
	if n != ranged {
		return fmt.Errorf("ranged holds %d postings, m %d numbers and times", n, ranged)
	}
	for pk, p := range ps.m {
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
		ix.put(fmt.Sprint(i), "", spi.Strings(map[string]string{"c": fmt.Sprint(i % 3)}), []float32{1, 0}, 0)
	}
	if p := ix.post.m[pair{"c", spi.String("0").EqualityKey()}]; p.bits == nil || p.n != 234 {
		t.Fatalf("c=0 with 234 of 700 rows: bits %v, n %d", p.bits != nil, p.n)
	}
	for i := range 650 {
		ix.remove(fmt.Sprint(i))
	}
	if p := ix.post.m[pair{"c", spi.String("0").EqualityKey()}]; p.bits != nil || p.n != 17 || len(p.rows) != 17 {
		t.Fatalf("c=0 with 17 of 50 rows: bits %v, n %d, %d listed", p.bits != nil, p.n, len(p.rows))
	}
}
