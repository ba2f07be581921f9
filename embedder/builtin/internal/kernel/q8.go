package kernel

import "math"

// Int8 matrix multiply: dynamic quantisation of the linear layers, as ONNX
// Runtime's quantize_dynamic does for BERT (int8 weights, uint8 activations
// quantised as they come), with finer scales: one per weight column (output
// feature) instead of one per tensor, and one per activation row (token).
//
// A weight column j is quantised symmetrically, wq = round(w / sw[j]) in
// [-127, 127], sw[j] = max|w| / 127. An activation row i asymmetrically,
// aq = round(a / sa[i]) + za[i] in [0, 255], over a range that includes 0
// (so 0 is exact). Then
//
//	Σk a[i][k]·w[k][j] ≈ sa[i]·sw[j]·(Σk aq[i][k]·wq[k][j] − za[i]·Σk wq[k][j])
//
// where the integer sum is exact in int32 (|aq·wq| ≤ 255·127, K ≤ 65,536)
// and Σk wq[k][j] (ColSum) is computed once at load. The kernels differ
// only in how they add up the same integers, so they agree exactly up to
// the final float conversion and scaling.

// QK is the k-group of the int8 layout: four k of one column are adjacent,
// the operand shape of VPDPBUSD (and of NEON's SDOT).
const QK = 4

// QPanels is a K×N matrix B quantised to int8 per column, in panels of NR
// columns: panel p holds columns p*NR … p*NR+NR-1 as Kp/QK groups of NR×QK
// bytes, group g holding for column j the bytes of k = g*QK … g*QK+QK-1 at
// offset j*QK. Kp is K rounded up to QK; padding (past K, past N) is zero.
// Invariant: len(Data) = NumPanels(N)·Kp·NR; len(Scale) = len(ColSum) =
// NumPanels(N)·NR, zero past N; ColSum[j] = Σk Data of column j.
type QPanels struct {
	K, N, Kp int
	Data     []int8
	Scale    []float32
	ColSum   []int32
}

