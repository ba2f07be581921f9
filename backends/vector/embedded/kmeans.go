package embedded

import (
	"context"
	"math/rand/v2"
)

// sample is a copy of some rows' int8 codes and scales, drawn under the
// store's lock, on which k-means trains without holding it.
type sample struct {
	dim    int
	codes  []int8
	scales []float32
}

func (s *sample) len() int { return len(s.scales) }

// point writes sample row p, dequantised, into dst.
func (s *sample) point(p int, dst []float32) {
	sc := s.scales[p]
	for j, c := range s.codes[p*s.dim : (p+1)*s.dim] {
		dst[j] = sc * float32(c)
	}
}

// drawSample copies m rows of ix chosen at random (all of them when it
// holds no more).
func (ix *index) drawSample(m int, r *rand.Rand) *sample {
	n := ix.len()
	s := &sample{dim: ix.dim}
	var rows []int
	if m >= n {
		rows = make([]int, n)
		for i := range rows {
			rows[i] = i
		}
	} else {
		rows = r.Perm(n)[:m]
	}
	s.codes = make([]int8, 0, len(rows)*ix.dim)
	s.scales = make([]float32, 0, len(rows))
	for _, i := range rows {
		s.codes = append(s.codes, ix.codes.b[i*ix.dim:(i+1)*ix.dim]...)
		s.scales = append(s.scales, ix.quant[i].scale)
	}
	return s
}

// kmeans trains nlist centroids (at most one per sample row) on s by
// Lloyd's iterations, assigning each row to its nearest centroid as the
// index will (ivf.nearest: by inner product of normalised vectors when
// spherical, else by euclidean distance) and moving each centroid to the
// mean of its rows (normalised when spherical). A centroid left with no
// row takes a row of the largest cluster. It returns the centroids,
// nlist × dim float32, or ctx's cause when ctx ends first.
func kmeans(ctx context.Context, s *sample, nlist, iters int, spherical bool, r *rand.Rand) ([]float32, error) {
	n, dim := s.len(), s.dim
	nlist = min(nlist, n)
	if nlist == 0 {
		return nil, nil
	}
	cent := make([]float32, nlist*dim)
	for c, p := range r.Perm(n)[:nlist] {
		s.point(p, cent[c*dim:(c+1)*dim])
		if spherical {
			normalizeInPlace(cent[c*dim : (c+1)*dim])
		}
	}
	assign := make([]int32, n)
	sums := make([]float64, nlist*dim)
	counts := make([]int, nlist)
	pt := make([]float32, dim)
	for it := range iters {
		v := newIVF(cent, dim, !spherical, 0, 0)
		changed := 0
		for p := range n {
			if p%ctxCheckEvery == 0 && ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			c := v.nearest(s.codes[p*dim:(p+1)*dim], s.scales[p])
			if it == 0 || c != assign[p] {
				changed++
			}
			assign[p] = c
		}
		clear(sums)
		clear(counts)
		for p := range n {
			c := int(assign[p])
			counts[c]++
			sc := float64(s.scales[p])
			sum := sums[c*dim : (c+1)*dim]
			for j, x := range s.codes[p*dim : (p+1)*dim] {
				sum[j] += sc * float64(x)
			}
		}
		for c := range nlist {
			if counts[c] == 0 {
				continue
			}
			inv := 1 / float64(counts[c])
			for j := range dim {
				cent[c*dim+j] = float32(sums[c*dim+j] * inv)
			}
		}
		reseedEmpty(s, cent, assign, counts, r, pt)
		if spherical {
			for c := range nlist {
				normalizeInPlace(cent[c*dim : (c+1)*dim])
			}
		}
		if changed*1000 < n {
			break // fewer than 0.1% of the rows moved
		}
	}
	return cent, nil
}

// reseedEmpty gives each centroid without a row a random row of the
// largest cluster, nudged away from that cluster's centroid, so that the
// next iteration splits the cluster.
func reseedEmpty(s *sample, cent []float32, assign []int32, counts []int, r *rand.Rand, pt []float32) {
	dim := s.dim
	for c := range counts {
		if counts[c] > 0 {
			continue
		}
		big := 0
		for i, k := range counts {
			if k > counts[big] {
				big = i
			}
		}
		if counts[big] < 2 {
			return
		}
		// A random row of the largest cluster.
		var p int
		for {
			if p = r.IntN(len(assign)); int(assign[p]) == big {
				break
			}
		}
		s.point(p, pt)
		for j := range dim {
			b := cent[big*dim+j]
			cent[c*dim+j] = b + 1.01*(pt[j]-b) // just past the row, away from the centroid
		}
		assign[p] = int32(c)
		counts[big]--
		counts[c] = 1
	}
}
