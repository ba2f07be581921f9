package embedded

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// rescore scores the candidates of a scan in float32 from their vectors,
// read from g (an entry never changes, and g holds every entry tx's
// records name), exactly as a scan of every row scores them, and returns
// the best q.k, best first. tx sees the state the scan saw (search pins
// both), so the vid memory gave a candidate, vids[i], is the one its
// record in tx names, and the scan's tenant and filter are the record's:
// such a candidate is read from g alone. A candidate without one (vid 0:
// a version 1 record holds its vector) is read from its record in tx,
// and its tenant and filter are checked again there. The candidates come
// by descending upper bound his[i] of their key (index.candidates): once
// q.k are kept and the next bound is below the k-th best key, no
// candidate left can enter (each key is at most its bound, quant.go), so
// the reads stop there: at k = 100 that skips about half the reads
// (docs/vector.md). While it scores one candidate, the next one's vector
// is on its way into the cache (vectorFile.prefetch).
func (s *Store) rescore(ctx context.Context, tx *bolt.Tx, g *vecGen, q query, ids []string, vids []uint64, his []float64) ([]hit, error) {
	t := newHits(q.k)
	vec := make([]float32, 0, s.cfg.Dimension)
	entry := make([]byte, s.vecs.entry)
	docs := tx.Bucket(bucketDocs)
	for i, id := range ids {
		if i%ctxCheckEvery == ctxCheckEvery-1 && ctx.Err() != nil {
			return nil, fmt.Errorf("vector/embedded: retrieve: %w", context.Cause(ctx))
		}
		if t.Full() {
			if w, _ := t.Worst(); his[i] < float64(w.key) {
				break
			}
		}
		if i+1 < len(vids) && vids[i+1] != 0 {
			s.vecs.prefetch(g, vids[i+1])
		}
		h := header{vid: vids[i]}
		v := vec[:0]
		if h.vid == 0 {
			rec := docs.Get([]byte(id))
			if rec == nil {
				continue
			}
			var err error
			if h, v, err = decodeHeader(rec, s.cfg.Dimension, v); err != nil {
				return nil, fmt.Errorf("vector/embedded: retrieve: %w: record %q: %v", ErrCorrupt, id, err)
			}
			if (!q.anyTen && h.tenant != q.tenantName) || !q.filter.Match(h.metadata) {
				continue
			}
		}
		v, err := s.vector(g, h, v, entry)
		if err != nil {
			return nil, fmt.Errorf("vector/embedded: retrieve: %w: record %q: %v", ErrCorrupt, id, err)
		}
		vec = v
		var key float32
		switch {
		case q.l2:
			key = -sqDist(q.vec, vec)
		case s.cfg.Distance == Cosine:
			normalizeInPlace(vec)
			key = dot(q.vec, vec)
		default:
			key = dot(q.vec, vec)
		}
		t.Offer(hit{key: key, id: id})
	}
	return t.Sorted(), nil
}
