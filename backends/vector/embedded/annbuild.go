package embedded

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// The IVF index (ivf.go) is derived from the rows in memory and is never
// persisted: Open loads the rows and a build runs in the background, the
// searches meanwhile scanning every eligible row (exact). A build
//
//  1. draws a sample of the rows under the writers' mutex (writeMu),
//  2. trains the centroids by k-means on it, holding no lock,
//  3. installs them as index.next, no row assigned, under writeMu,
//  4. assigns the rows to their nearest centroid, annParams.chunk rows at
//     a time under writeMu (so a write waits for one chunk at most), and
//  5. once every row is assigned, renumbers the rows so that each list's
//     rows are consecutive (ivf.regroup: new arrays built under writeMu
//     while searches read the old ones) and installs them and next as the
//     index's ivf under mu, as a write does.
//
// Holding writeMu is what keeps the rows still while the build reads them
// (only writers change rows, and they hold writeMu); searches hold mu's
// read lock and never read next, so they go on during every step and see
// either the old ivf (or none) or the new one. Writes between the steps
// keep next up to date as they keep ivf (index.put and index.remove),
// assigning every row they write or move; the build skips rows already
// assigned.
//
// A build starts when the index reaches annParams.minRows rows without an
// ivf, or when it holds annParams.regrow (1.5) times the rows the ivf's
// sample was drawn from, or 1/regrow of them (annParams.retrain), with
// the lists for the size it will grow to (annParams.buildLists); an index
// that falls below half of minRows drops its ivf. Between builds, rows
// written go to the end of the arrays, outside the runs of their lists:
// once they are a sixteenth more than the last regroup laid out
// (annParams.regroup), the same goroutine regroups the rows by the live
// ivf's lists without training (step 5 alone; 0.4–1.8 s at 500,000 to
// 1,000,000 rows, under writeMu). So does a store that no write has
// reached for annParams.idleAfter (a timer each commit restarts: armIdle)
// once they are more than idleRegroup (1/256): a bulk load would
// otherwise leave up to a sixteenth of its rows outside their runs for
// the queries after it.

// builder is the state of the background build; mu guards it.
type builder struct {
	mu      sync.Mutex
	stopped bool          // Close has stopped builds
	done    chan struct{} // closed when the running build ends; nil when none runs
	ctx     context.Context
	cancel  context.CancelFunc
	builds  int         // builds completed
	idle    *time.Timer // fires idleAfter after the last commit (armIdle)
}

// maybeBuild drops the ivf of an index that has become small and starts a
// build when the index needs one; idle: no write came for
// annParams.idleAfter. The caller holds writeMu and mu, or has not shared
// the store yet.
func (s *Store) maybeBuild(idle bool) {
	ix, p := s.idx, s.idx.ann
	if p.minRows <= 0 {
		return
	}
	n := ix.len()
	if ix.ivf != nil && n < p.minRows/2 {
		ix.ivf = nil
	}
	switch {
	case ix.ivf == nil && n >= p.minRows:
	case ix.ivf != nil && p.retrain(ix.ivf, n):
	case ix.ivf != nil && ix.next == nil && p.ungrouped(ix.ivf, n, idle):
	default:
		return
	}
	b := &s.build
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped || b.done != nil {
		return
	}
	done := make(chan struct{})
	b.done = done
	go func() {
		defer func() {
			b.mu.Lock()
			b.done = nil
			b.mu.Unlock()
			close(done)
		}()
		s.runBuild(b.ctx, idle)
	}()
}

// armIdle restarts the timer that regroups an idle store (maybeBuild with
// idle) after a commit. The caller holds writeMu.
func (s *Store) armIdle() {
	after := s.idx.ann.idleAfter
	if after <= 0 || s.idx.ivf == nil {
		return
	}
	b := &s.build
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.stopped:
	case b.idle == nil:
		b.idle = time.AfterFunc(after, s.idleNow)
	default:
		b.idle.Reset(after)
	}
}

// idleNow is the idle timer's: no commit came since it was armed (a
// commit that takes writeMu first restarts it, and this one then finds
// the tail as that commit left it).
func (s *Store) idleNow() {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maybeBuild(true)
}

