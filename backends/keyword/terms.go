package keyword

import (
	"encoding/binary"
	"errors"
	"slices"
	"sort"

	"github.com/blevesearch/bleve/v2/search/query"
)

// A lean index (Config.Lean) keeps neither the title and text nor their
// term positions, so a replaced or deleted document's terms, which the
// postings need to count df down (removeLocked), cannot be analysed again
// from the index. Each document stores instead the list of its distinct
// terms (title and text together) as short hashes, in the stored field
// _terms: the hashes sorted, each the uvarint of its difference from the
// one before (the first from 0). With termHashBits = 20 a document of 80
// distinct terms takes about 180 bytes, where its stored title and text
// took about 840 and their term vectors about 790 (docs/keyword.md,
// "Disk").
//
// A hash names a term only up to collisions. A removal resolves each
// hash to the term ids of the vocabulary that share it (termHashes,
// extended as the vocabulary grows: term ids are never reused or
// renumbered); when there is more than one, the postings decide: the
// document holds a term exactly when its slot is in the term's postings
// (holds). So the terms found are exactly the document's, whatever
// collides: a collision costs a lookup, never a wrong df.
const fieldTerms = "_terms"

// termHashBits is the width of a term hash: at 2^20 buckets a vocabulary of
// a million terms puts about one other term beside each of a document's,
// so a removal costs about one postings lookup per term. A variable for
// the tests, which narrow it to force collisions.
var termHashBits = 20

// termHash is the top termHashBits bits of the term's 32-bit FNV-1a hash
// (hash/fnv's New32a, inlined: no allocation per term).
func termHash(term string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(term); i++ {
		h ^= uint32(term[i])
		h *= 16777619
	}
	return h >> (32 - termHashBits)
}

// encodeTermHashes is the _terms value of a document whose distinct terms
// fn lists (each once or more).
func encodeTermHashes(each func(func(string))) []byte {
	var hs []uint32
	each(func(t string) { hs = append(hs, termHash(t)) })
	slices.Sort(hs)
	hs = slices.Compact(hs)
	out := make([]byte, 0, 2*len(hs)+2)
	prev := uint32(0)
	for _, h := range hs {
		out = binary.AppendUvarint(out, uint64(h-prev))
		prev = h
	}
	return out
}

var errTermHashes = errors.New("malformed term hash list")

// decodeTermHashes reverses encodeTermHashes.
func decodeTermHashes(b []byte) ([]uint32, error) {
	var hs []uint32
	prev := uint64(0)
	for len(b) > 0 {
		d, n := binary.Uvarint(b)
		if n <= 0 || prev+d >= 1<<termHashBits || (len(hs) > 0 && d == 0) {
			return nil, errTermHashes
		}
		prev += d
		hs = append(hs, uint32(prev))
		b = b[n:]
	}
	return hs, nil
}

// termHashes maps term hashes to the term ids holding them, for the terms
// of ids [0, n) of one impactIndex's vocabulary. The store's writer lock
// guards it.
type termHashes struct {
	n    int
	tids map[uint32][]uint32
}

// extend adds the terms with ids n and above; the caller holds x.mu.
func (th *termHashes) extend(x *impactIndex) {
	if len(x.post) == th.n {
		return
	}
	if th.tids == nil {
		th.tids = make(map[uint32][]uint32, len(x.post))
	}
	for term, tid := range x.termIdx {
		if int(tid) >= th.n {
			h := termHash(term)
			th.tids[h] = append(th.tids[h], tid)
		}
	}
	th.n = len(x.post)
}

// resolveTerms returns the ids of the terms of live document id whose
// term hashes are hs (see above); ok is false when id is not live.
func (x *impactIndex) resolveTerms(th *termHashes, id string, hs []uint32) (tids []uint32, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	e, ok := x.ids.Lookup(id)
	if !ok {
		return nil, false
	}
	slot := uint32(e)
	th.extend(x)
	tids = make([]uint32, 0, len(hs))
	for _, h := range hs {
		cands := th.tids[h]
		if len(cands) == 1 {
			tids = append(tids, cands[0])
			continue
		}
		for _, tid := range cands {
			if x.post[tid].holds(slot) {
				tids = append(tids, tid)
			}
		}
	}
	return tids, true
}

// holds reports whether the list has a posting of slot.
func (p *postings) holds(slot uint32) bool {
	if n := len(p.tail); n > 0 && p.tail[0].slot <= slot {
		for _, e := range p.tail {
			if e.slot == slot {
				return true
			}
		}
		return false
	}
	i := sort.Search(len(p.blocks), func(m int) bool { return p.blocks[m].last >= slot })
	if i == len(p.blocks) {
		return false
	}
	var slots [blockSize]uint32
	p.decodeSlots(i, &slots)
	_, in := slices.BinarySearch(slots[:], slot)
	return in
}

// hasPhrase reports whether a parsed query-string query holds a phrase,
// which a lean index cannot answer (it keeps no term positions).
func hasPhrase(q query.Query) bool {
	switch q := q.(type) {
	case *query.MatchPhraseQuery, *query.PhraseQuery, *query.MultiPhraseQuery:
		return true
	case *query.BooleanQuery:
		return hasPhrase(q.Must) || hasPhrase(q.Should) || hasPhrase(q.MustNot) || hasPhrase(q.Filter)
	case *query.ConjunctionQuery:
		return slices.ContainsFunc(q.Conjuncts, hasPhrase)
	case *query.DisjunctionQuery:
		return slices.ContainsFunc(q.Disjuncts, hasPhrase)
	}
	return false
}
