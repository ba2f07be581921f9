package keyword

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ragd/ragd/spi"
)

// A lean index finds a removed document's terms from its stored term
// hashes, collisions included: with hashes narrowed to 5 bits, every
// bucket holds several of the 300 words, so nearly every removal
// resolves collisions through the postings. After random replaces,
// deletes and a reopen, df per term and per tenant equals the postings'
// (checkInvariants) and every search answers what a full index given the
// same writes answers, scores to the bit.
func TestLeanRemovalsFindTheirTerms(t *testing.T) {
	defer func(bits int) { termHashBits = bits }(termHashBits)
	termHashBits = 5
	rng := rand.New(rand.NewPCG(7, 8))
	vocab := make([]string, 300)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%dx", i)
	}
	words := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocab[min(rng.IntN(len(vocab)), rng.IntN(len(vocab)))] // skewed
		}
		return strings.Join(ws, " ")
	}
	ctx := context.Background()
	leanDir, fullDir := t.TempDir(), t.TempDir()
	lean, err := Open(Config{Dir: leanDir, Lean: true})
	if err != nil {
		t.Fatal(err)
	}
	full, err := Open(Config{Dir: fullDir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = full.Close() }()
	reopen := func() {
		t.Helper()
		if err := lean.Close(); err != nil {
			t.Fatal(err)
		}
		if lean, err = Open(Config{Dir: leanDir, Lean: true}); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { _ = lean.Close() }()
	compare := func(step int) {
		t.Helper()
		lean.st.impact.checkInvariants(t)
		for q := range 30 {
			req := spi.KeywordRequest{Text: words(1 + q%4), K: 10}
			if q%3 == 1 {
				req.Tenant = "t1"
			}
			a, errA := lean.Retrieve(ctx, req)
			b, errB := full.Retrieve(ctx, req)
			if errA != nil || errB != nil || !slices.Equal(a, b) {
				t.Fatalf("step %d query %+v: lean %v (%v), full %v (%v)", step, req, a, errA, b, errB)
			}
		}
	}
	for step := range 600 {
		var docs []spi.Document
		var del []string
		for range 1 + rng.IntN(20) {
			id := fmt.Sprintf("d%03d", rng.IntN(250))
			if rng.IntN(5) == 0 {
				del = append(del, id)
				continue
			}
			docs = append(docs, spi.Document{ID: id, Tenant: []string{"t1", "t2"}[rng.IntN(2)],
				Title: words(rng.IntN(4)), Text: words(1 + rng.IntN(40))})
		}
		for _, b := range []*Backend{lean, full} {
			if err := b.Upsert(ctx, docs); err != nil {
				t.Fatal(err)
			}
			if err := b.Delete(ctx, del); err != nil {
				t.Fatal(err)
			}
		}
		if step%200 == 199 {
			compare(step)
		}
		if step == 300 {
			reopen()
			compare(step)
		}
	}
}

// A damaged term hash list is corruption, named, not a silent df error.
func TestDecodeTermHashesRejectsDamage(t *testing.T) {
	good := encodeTermHashes(func(fn func(string)) {
		for _, w := range []string{"alpha", "beta", "gamma", "alpha"} {
			fn(w)
		}
	})
	hs, err := decodeTermHashes(good)
	if err != nil || len(hs) != 3 || !slices.IsSorted(hs) {
		t.Fatalf("decode(%x) = %v, %v", good, hs, err)
	}
	for _, bad := range [][]byte{{0x80}, {0xff, 0xff, 0xff, 0xff, 0xff}, {1, 0}} {
		if _, err := decodeTermHashes(bad); err == nil {
			t.Errorf("decode(%x) accepted", bad)
		}
	}
}

// termHash is FNV-1a's (the stored hashes must not change between
// releases).
func TestTermHashIsFNV1a(t *testing.T) {
	for _, term := range []string{"", "a", "boundari", "layer", "été", strings.Repeat("x", 300)} {
		h := fnv.New32a()
		_, _ = h.Write([]byte(term))
		if got, want := termHash(term), h.Sum32()>>(32-termHashBits); got != want {
			t.Errorf("termHash(%q) = %#x, want %#x", term, got, want)
		}
	}
}
