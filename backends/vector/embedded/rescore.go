package embedded

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// rescore scores the candidates of a scan in float32 from their records,
// exactly as a scan of every row scores them, and returns the best q.k,
// best first. The records are read in one transaction; one written since
// the scan is judged as it is now (a deleted one is skipped, and tenant and
// filter are checked again, so a document never crosses tenants).
func (s *Store) rescore(ctx context.Context, q query, ids []string) ([]hit, error) {
	t := topK{k: q.k, heap: make([]hit, 0, min(q.k, len(ids)))}
	if len(ids) == 0 {
		return nil, nil
	}
	vec := make([]float32, 0, s.cfg.Dimension)
	err := s.db.View(func(tx *bolt.Tx) error {
		docs := tx.Bucket(bucketDocs)
		for i, id := range ids {
			if i%ctxCheckEvery == ctxCheckEvery-1 && ctx.Err() != nil {
				return context.Cause(ctx)
			}
			rec := docs.Get([]byte(id))
			if rec == nil {
				continue
			}
			h, v, err := decodeHeader(rec, s.cfg.Dimension, vec[:0])
			if err != nil {
				return fmt.Errorf("%w: record %q: %v", ErrCorrupt, id, err)
			}
			vec = v
			if (!q.anyTen && h.tenant != q.tenantName) || !matchTerms(q.filter, h.metadata) {
				continue
			}
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
			t.offer(hit{key: key, id: id})
		}
		return nil
	})
	if err != nil {
		return nil, s.readErr("retrieve", err)
	}
	return t.sorted(), nil
}
