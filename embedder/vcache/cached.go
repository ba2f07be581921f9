package vcache

import (
	"context"
	"fmt"
	"slices"

	"github.com/ragd/ragd/spi"
)

// Wrap returns e behind the cache: texts whose (identity, role, tenant,
// text) the cache holds are answered from it (the tenant is the one ctx is
// marked with, spi.WithTenant: a text another tenant sent is a miss), the others embedded by e in one call
// (a text repeated in the call once) and stored. identity must name the
// vector space e produces (the identity the vector store records); role
// is RoleDocument or RoleQuery. A vector e returns that has the wrong
// length or a non-finite value is returned but not stored, so the caller
// sees the fault every time. A cache that cannot be read or written is
// logged and bypassed.
func (s *Store) Wrap(e spi.Embedder, identity, role string) spi.Embedder {
	return &cached{s: s, e: e, identity: identity, role: role, c: s.counts(role)}
}

type cached struct {
	s        *Store
	e        spi.Embedder
	identity string
	role     string
	c        *counts
}

var _ spi.Embedder = (*cached)(nil)

func (w *cached) Dimension() int { return w.e.Dimension() }

// Unwrap returns the embedder behind the cache.
func (w *cached) Unwrap() spi.Embedder { return w.e }

func (w *cached) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return w.e.Embed(ctx, texts)
	}
	dim := w.e.Dimension()
	keys := make([]Key, len(texts))
	tenant := spi.TenantFrom(ctx)
	for i, t := range texts {
		keys[i] = TenantKey(w.identity, w.role, tenant, t)
	}
	hits, err := w.s.lookup(keys, dim)
	if err != nil {
		w.s.cfg.Logger.Warn("vcache: lookup failed; embedding without the cache", "err", err)
		hits = make([]hit, len(texts))
	}
	out := make([][]float32, len(texts))
	var (
		move      []moved
		missTexts []string
		missAt    [][]int // positions in texts of each miss
		missKey   []Key
	)
	first := map[Key]int{}
	for i, h := range hits {
		if h.vec != nil {
			out[i] = h.vec
			if h.stale != 0 {
				move = append(move, moved{key: keys[i], stamp: h.stale})
			}
			continue
		}
		if j, dup := first[keys[i]]; dup {
			missAt[j] = append(missAt[j], i)
			continue
		}
		first[keys[i]] = len(missTexts)
		missTexts = append(missTexts, texts[i])
		missAt = append(missAt, []int{i})
		missKey = append(missKey, keys[i])
	}
	w.c.hits.Add(uint64(len(texts) - len(missTexts)))
	w.c.misses.Add(uint64(len(missTexts)))
	var put []entry
	if len(missTexts) > 0 {
		vecs, err := w.e.Embed(ctx, missTexts)
		if err != nil {
			return nil, err
		}
		if len(vecs) != len(missTexts) {
			return nil, fmt.Errorf("%w: embedder returned %d vectors for %d texts", spi.ErrUnavailable, len(vecs), len(missTexts))
		}
		for j, v := range vecs {
			for k, i := range missAt[j] {
				if k > 0 {
					v = slices.Clone(v)
				}
				out[i] = v
			}
			if spi.ValidateVector(v, dim) == nil {
				put = append(put, entry{key: missKey[j], vec: v})
			}
		}
	}
	if len(put) > 0 || len(move) > 0 {
		if err := w.s.store(put, move); err != nil {
			w.s.cfg.Logger.Warn("vcache: could not store vectors", "vectors", len(put), "err", err)
		}
	}
	return out, nil
}