// runBuild builds an ivf for the index (the steps above), or only
// regroups the rows when the live ivf needs no training. A build that ctx
// stops leaves the index as it was.
func (s *Store) runBuild(ctx context.Context, idle bool) {
	start := time.Now()
	p := s.idx.ann
	s.writeMu.Lock()
	n := s.idx.len()
	v := s.idx.ivf
	if v != nil && !p.retrain(v, n) {
		if p.ungrouped(v, n, idle) && ctx.Err() == nil {
			g := s.idx.regroup(v)
			if h := s.hooks.regrouped; h != nil {
				h()
			}
			s.mu.Lock()
			old := s.idx.install(g)
			s.mu.Unlock()
			freeCodes(old)
			s.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "vector/embedded: rows regrouped by list",
				slog.Int("documents", n), slog.Int("lists", v.nlist()), slog.Bool("idle", idle), slog.Duration("took", time.Since(start)))
		}
		s.writeMu.Unlock()
		return
	}
	nlist := p.buildLists(v, n)
	r := rand.New(rand.NewPCG(uint64(n), 0x1f))
	smp := s.idx.drawSample(nlist*p.sampleRows, r)
	s.writeMu.Unlock()

	cent, err := kmeans(ctx, smp, nlist, p.iters, s.cfg.Distance == Cosine, r)
	if err != nil || len(cent) == 0 {
		return
	}
	trained := time.Since(start)
	if h := s.hooks.buildTrained; h != nil {
		h()
	}
	s.writeMu.Lock()
	s.idx.next = newIVF(cent, s.idx.dim, s.cfg.Distance != Cosine, s.idx.len(), n)
	s.writeMu.Unlock()
	for {
		if ctx.Err() != nil {
			s.writeMu.Lock()
			s.idx.next = nil
			s.writeMu.Unlock()
			return
		}
		s.writeMu.Lock()
		done := s.idx.assignNext(p.chunk)
		if done {
			g := s.idx.regroup(s.idx.next)
			if h := s.hooks.regrouped; h != nil {
				h()
			}
			s.mu.Lock()
			old := s.idx.install(g)
			s.mu.Unlock()
			freeCodes(old)
		}
		s.writeMu.Unlock()
		if done {
			break
		}
		if h := s.hooks.buildChunk; h != nil {
			h()
		}
	}
	s.build.mu.Lock()
	s.build.builds++
	s.build.mu.Unlock()
	s.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "vector/embedded: approximate index built",
		slog.Int("documents", n), slog.Int("lists", nlist),
		slog.Duration("train", trained), slog.Duration("took", time.Since(start)))
}

// assignNext assigns up to chunk rows of next from its cursor on, those
// not assigned yet, and reports whether every row is assigned.
func (ix *index) assignNext(chunk int) bool {
	v, n := ix.next, ix.len()
	v.grow(n)
	end := min(v.cursor+chunk, n)
	for i := v.cursor; i < end; i++ {
		if v.of[i] < 0 {
			v.add(i, v.nearest(ix.codes.b[i*ix.dim:(i+1)*ix.dim], ix.quant[i].scale))
		}
	}
	v.cursor = end
	return end >= n
}

// buildIVF builds the index's ivf at once, for tests and benchmarks of
// the index alone.
func (ix *index) buildIVF(ctx context.Context, spherical bool) error {
	p, n := ix.ann, ix.len()
	nlist := p.lists(n)
	r := rand.New(rand.NewPCG(uint64(n), 0x1f))
	cent, err := kmeans(ctx, ix.drawSample(nlist*p.sampleRows, r), nlist, p.iters, spherical, r)
	if err != nil {
		return err
	}
	ix.next = newIVF(cent, ix.dim, !spherical, n, n)
	for !ix.assignNext(n) {
	}
	freeCodes(ix.install(ix.regroup(ix.next)))
	return nil
}

// stopBuilds stops a running build and keeps new ones from starting;
// it returns once the running one has ended.
func (s *Store) stopBuilds() {
	b := &s.build
	b.mu.Lock()
	b.stopped = true
	b.cancel()
	if b.idle != nil {
		b.idle.Stop()
	}
	done := b.done
	b.mu.Unlock()
	if done != nil {
		<-done
	}
}
