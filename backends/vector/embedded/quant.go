package embedded

import "math"

// The scan reads int8 codes instead of float32 rows: a quarter of the
// memory traffic, which is what an exact scan of 100,000 384-dimensional
// rows is bound by. Each row r (float32, normalised for cosine) is stored
// beside its codes c = round(r/s) with s = max|r|/127, so r = s·c + ε.
// A query q is quantised likewise (to int16 codes), q = t·d + δ. Then
//
//	q·r = q·(s·c) + q·ε = s·t·(d·c) + s·(δ·c) + q·ε
//
// and by Cauchy–Schwarz |q·r − s·t·(d·c)| ≤ s·‖δ‖·‖c‖ + ‖q‖·‖ε‖. The
// integer inner product d·c is exact, so every row gets an interval that holds its
// true score. A row whose upper end lies below the k-th best lower end
// cannot be in the top k; the rows left (a few hundred of 100,000 random
// 384-dimensional rows) are scored in float32 exactly as a full scan would
// score them. The answer is the full scan's, ties included.

// maxCode is the largest row code magnitude: codes lie in [-127, 127].
const maxCode = 127

// rowQuant is what the scan needs of a row besides its codes. Norms and
// the residual are rounded up, so bounds computed from them hold.
type rowQuant struct {
	scale    float32 // s: the row is about scale × codes
	resid    float32 // ‖ε‖ = ‖r − s·c‖
	codeNorm float32 // ‖c‖
	norm     float32 // ‖r‖
}

// quantize writes the codes of v into codes and returns its rowQuant.
func quantize(v []float32, codes []int8) rowQuant {
	var m float64
	for _, x := range v {
		m = max(m, math.Abs(float64(x)))
	}
	q := rowQuant{scale: float32(m / maxCode)}
	s := float64(q.scale)
	var inv float64
	if s > 0 {
		inv = 1 / s
	}
	var resid, cn, n float64
	for i, x := range v {
		// Any rounding will do: the error it leaves is measured below.
		c := max(-maxCode, min(maxCode, math.RoundToEven(float64(x)*inv)))
		codes[i] = int8(c)
		e := float64(x) - s*c
		resid += e * e
		cn += c * c
		n += float64(x) * float64(x)
	}
	q.resid = roundUp(math.Sqrt(resid))
	q.codeNorm = roundUp(math.Sqrt(cn))
	q.norm = roundUp(math.Sqrt(n))
	return q
}

// roundUp converts x >= 0 to the nearest float32 not below it.
func roundUp(x float64) float32 {
	f := float32(x)
	if float64(f) < x {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

// quantQuery is a query prepared for the scan. Its codes are int16, so
// its own quantisation error (‖δ‖) is negligible beside the rows'; the
// largest code is bounded so that no inner product with a row overflows
// int32 (queryCodeMax).
type quantQuery struct {
	codes     []int16
	scale     float64 // t
	deltaNorm float64 // ‖δ‖, rounded up
	norm      float64 // ‖q‖
	sqNorm    float64 // ‖q‖² (l2)
	fpErr     float64 // relative float32 rounding bound of a dim-length sum
}

// queryCodeMax is the largest query code for dim dimensions: the inner
// product with a row is at most dim·maxCode·queryCodeMax < 2³¹.
func queryCodeMax(dim int) float64 {
	return float64(min(math.MaxInt16, (math.MaxInt32-1)/(maxCode*max(dim, 1))))
}

func newQuantQuery(v []float32) quantQuery {
	var m, n2 float64
	for _, x := range v {
		m = max(m, math.Abs(float64(x)))
		n2 += float64(x) * float64(x)
	}
	top := queryCodeMax(len(v))
	t := m / top
	var inv float64
	if t > 0 {
		inv = 1 / t
	}
	codes := make([]int16, len(v))
	var delta float64
	for i, x := range v {
		c := max(-top, min(top, math.RoundToEven(float64(x)*inv)))
		codes[i] = int16(c)
		e := float64(x) - t*c
		delta += e * e
	}
	n := float64(roundUp(math.Sqrt(n2)))
	return quantQuery{
		codes: codes, scale: t, deltaNorm: float64(roundUp(math.Sqrt(delta))), norm: n, sqNorm: n * n,
		// A float32 sum of n products is within n·2⁻²⁴·Σ|products| of the
		// true value; twice that covers both the row ranked in and the row
		// it displaces.
		fpErr: float64(len(v)+8) * 0x1p-23,
	}
}

// interval returns the bounds of the search key of a row (higher is
// better: the inner product, or −‖q−r‖² under l2) from its int8 inner
// product with the query.
func (q *quantQuery) interval(r rowQuant, dotCodes int32, l2 bool) (lo, hi float64) {
	s := float64(r.scale)
	approx := s * q.scale * float64(dotCodes)
	rn := float64(r.norm)
	slack := s*q.deltaNorm*float64(r.codeNorm) + q.norm*float64(r.resid)
	if l2 {
		// −‖q−r‖² = 2·q·r − ‖q‖² − ‖r‖²
		approx = 2*approx - q.sqNorm - rn*rn
		slack = 2*slack + q.fpErr*(q.norm+rn)*(q.norm+rn)
	} else {
		slack += q.fpErr * q.norm * rn
	}
	// The float64 arithmetic above is itself rounded; widen by a hair.
	slack = slack*(1+1e-9) + 1e-30
	return approx - slack, approx + slack
}

// dotCodesEach is dotCodesMany one row at a time (dotCodes).
func dotCodesEach(a []int16, b []int8, out []int32) {
	n := len(a)
	for j := range out {
		out[j] = dotCodes(a, b[j*n:(j+1)*n])
	}
}

// dotCodesGeneric is the portable inner product of a and b[:len(a)].
func dotCodesGeneric(a []int16, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += int32(a[i]) * int32(b[i])
		s1 += int32(a[i+1]) * int32(b[i+1])
		s2 += int32(a[i+2]) * int32(b[i+2])
		s3 += int32(a[i+3]) * int32(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += int32(a[i]) * int32(b[i])
	}
	return (s0 + s1) + (s2 + s3)
}
