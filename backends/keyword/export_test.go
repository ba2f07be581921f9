package keyword

import (
	"errors"
	"strings"

	index "github.com/blevesearch/bleve_index_api"
)

// WithScoring returns a view of b that shares its index but queries with
// another title boost and BM25 k1 and b (zero keeps b's value).
func (b *Backend) WithScoring(titleBoost, k1, bb float64) *Backend {
	cfg := b.cfg
	if titleBoost != 0 {
		cfg.TitleBoost = titleBoost
	}
	if k1 != 0 {
		cfg.K1 = k1
	}
	if bb != 0 {
		cfg.B = bb
	}
	return &Backend{cfg: cfg, st: b.st, gen: b.gen}
}

// Tombstones counts the tombstones (internal keys ragd.v/<id>) the index
// holds, as its current snapshot has them.
func Tombstones(b *Backend) (int, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	n := 0
	err := b.withReader(b.st, func(r index.IndexReader) error {
		in, ok := r.(interface{ Internal() map[string][]byte })
		if !ok {
			return errors.New("the index reader does not expose its internal keys")
		}
		for k := range in.Internal() {
			if strings.HasPrefix(k, versionPrefix) {
				n++
			}
		}
		return nil
	})
	return n, err
}

// SetInternal writes an internal key behind the backend's back (a
// tombstone an older ragd left, say).
func SetInternal(b *Backend, key string, val []byte) error {
	return b.st.idx.SetInternal([]byte(key), val)
}

// TaggedVersion is the value a version or checkpoint of log is stored as.
func TaggedVersion(log string, v uint64) []byte { return taggedValue(logTag(log), v) }

// WaitRebuild waits for a rebuild of the postings running beside writes
// (reorder.go), if one runs.
func WaitRebuild(b *Backend) {
	b.mu.RLock()
	st := b.st
	b.mu.RUnlock()
	if st != nil {
		st.impact.waitRebuild()
	}
}
