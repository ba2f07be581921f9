package embedded

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/ragd/ragd/spi"
)

// DotCodes, DotCodesMany and DotKernels expose the scan's kernels to the
// tests (the one in use, one call for many rows, and each this CPU runs);
// QueryCodeMax the largest query code for a dimension.
var (
	DotCodes     = dotCodes
	DotKernels   = dotKernels
	DotCodesMany = dotCodesMany
	QueryCodeMax = queryCodeMax
)

// FullScan is the reference search: every stored document of the tenant
// that matches the filter, scored in float32 as Retrieve scored every row
// before the int8 pass. req must be valid.
func FullScan(s *Store, req spi.VectorRequest) ([]spi.Ref, error) {
	q := append([]float32(nil), req.Vector...)
	if s.cfg.Distance == Cosine {
		normalizeInPlace(q)
	}
	t := newHits(req.K)
	err := s.Scan(context.Background(), func(d spi.Document) error {
		if (req.Tenant != "" && d.Tenant != req.Tenant) || !req.Filter.Match(d.Metadata) {
			return nil
		}
		row := d.Vector
		var key float32
		switch s.cfg.Distance {
		case L2:
			key = -sqDist(q, row)
		case Cosine:
			normalizeInPlace(row)
			key = dot(q, row)
		default:
			key = dot(q, row)
		}
		t.Offer(hit{key: key, id: d.ID})
		return nil
	})
	refs := []spi.Ref{}
	for _, h := range t.Sorted() {
		refs = append(refs, spi.Ref{ID: h.id, Score: s.score(h.key), Source: spi.SourceVector})
	}
	return refs, err
}

// Hooks are the test hooks of a store (nil ones do nothing).
type Hooks struct {
	// AfterCandidates runs in Retrieve once the candidates are chosen,
	// before they are rescored.
	AfterCandidates func()
	// Moved runs when a search finds that a commit between the file and
	// memory changed one of its candidates, before it waits for that
	// commit.
	Moved func()
	// AfterDiskCommit runs in Commit once the transaction is durable,
	// before memory follows.
	AfterDiskCommit func()
	// BeforeRescore runs in Retrieve once the candidates are chosen and
	// the memory lock released, before they are rescored.
	BeforeRescore func()
	// BuildTrained runs in an IVF build once the centroids are trained,
	// before they are installed; BuildChunk after each chunk of rows the
	// build assigns. Neither holds a lock.
	BuildTrained, BuildChunk func()
	// Regrouped runs once a regroup (or a build's last step) has built
	// the renumbered arrays, holding the writers' mutex, before it
	// installs them under the memory lock.
	Regrouped func()
	// CodesGrown runs in Commit once the codes are copied into a larger
	// mapping, holding the writers' mutex, before memory's lock is taken.
	CodesGrown func()
}

// SetHooks installs h. Call before the store is shared.
func SetHooks(s *Store, h Hooks) {
	s.hooks = testHooks{afterCandidates: h.AfterCandidates, moved: h.Moved, afterDiskCommit: h.AfterDiskCommit,
		buildTrained: h.BuildTrained, buildChunk: h.BuildChunk, beforeRescore: h.BeforeRescore, regrouped: h.Regrouped,
		codesGrown: h.CodesGrown}
}

// WaitBuild waits for the running IVF build, if any, to end, and returns
// the number of builds completed and whether the store searches an IVF.
func WaitBuild(s *Store) (builds int, ivf bool) {
	s.build.mu.Lock()
	done := s.build.done
	s.build.mu.Unlock()
	if done != nil {
		<-done
	}
	s.build.mu.Lock()
	builds = s.build.builds
	s.build.mu.Unlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	return builds, s.idx.ivf != nil
}

// Waits is how many searches waited for a commit that changed one of
// their candidates between the file and memory.
func Waits(s *Store) uint64 { return s.waits.Load() }

