package kernel

import "math"

// Erf is the error function in float32, a rational approximation (odd
// degree-13 numerator, even degree-8 denominator in x, as in Eigen's
// generic_fast_erf_float) on [-4, 4] and ±1 outside; it is within 1e-6 of
// math.Erf.
func Erf(x float32) float32 {
	x = min(max(x, -4), 4)
	x2 := x * x
	p := x2*-2.72614225801306e-10 + 2.77068142495902e-08
	p = p*x2 + -2.10102402082508e-06
	p = p*x2 + -5.69250639462346e-05
	p = p*x2 + -7.34990630326855e-04
	p = p*x2 + -2.95459980854025e-03
	p = p*x2 + -1.60960333262415e-02
	p *= x
	q := x2*-1.45660718464996e-05 + -2.13374055278905e-04
	q = q*x2 + -1.68282697438203e-03
	q = q*x2 + -7.37332916720468e-03
	q = q*x2 + -1.42647390514189e-02
	return p / q
}

// GELU applies the exact (erf) form of GELU in place: x·(1+erf(x/√2))/2, the
// "gelu" activation of BERT's config.json.
func GELU(x []float32) {
	geluImpl(x)
}

func geluGo(x []float32) {
	for i, v := range x {
		x[i] = 0.5 * v * (1 + Erf(v*math.Sqrt2/2))
	}
}

// Exp is e^x in float32: range reduction by ln 2 and a degree-6 polynomial
// on [-ln2/2, ln2/2] (Cephes expf), within 2 ulp of math.Exp on
// [-87.3, 88.7]. x is clamped to that range, as the vector kernels clamp
// it: below -87.3 Exp returns Exp(-87.3) ≈ 1.2e-38, the smallest value it
// makes (a normal number: never 0, never a denormal), above 88.7
// Exp(88.7). Softmax subtracts the row's maximum first, so only the
// clamp at -87.3 is ever reached there.
func Exp(x float32) float32 {
	x = min(max(x, -87.3), 88.7)
	n := float32(math.Floor(float64(x*math.Log2E + 0.5)))
	r := x - n*0.693359375
	r -= n * -2.12194440e-4
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	p = p*r*r + r + 1
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// Softmax replaces row with softmax(row), stable (the maximum is subtracted
// first). The sum is accumulated in float32 like the reference.
func Softmax(row []float32) {
	if len(row) == 0 || softmax(row) {
		return
	}
	m := row[0]
	for _, v := range row[1:] {
		m = max(m, v)
	}
	sum := expSubGo(row, m)
	inv := 1 / sum
	for i := range row {
		row[i] *= inv
	}
}

func expSubGo(row []float32, m float32) float32 {
	var sum float32
	for i, v := range row {
		e := Exp(v - m)
		row[i] = e
		sum += e
	}
	return sum
}

// LayerNorm normalises each row of x (rows × len(gamma), row stride ld) in
// place to zero mean and unit variance, then scales by gamma and shifts by
// beta. The portable version accumulates mean and variance in float64, the
// AVX-512 one in 16 float32 lanes (rows of a multiple of 16).
func LayerNorm(x []float32, ld, rows int, gamma, beta []float32, eps float32) {
	n := len(gamma)
	for r := 0; r < rows; r++ {
		layerNormRow(x[r*ld:r*ld+n], gamma, beta, eps)
	}
}

func layerNormRowGo(row, gamma, beta []float32, eps float32) {
	n := len(gamma)
	var s float64
	for _, v := range row {
		s += float64(v)
	}
	mean := float32(s / float64(n))
	var ss float64
	for _, v := range row {
		d := float64(v - mean)
		ss += d * d
	}
	inv := float32(1 / math.Sqrt(ss/float64(n)+float64(eps)))
	for i, v := range row {
		row[i] = (v-mean)*inv*gamma[i] + beta[i]
	}
}
