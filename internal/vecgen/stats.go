package vecgen

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/ragd/ragd/spi"
)

// Spread is a distribution's percentiles.
type Spread struct {
	P10, P50, P90, Max float64
}

// Percentiles returns xs's 10th, 50th and 90th percentiles and maximum
// (nearest rank); zero for an empty xs.
func Percentiles(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	at := func(p float64) float64 { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return Spread{P10: at(0.1), P50: at(0.5), P90: at(0.9), Max: s[len(s)-1]}
}

// Spectrum describes how a set of vectors spreads over its dimensions:
// the eigenvalues of its covariance.
type Spectrum struct {
	// Participation is the participation ratio (Σλ)²/Σλ²: the number of
	// dimensions the variance effectively fills (the dimension for
	// isotropic noise, a few for a few clusters).
	Participation float64
	// Dims50 and Dims90 are the fewest principal components holding half
	// and nine tenths of the variance.
	Dims50, Dims90 int
	// MeanCos is the squared norm of the mean vector: the expected cosine
	// of two vectors drawn at random (anisotropy; about 0 for noise).
	MeanCos float64
}

// SpectrumOf computes the spectrum of vecs (one dimension, at least two).
func SpectrumOf(vecs [][]float32) Spectrum {
	n, dim := len(vecs), len(vecs[0])
	mean := make([]float64, dim)
	for _, v := range vecs {
		for d, x := range v {
			mean[d] += float64(x)
		}
	}
	var sp Spectrum
	for d := range mean {
		mean[d] /= float64(n)
		sp.MeanCos += mean[d] * mean[d]
	}
	centred := mat.NewDense(n, dim, nil)
	for i, v := range vecs {
		for d, x := range v {
			centred.Set(i, d, float64(x)-mean[d])
		}
	}
	cov := mat.NewSymDense(dim, nil)
	cov.SymOuterK(1/float64(n-1), centred.T())
	var eig mat.EigenSym
	if !eig.Factorize(cov, false) {
		return sp
	}
	ev := eig.Values(nil)
	slices.Sort(ev)
	slices.Reverse(ev)
	var sum, sq float64
	for _, l := range ev {
		l = max(l, 0)
		sum += l
		sq += l * l
	}
	if sq == 0 {
		return sp
	}
	sp.Participation = sum * sum / sq
	var acc float64
	for i, l := range ev {
		acc += max(l, 0)
		if sp.Dims50 == 0 && acc >= 0.5*sum {
			sp.Dims50 = i + 1
		}
		if acc >= 0.9*sum {
			sp.Dims90 = i + 1
			break
		}
	}
	return sp
}

// dist is the Euclidean distance of two unit vectors of cosine s.
func dist(s float64) float64 { return math.Sqrt(max(0, 2-2*s)) }

// TwoNN is the TwoNN estimate of intrinsic dimension (Facco et al. 2017):
// from each point's distances to its first and second nearest neighbours
// (refs, best first), n / Σ log(r2/r1). Points with fewer than two
// neighbours or r1 = 0 are left out.
func TwoNN(nn [][]spi.Ref) float64 {
	var sum float64
	var n int
	for _, r := range nn {
		if len(r) < 2 {
			continue
		}
		r1, r2 := dist(r[0].Score), dist(r[1].Score)
		if r1 <= 0 || r2 <= r1 {
			continue
		}
		sum += math.Log(r2 / r1)
		n++
	}
	if sum == 0 {
		return 0
	}
	return float64(n) / sum
}

// LID is the maximum-likelihood local intrinsic dimension at a query
// (Levina and Bickel; Amsaleg et al. 2015) from its k nearest
// neighbours, best first: -1 / mean(log(r_i / r_k)). Higher is harder for
// an index: distances crowd together. Zero when it is undefined.
func LID(refs []spi.Ref) float64 {
	if len(refs) < 2 {
		return 0
	}
	rk := dist(refs[len(refs)-1].Score)
	var sum float64
	for _, r := range refs {
		ri := dist(r.Score)
		if ri <= 0 || rk <= 0 {
			return 0
		}
		sum += math.Log(ri / rk)
	}
	if sum == 0 {
		return 0
	}
	return -float64(len(refs)) / sum
}

// RelativeContrast is the mean distance from the query to the collection
// over its distance to the nearest neighbour (He et al. 2012): near 1 the
// nearest is hardly nearer than anything (noise); large, easy.
func RelativeContrast(r ExactResult) float64 {
	if len(r.All) == 0 {
		return 0
	}
	d1 := dist(r.All[0].Score)
	if d1 <= 0 {
		return math.Inf(1)
	}
	return r.MeanDist / d1
}