// QuantizeNK quantises B = Wᵀ, where W is n×k row-major with row stride ld
// (a PyTorch Linear weight, out×in), into QPanels.
func QuantizeNK(w []float32, ld, n, k int) QPanels {
	kp := (k + QK - 1) / QK * QK
	np := NumPanels(n)
	q := QPanels{K: k, N: n, Kp: kp, Data: make([]int8, np*kp*NR), Scale: make([]float32, np*NR), ColSum: make([]int32, np*NR)}
	for col := 0; col < n; col++ {
		row := w[col*ld : col*ld+k]
		var amax float32
		for _, v := range row {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		if amax == 0 {
			continue
		}
		s := amax / 127
		inv := 1 / s
		q.Scale[col] = s
		panel := q.Data[col/NR*kp*NR:]
		j := col % NR
		var sum int32
		for kk, v := range row {
			x := int8(max(-127, min(127, roundEven(v*inv))))
			panel[kk/QK*NR*QK+j*QK+kk%QK] = x
			sum += int32(x)
		}
		q.ColSum[col] = sum
	}
	return q
}

// roundEven rounds half to even, as the vector conversions do.
func roundEven(x float32) float32 { return float32(math.RoundToEven(float64(x))) }

// QRows is a block of rows quantised to uint8 with a scale and zero point
// per row. Invariant after Quantize(x, ldx, rows, k): len(Data) = rows·Kp,
// len(Scale) = len(Zero) = rows, bytes past k in a row are zero.
type QRows struct {
	Kp    int
	Data  []uint8
	Scale []float32
	Zero  []int32
}

// Quantize fills q with the rows × k matrix x (row stride ldx), reusing
// q's storage when large enough.
func (q *QRows) Quantize(x []float32, ldx, rows, k int) {
	q.Resize(rows, k)
	q.QuantizeRange(x, ldx, 0, rows, k)
}

// Resize sizes q for rows of k values, reusing its storage when large
// enough; QuantizeRange then fills it.
func (q *QRows) Resize(rows, k int) {
	q.Kp = (k + QK - 1) / QK * QK
	q.Data = growU8(q.Data, rows*q.Kp)
	q.Scale = growF32(q.Scale, rows)
	q.Zero = growI32(q.Zero, rows)
}

// QuantizeRange quantises rows [r0, r1) of x into q, which Resize has
// sized; disjoint ranges may run concurrently.
func (q *QRows) QuantizeRange(x []float32, ldx, r0, r1, k int) {
	for r := r0; r < r1; r++ {
		dst := q.Data[r*q.Kp : (r+1)*q.Kp]
		q.Scale[r], q.Zero[r] = quantizeRow(dst[:k], x[r*ldx:r*ldx+k])
		clear(dst[k:])
	}
}

// quantizeRow quantises src into dst (same length) and returns the scale
// and zero point: the range [min(src, 0), max(src, 0)] onto [0, 255].
func quantizeRow(dst []uint8, src []float32) (float32, int32) {
	lo, hi := minMax(src)
	if hi == lo {
		clear(dst)
		return 0, 0
	}
	s := (hi - lo) / 255
	inv := 1 / s
	z := min(255, max(0, roundEven(-lo*inv)))
	quant(dst, src, inv, z)
	return s, int32(z)
}

// minMaxGo returns the least and greatest of x and 0.
func minMaxGo(x []float32) (lo, hi float32) {
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// quantGo sets dst[i] = clamp(round-to-even(x[i]·inv + z), 0, 255), the
// product rounded to float32 before the sum (the explicit conversion keeps
// the compiler from fusing them), as the vector version computes it.
func quantGo(dst []uint8, x []float32, inv, z float32) {
	for i, v := range x {
		dst[i] = uint8(min(255, max(0, roundEven(float32(v*inv)+z))))
	}
}

func growU8(s []uint8, n int) []uint8 {
	if cap(s) < n {
		return make([]uint8, n)
	}
	return s[:n]
}

func growF32(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

func growI32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// QScratch is the scratch GemmQ8 needs, one per goroutine.
type QScratch struct {
	pad   []uint8   // MR rows of a partial row block
	ps    []float32 // their scales
	pz    []int32   // their zero points
	tile  []float32 // a partial tile of C
	itile []int32   // an int32 tile, for kernels that produce one
}

func (s *QScratch) grow(kp int) {
	s.pad = growU8(s.pad, MR*kp)
	s.ps = growF32(s.ps, MR)
	s.pz = growI32(s.pz, MR)
	s.tile = growF32(s.tile, MR*NR)
	s.itile = growI32(s.itile, MR*NR)
}

// qRowBlock is the rows of A GemmQ8 keeps in cache while it runs every
// panel over them (256 rows of 1,536 bytes: 384 KiB of L2).
const qRowBlock = 256

// GemmQ8 adds A·B to C for rows [r0, r0+m) of a and the columns of panels
// [p0, p1) of b: C[i][j] += a.Scale[r]·b.Scale[j]·(Σk a[r][k]·b[k][j] −
// a.Zero[r]·b.ColSum[j]), r = r0+i. C has row stride ldc; a.Kp must be
// b.Kp. Each panel's weights are read once per 256 rows.
func GemmQ8(m int, a *QRows, r0 int, b QPanels, p0, p1 int, c []float32, ldc int, s *QScratch) {
	if m <= 0 || p0 >= p1 || b.K == 0 {
		return
	}
	kp := b.Kp
	s.grow(kp)
	for i0 := 0; i0 < m; i0 += qRowBlock {
		mb := min(qRowBlock, m-i0)
		full := mb / MR * MR
		if full < mb {
			// The rows of a last, partial row block, copied into a block
			// of MR rows; the rest have scale 0 and add nothing.
			clear(s.pad)
			clear(s.ps)
			clear(s.pz)
			lo := r0 + i0 + full
			copy(s.pad, a.Data[lo*kp:(lo+mb-full)*kp])
			copy(s.ps, a.Scale[lo:lo+mb-full])
			copy(s.pz, a.Zero[lo:lo+mb-full])
		}
		for p := p0; p < p1; p++ {
			bp := b.Data[p*kp*NR : (p+1)*kp*NR]
			sw, cs := b.Scale[p*NR:(p+1)*NR], b.ColSum[p*NR:(p+1)*NR]
			ncols := min(NR, b.N-p*NR)
			for rr := 0; rr < mb; rr += MR {
				rows := min(MR, mb-rr)
				r := r0 + i0 + rr
				ablk, sa, za := a.Data[r*kp:], a.Scale[r:], a.Zero[r:]
				if rows < MR {
					ablk, sa, za = s.pad, s.ps, s.pz
				}
				coff := (i0+rr)*ldc + p*NR
				if rows == MR && ncols == NR {
					microKernelQ8(kp/QK, ablk, kp, sa, za, bp, sw, cs, c[coff:], ldc, s)
					continue
				}
				clear(s.tile)
				microKernelQ8(kp/QK, ablk, kp, sa, za, bp, sw, cs, s.tile, NR, s)
				for i := 0; i < rows; i++ {
					dst := c[coff+i*ldc : coff+i*ldc+ncols]
					for j := range dst {
						dst[j] += s.tile[i*NR+j]
					}
				}
			}
		}
	}
}

// microKernelQ8Go is the portable int8 micro-kernel: the MR×NR tile of C
// (row stride ldc) += the dequantised product of MR rows of a (row stride
// lda bytes, k4·QK bytes used) and one panel b, per the formula of GemmQ8.
func microKernelQ8Go(k4 int, a []uint8, lda int, sa []float32, za []int32, b []int8, sw []float32, cs []int32, c []float32, ldc int) {
	var acc [NR]int32
	for r := 0; r < MR; r++ {
		clear(acc[:])
		row := a[r*lda : r*lda+k4*QK]
		for g := 0; g < k4; g++ {
			a0, a1, a2, a3 := int32(row[g*QK]), int32(row[g*QK+1]), int32(row[g*QK+2]), int32(row[g*QK+3])
			grp := b[g*NR*QK : (g+1)*NR*QK]
			for j := 0; j < NR; j++ {
				w := grp[j*QK : j*QK+QK]
				acc[j] += a0*int32(w[0]) + a1*int32(w[1]) + a2*int32(w[2]) + a3*int32(w[3])
			}
		}
		dequantRow(c[r*ldc:r*ldc+NR], &acc, sa[r], za[r], sw, cs)
	}
}

// dequantRow adds row r's dequantised int32 sums to c: c[j] +=
// float32(acc[j] − za·cs[j])·(sa·sw[j]), the assembly kernels' arithmetic
// (up to their fused multiply-add).
func dequantRow(c []float32, acc *[NR]int32, sa float32, za int32, sw []float32, cs []int32) {
	for j := range c {
		c[j] += float32(acc[j]-za*cs[j]) * (sa * sw[j])
	}
}
