package eval

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Randomization test settings: enough sign flips that the p-value's own
// sampling error (about sqrt(p(1−p)/n), < 0.005) does not matter at the
// usual thresholds, and a fixed seed so a report is reproducible.
const (
	RandomizationSamples = 10000
	RandomizationSeed    = 1
)

// Comparison is a paired comparison of two modes' per-query nDCG@10 over
// the same queries.
type Comparison struct {
	A, B string // A is compared with B
	// MeanDiff is the mean over queries of nDCG@10(A) − nDCG@10(B).
	MeanDiff float64
	// P is the two-sided p-value of the paired randomization test: the
	// share of random sign assignments to the per-query differences whose
	// mean is at least as far from zero as MeanDiff's (Smucker, Allan and
	// Carterette, CIKM 2007, recommend it for IR evaluation).
	P float64
	// Better, Worse and Tied count queries where A scored above, below or
	// equal to B.
	Better, Worse, Tied int
}

// PairedRandomization returns the mean of a[i]−b[i] and the two-sided
// p-value of the paired randomization (sign-flip) test with the given
// number of samples, drawn from a PCG seeded with seed. p is
// (hits+1)/(samples+1), so it is never zero.
func PairedRandomization(a, b []float64, samples int, seed uint64) (meanDiff, p float64, err error) {
	if len(a) != len(b) {
		return 0, 0, fmt.Errorf("eval: paired test over %d and %d values", len(a), len(b))
	}
	if len(a) == 0 || samples < 1 {
		return 0, 0, errors.New("eval: paired test needs values and samples")
	}
	d := make([]float64, len(a))
	var sum float64
	for i := range a {
		d[i] = a[i] - b[i]
		sum += d[i]
	}
	n := float64(len(d))
	observed := math.Abs(sum / n)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	hits := 0
	for range samples {
		var s float64
		for _, x := range d {
			if rng.Uint64()&1 == 0 {
				s += x
			} else {
				s -= x
			}
		}
		// A relative tolerance keeps the observed assignment itself
		// counted despite rounding in the sums.
		if math.Abs(s/n) >= observed*(1-1e-12) {
			hits++
		}
	}
	return sum / n, float64(hits+1) / float64(samples+1), nil
}

// Compare runs the paired randomization test of mode a against mode b.
func (r *Report) Compare(a, b string) (Comparison, error) {
	ma, mb := r.Mode(a), r.Mode(b)
	if ma == nil || mb == nil {
		return Comparison{}, fmt.Errorf("eval: compare %q with %q: mode not in the report", a, b)
	}
	c := Comparison{A: a, B: b}
	var err error
	c.MeanDiff, c.P, err = PairedRandomization(ma.PerQueryNDCG10, mb.PerQueryNDCG10, RandomizationSamples, RandomizationSeed)
	if err != nil {
		return Comparison{}, err
	}
	for i, x := range ma.PerQueryNDCG10 {
		switch y := mb.PerQueryNDCG10[i]; {
		case x > y:
			c.Better++
		case x < y:
			c.Worse++
		default:
			c.Tied++
		}
	}
	return c, nil
}

// BestSingle is the single-source mode with the highest nDCG@10 (the first
// on a tie), or nil when the report has none.
func (r *Report) BestSingle() *ModeReport {
	var best *ModeReport
	for i := range r.Modes {
		m := &r.Modes[i]
		if m.Single != "" && (best == nil || m.NDCG10 > best.NDCG10) {
			best = m
		}
	}
	return best
}

// Comparisons compares every hybrid mode with each single-source mode:
// first the best one (BestSingle), then the others in report order. A
// hybrid mode that beats the best source need not beat every source
// significantly, nor the other way round, so each pair is tested.
func (r *Report) Comparisons() ([]Comparison, error) {
	best := r.BestSingle()
	if best == nil {
		return nil, nil
	}
	singles := []string{best.Mode}
	for _, m := range r.Modes {
		if m.Single != "" && m.Mode != best.Mode {
			singles = append(singles, m.Mode)
		}
	}
	var out []Comparison
	for _, m := range r.Modes {
		if m.Single != "" {
			continue
		}
		for _, s := range singles {
			c, err := r.Compare(m.Mode, s)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}
