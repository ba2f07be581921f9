package embedded

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ragd/ragd/backends/graph/graphspec"
	"github.com/ragd/ragd/spi"
)

// TestBatchEqualsOneByOne: writes in one transaction, with every removal
// before the puts in key order (putSet), leave the buckets and the read
// model as writing the same documents one call at a time does: random
// rounds of upserts and deletes of documents sharing entities, entity
// terms and links, through Upsert, Delete and ApplyChanges.
func TestBatchEqualsOneByOne(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 7))
		open := func() *Store {
			s, err := Open(ctx, Config{Dir: t.TempDir(), NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		batched, single, applied := open(), open(), open()
		seq := uint64(0)
		for round := range 6 {
			var docs []spi.Document
			var dels, ups []spi.Change
			for range 1 + r.IntN(40) {
				id := fmt.Sprintf("d%02d", r.IntN(30))
				if r.IntN(5) == 0 {
					dels = append(dels, spi.Change{Op: spi.OpDelete, ID: id})
					if err := batched.Delete(ctx, []string{id}); err != nil {
						t.Fatal(err)
					}
					if err := single.Delete(ctx, []string{id}); err != nil {
						t.Fatal(err)
					}
					continue
				}
				d := spi.Document{ID: id, Tenant: fmt.Sprint("t", r.IntN(2)), Text: fmt.Sprint("round ", round)}
				for range r.IntN(4) {
					d.Entities = append(d.Entities, fmt.Sprintf("%s %s", words[r.IntN(len(words))], words[r.IntN(len(words))]))
				}
				for range r.IntN(3) {
					d.Links = append(d.Links, fmt.Sprintf("d%02d", r.IntN(30)))
				}
				docs = append(docs, d)
				ups = append(ups, spi.Change{Op: spi.OpUpsert, ID: id, Doc: &d})
			}
			// Deletes went first in both stores above; the upserts now
			// in one call against one call each, and the whole round
			// (the deletes, then the upserts) through the change log in
			// one apply.
			changes := append(dels, ups...)
			for i := range changes {
				seq++
				changes[i].Seq, changes[i].Version = seq, seq
			}
			if err := batched.Upsert(ctx, docs); err != nil {
				t.Fatal(err)
			}
			for _, d := range docs {
				if err := single.Upsert(ctx, []spi.Document{d}); err != nil {
					t.Fatal(err)
				}
			}
			if err := applied.ApplyChanges(ctx, "log", changes, seq); err != nil {
				t.Fatal(err)
			}
			for _, st := range []*Store{batched, single, applied} {
				checkModel(t, st.mem)
			}
		}
		want := dump(t, single)
		if got := dump(t, batched); !maps.Equal(got, want) {
			t.Fatalf("seed %d: Upsert in one call differs from one call each:\n got %v\nwant %v", seed, got, want)
		}
		if got := dump(t, applied); !maps.Equal(got, want) {
			t.Fatalf("seed %d: ApplyChanges differs from one call each:\n got %v\nwant %v", seed, got, want)
		}
	}
}

var words = []string{"wing", "flutter", "boundary", "layer", "heat", "panel", "mach"}

// dump returns every key (and value, but the docs' records) of the
// buckets the graph's edges and documents live in, and the read model's
// answer to a match of every word, as one map.
func dump(t *testing.T, s *Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bDocs, bTenant, bDocEnt, bEntDoc, bLinkOut, bLinkIn, bTermEnt} {
			if err := tx.Bucket(b).ForEach(func(k, v []byte) error {
				out[string(b)+"/"+string(k)] = string(v)
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"", "t0", "t1"} {
		for _, w := range words {
			refs, err := s.MatchEntities(context.Background(), spi.KeywordRequest{Text: w, K: 100, Tenant: tenant})
			if err != nil {
				t.Fatal(err)
			}
			out["match/"+tenant+"/"+w] = fmt.Sprint(refs)
		}
	}
	return out
}

// checkModel checks the read model's invariants (memGraph).
func checkModel(t *testing.T, g *memGraph) {
	t.Helper()
	g.mu.RLock()
	defer g.mu.RUnlock()
	for e, ent := range g.ents {
		byTenant := map[uint32]int32{}
		for _, d := range ent.docs {
			md := &g.docs[d]
			if !md.exists || !slices.Contains(md.ents, int32(e)) {
				t.Fatalf("entity %q: mentioner %q exists %v, lists it %v", ent.name, md.id, md.exists, slices.Contains(md.ents, int32(e)))
			}
			byTenant[md.tenant]++
		}
		for i, c := range ent.tenants {
			if c.n <= 0 || i > 0 && ent.tenants[i-1].t >= c.t || byTenant[c.t] != c.n {
				t.Fatalf("entity %q: tenants %v, mentioners by tenant %v", ent.name, ent.tenants, byTenant)
			}
		}
		if len(ent.tenants) != len(byTenant) {
			t.Fatalf("entity %q: tenants %v, mentioners by tenant %v", ent.name, ent.tenants, byTenant)
		}
		terms := graphspec.Tokens(ent.name)
		for term, es := range g.termEnt {
			want := 0
			if len(ent.docs) > 0 && slices.Contains(terms, term) {
				want = 1
			}
			if n := count(es, int32(e)); n != want {
				t.Fatalf("termEnt[%q] holds entity %q %d times, want %d", term, ent.name, n, want)
			}
		}
		if len(ent.docs) > 0 {
			for _, term := range terms {
				if _, ok := g.termEnt[term]; !ok {
					t.Fatalf("termEnt has no %q, a term of %q", term, ent.name)
				}
			}
		}
	}
}

func count(s []int32, v int32) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}
