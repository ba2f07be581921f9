package vcache

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/ragd/ragd/spi"
)

// DefaultLRUSize is the number of query vectors NewLRU keeps by default:
// 1,024 384-dimensional vectors take about 1.6 MiB.
const DefaultLRUSize = 1024

// LRU is an in-memory cache of the most recently used vectors of one
// embedder and role, in front of it, per tenant (TenantKey: the tenant ctx
// is marked with, spi.WithTenant), so that one tenant's query is never
// answered from another's. It keeps keys (hashes), never texts.
// It is an spi.Embedder, safe for concurrent use.
type LRU struct {
	e        spi.Embedder
	identity string
	role     string
	c        *lru.Cache[Key, []float32]

	hits, misses atomic.Uint64
}

var _ spi.Embedder = (*LRU)(nil)

// NewLRU returns e behind an LRU of size vectors (DefaultLRUSize when
// size <= 0); identity and role are as for Store.Wrap.
func NewLRU(e spi.Embedder, identity, role string, size int) (*LRU, error) {
	if size <= 0 {
		size = DefaultLRUSize
	}
	c, err := lru.New[Key, []float32](size)
	if err != nil {
		return nil, fmt.Errorf("vcache: %w", err)
	}
	return &LRU{e: e, identity: identity, role: role, c: c}, nil
}

// Dimension implements spi.Embedder.
func (l *LRU) Dimension() int { return l.e.Dimension() }

// Unwrap returns the embedder behind the cache.
func (l *LRU) Unwrap() spi.Embedder { return l.e }

// Embed implements spi.Embedder: cached vectors are returned as copies
// (callers may modify what they get), the others embedded in one call.
func (l *LRU) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	keys := make([]Key, len(texts))
	var missTexts []string
	var missAt []int
	tenant := spi.TenantFrom(ctx)
	for i, t := range texts {
		keys[i] = TenantKey(l.identity, l.role, tenant, t)
		if v, ok := l.c.Get(keys[i]); ok {
			out[i] = slices.Clone(v)
			continue
		}
		missTexts = append(missTexts, t)
		missAt = append(missAt, i)
	}
	l.hits.Add(uint64(len(texts) - len(missTexts)))
	l.misses.Add(uint64(len(missTexts)))
	if len(missTexts) == 0 {
		return out, nil
	}
	vecs, err := l.e.Embed(ctx, missTexts)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(missTexts) {
		return nil, fmt.Errorf("%w: embedder returned %d vectors for %d texts", spi.ErrUnavailable, len(vecs), len(missTexts))
	}
	dim := l.e.Dimension()
	for j, v := range vecs {
		i := missAt[j]
		out[i] = v
		if spi.ValidateVector(v, dim) == nil {
			l.c.Add(keys[i], slices.Clone(v))
		}
	}
	return out, nil
}

// Cached implements spi.EmbedCache: text's vector for ctx's tenant when
// the LRU holds it (a copy), without calling the embedder. A hit counts as
// one; a miss counts when Embed is then called.
func (l *LRU) Cached(ctx context.Context, text string) ([]float32, bool) {
	v, ok := l.c.Get(TenantKey(l.identity, l.role, spi.TenantFrom(ctx), text))
	if !ok {
		return nil, false
	}
	l.hits.Add(1)
	return slices.Clone(v), true
}

var _ spi.EmbedCache = (*LRU)(nil)

// LRUStats are an LRU's figures.
type LRUStats struct {
	Entries      int
	Hits, Misses uint64
}

// Stats returns the LRU's figures.
func (l *LRU) Stats() LRUStats {
	return LRUStats{Entries: l.c.Len(), Hits: l.hits.Load(), Misses: l.misses.Load()}
}
