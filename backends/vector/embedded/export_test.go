package embedded

import (
	"sort"

	"github.com/ragd/ragd/spi"
)

// DotInt8 and DotInt8Generic expose the int8 kernels to the tests.
var (
	DotInt8        = dotInt8
	DotInt8Generic = dotInt8Generic
)

// FullScan is the reference search: every eligible row scored in float32,
// as Retrieve scored them before the int8 pass. req must be valid.
func FullScan(s *Store, req spi.VectorRequest) []spi.Ref {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ix := s.idx
	q := append([]float32(nil), req.Vector...)
	if s.cfg.Distance == Cosine {
		normalizeInPlace(q)
	}
	filter := compileFilter(req.Filter)
	tenant, known := ix.tenantIDs[req.Tenant]
	if req.Tenant != "" && !known {
		return []spi.Ref{}
	}
	t := topK{k: req.K, ids: ix.ids}
	for i := range ix.len() {
		if req.Tenant != "" && ix.tenants[i] != tenant {
			continue
		}
		if !matchTerms(filter, ix.meta[i]) {
			continue
		}
		row := ix.vecs[i*ix.dim : (i+1)*ix.dim]
		key := dot(q, row)
		if s.cfg.Distance == L2 {
			key = -sqDist(q, row)
		}
		t.offer(hit{key: key, row: i})
	}
	res := t.heap
	sort.Slice(res, func(i, j int) bool { return t.worse(res[j], res[i]) })
	refs := make([]spi.Ref, len(res))
	for i, h := range res {
		refs[i] = spi.Ref{ID: ix.ids[h.row], Score: s.score(h.key), Source: spi.SourceVector}
	}
	return refs
}