// CheckIndex checks the invariants of the store's in-memory index: those
// of the postings and of the IVF (and of one a build is filling) that the
// model test checks after every operation, and that every row's vid is
// the one its record in the file names (rescore.go reads by it).
func CheckIndex(s *Store) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	ix := s.idx
	n := ix.len()
	if len(ix.vids) != n {
		return fmt.Errorf("%d vids for %d rows", len(ix.vids), n)
	}
	if err := s.db.View(func(tx *bolt.Tx) error {
		docs := tx.Bucket(bucketDocs)
		for i := range n {
			id := ix.ids.String(i)
			h, _, err := decodeHeader(docs.Get([]byte(id)), ix.dim, nil)
			if err != nil {
				return fmt.Errorf("record %q: %v", id, err)
			}
			if h.vid != ix.vids[i] {
				return fmt.Errorf("row %d (%q): vid %d, its record names %d", i, id, ix.vids[i], h.vid)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := checkMetaSet(ix); err != nil {
		return err
	}
	if err := checkPostings(ix.post, n); err != nil {
		return err
	}
	if err := checkIVF(ix, ix.ivf, n, n); err != nil {
		return fmt.Errorf("ivf: %w", err)
	}
	if ix.next != nil {
		if err := checkIVF(ix, ix.next, n, ix.next.cursor); err != nil {
			return fmt.Errorf("next: %w", err)
		}
	}
	return nil
}

// ExactRetrieve answers req as Retrieve does with the IVF bypassed: the
// exact search, the reference of the recall figures.
func ExactRetrieve(s *Store, req spi.VectorRequest) ([]spi.Ref, error) {
	q := query{k: req.K, filter: req.Filter, l2: s.cfg.Distance == L2,
		anyTen: req.Tenant == "", tenantName: req.Tenant, exact: true}
	q.vec = append([]float32(nil), req.Vector...)
	if s.cfg.Distance == Cosine {
		normalizeInPlace(q.vec)
	}
	hits, err := s.search(context.Background(), q)
	if err != nil {
		return nil, err
	}
	refs := make([]spi.Ref, len(hits))
	for i, h := range hits {
		refs[i] = spi.Ref{ID: h.id, Score: s.score(h.key), Source: spi.SourceVector}
	}
	return refs, nil
}

// SetDenseProbe sets the share of eligible rows from which a probe scores
// every row of its lists (annParams.denseProbe), for the benchmarks.
func SetDenseProbe(s *Store, share float64) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idx.ann.denseProbe = share
}

// DefaultKGrowth is the shipped kGrowth.
var DefaultKGrowth = defaultANN.kGrowth

// SetKGrowth sets how the lists a probe visits grow with k (annParams.kGrowth).
func SetKGrowth(s *Store, g float64) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idx.ann.kGrowth = g
}

// SetFilterGrowth sets how the lists a filtered probe visits grow with
// the filter's selectivity (annParams.filterGrowth), for the benchmarks.
func SetFilterGrowth(s *Store, g float64) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idx.ann.filterGrowth = g
}

// Incompressible is incompressible for the external tests.
var Incompressible = incompressible

// BuildsStopped reports whether Close has stopped s's builds (and
// cancelled a running one).
func BuildsStopped(s *Store) bool {
	s.build.mu.Lock()
	defer s.build.mu.Unlock()
	return s.build.stopped
}

// IdleNow does what the idle timer does when it fires (annbuild.go).
func IdleNow(s *Store) { s.idleNow() }

// Layout is the live ivf's rows laid out by its last regroup, the rows
// of the index, and whether every list's rows below that count are
// consecutive; ok is false without an ivf.
func Layout(s *Store) (grouped, rows int, contiguous, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v := s.idx.ivf
	if v == nil {
		return 0, s.idx.len(), false, false
	}
	contiguous = true
	next := 0
	for _, l := range v.lists {
		for _, r := range l {
			if int(r) >= v.grouped {
				continue
			}
			if int(r) != next {
				contiguous = false
			}
			next++
		}
	}
	return v.grouped, s.idx.len(), contiguous && next == v.grouped, true
}

// CodesRoom is the number of rows the codes' mapping holds beyond the
// index's rows.
func CodesRoom(s *Store) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return (cap(s.idx.codes.b) - len(s.idx.codes.b)) / s.idx.dim
}
