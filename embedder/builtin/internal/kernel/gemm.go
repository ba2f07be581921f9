// Package kernel holds the numeric kernels of the built-in encoder: a
// single-precision matrix multiply over pre-packed right-hand panels (the
// model's weights), and the element-wise functions of a transformer layer
// (GELU, softmax, layer normalisation).
//
// The multiply follows the GotoBLAS/BLIS design. The right-hand matrix B
// (K×N) is stored as panels of NR columns, each panel K rows of NR
// contiguous floats, zero-padded past N; weights are packed once at load.
// The left-hand matrix A is read in place, MC rows × KC columns at a time
// (packing it cost more than it saved: the micro-kernel broadcasts its
// elements from MR row streams); only a last partial block of rows is copied
// into a zero-padded one. The micro-kernel accumulates an MR×NR tile of C in
// registers: on amd64 with AVX-512 it is 12×32 (24 zmm accumulators), with
// AVX2+FMA four 6×16 calls, on arm64 six 4×16 NEON calls, elsewhere (or
// with the purego build tag) portable Go.
//
// GELU and softmax have AVX-512 and AVX2 versions, LayerNorm an AVX-512 one;
// the portable Go versions are the reference the tests hold them to.
//
// Every function here is serial; callers split work across goroutines by
// row blocks or panels (the ranges are independent).
package kernel

// Tile sizes. MR×NR is the register tile; KC×NR floats of B (48 KiB) stream from
// L1 while the MC×KC block of A (288 KiB) stays in L2.
const (
	MR = 12
	NR = 32
	KC = 384
	MC = 16 * MR
)

// ScratchLen is the length of the scratch slice Gemm needs.
const ScratchLen = MR*KC + MR*NR

// Panels is a K×N matrix B in panel layout: ceil(N/NR) panels, panel p
// holding columns p*NR … p*NR+NR-1 as K rows of NR floats.
type Panels struct {
	K, N int
	Data []float32
}

// NumPanels is the number of NR-column panels of an N-column matrix.
func NumPanels(n int) int { return (n + NR - 1) / NR }

// PanelsLen is the length of Panels.Data for a K×N matrix.
func PanelsLen(k, n int) int { return NumPanels(n) * k * NR }

func panelsFor(dst []float32, k, n int) Panels {
	size := PanelsLen(k, n)
	if cap(dst) < size {
		dst = make([]float32, size)
	}
	return Panels{K: k, N: n, Data: dst[:size]}
}

// PackNK packs B = Wᵀ, where W is n×k row-major with row stride ld: the
// layout of a PyTorch Linear weight (out×in), or of the keys in attention.
// It reuses dst when large enough.
func PackNK(dst, w []float32, ld, n, k int) Panels {
	p := panelsFor(dst, k, n)
	for pi := 0; pi < NumPanels(n); pi++ {
		panel := p.Data[pi*k*NR : (pi+1)*k*NR]
		for j := 0; j < NR; j++ {
			col := pi*NR + j
			if col >= n {
				for kk := 0; kk < k; kk++ {
					panel[kk*NR+j] = 0
				}
				continue
			}
			row := w[col*ld : col*ld+k]
			for kk, v := range row {
				panel[kk*NR+j] = v
			}
		}
	}
	return p
}

// PackKN packs B given k×n row-major with row stride ld (the values in
// attention). It reuses dst when large enough.
func PackKN(dst, b []float32, ld, k, n int) Panels {
	p := panelsFor(dst, k, n)
	for pi := 0; pi < NumPanels(n); pi++ {
		panel := p.Data[pi*k*NR : (pi+1)*k*NR]
		c0 := pi * NR
		w := min(NR, n-c0)
		for kk := 0; kk < k; kk++ {
			dstRow := panel[kk*NR : kk*NR+NR]
			copy(dstRow, b[kk*ld+c0:kk*ld+c0+w])
			clear(dstRow[w:])
		}
	}
	return p
}

// Gemm adds A·B to C for the m rows of A (m×K, row stride lda) and the
// columns of panels [p0, p1) of B: C[i][j] += Σk A[i][k]·B[k][j]. C has row
// stride ldc. scratch must hold ScratchLen floats; Gemm allocates nothing.
func Gemm(m int, a []float32, lda int, b Panels, p0, p1 int, c []float32, ldc int, scratch []float32) {
	if m <= 0 || p0 >= p1 || b.K == 0 {
		return
	}
	K := b.K
	pad := scratch[:MR*KC]
	tile := scratch[MR*KC : MR*KC+MR*NR]
	for i0 := 0; i0 < m; i0 += MC {
		mb := min(MC, m-i0)
		for k0 := 0; k0 < K; k0 += KC {
			kb := min(KC, K-k0)
			// The rows of a last, partial row block, copied into a
			// zero-padded block of MR rows.
			full := mb / MR * MR
			if full < mb {
				clear(pad)
				for r := 0; r < mb-full; r++ {
					copy(pad[r*kb:(r+1)*kb], a[(i0+full+r)*lda+k0:])
				}
			}
			for p := p0; p < p1; p++ {
				bp := b.Data[p*K*NR+k0*NR : p*K*NR+(k0+kb)*NR]
				ncols := min(NR, b.N-p*NR)
				for r0 := 0; r0 < mb; r0 += MR {
					rows := min(MR, mb-r0)
					ablk, ld := a[(i0+r0)*lda+k0:], lda
					if rows < MR {
						ablk, ld = pad, kb
					}
					coff := (i0+r0)*ldc + p*NR
					if rows == MR && ncols == NR {
						microKernel(kb, ablk, ld, bp, c[coff:], ldc)
						continue
					}
					clear(tile)
					microKernel(kb, ablk, ld, bp, tile, NR)
					for r := 0; r < rows; r++ {
						dst := c[coff+r*ldc : coff+r*ldc+ncols]
						for j := range dst {
							dst[j] += tile[r*NR+j]
						}
					}
				}
			}
		}
	}
}

// microKernelGo is the portable micro-kernel: the MR×NR tile of C (row
// stride ldc) += A (MR×kb, row stride lda) · b (kb×NR). It works in 4×4
// blocks held in sixteen local variables, which the compiler keeps in
// registers (an array accumulator lives in memory and ran 3-4× slower).
func microKernelGo(kb int, a []float32, lda int, b, c []float32, ldc int) {
	for r := 0; r < MR; r += 4 {
		a0 := a[r*lda : r*lda+kb]
		a1 := a[(r+1)*lda : (r+1)*lda+kb]
		a2 := a[(r+2)*lda : (r+2)*lda+kb]
		a3 := a[(r+3)*lda : (r+3)*lda+kb]
		for j := 0; j < NR; j += 4 {
			var c00, c01, c02, c03, c10, c11, c12, c13 float32
			var c20, c21, c22, c23, c30, c31, c32, c33 float32
			for kk := 0; kk < kb; kk++ {
				bb := (*[4]float32)(b[kk*NR+j : kk*NR+j+4])
				b0, b1, b2, b3 := bb[0], bb[1], bb[2], bb[3]
				x := a0[kk]
				c00 += x * b0
				c01 += x * b1
				c02 += x * b2
				c03 += x * b3
				x = a1[kk]
				c10 += x * b0
				c11 += x * b1
				c12 += x * b2
				c13 += x * b3
				x = a2[kk]
				c20 += x * b0
				c21 += x * b1
				c22 += x * b2
				c23 += x * b3
				x = a3[kk]
				c30 += x * b0
				c31 += x * b1
				c32 += x * b2
				c33 += x * b3
			}
			add4(c[r*ldc+j:], c00, c01, c02, c03)
			add4(c[(r+1)*ldc+j:], c10, c11, c12, c13)
			add4(c[(r+2)*ldc+j:], c20, c21, c22, c23)
			add4(c[(r+3)*ldc+j:], c30, c31, c32, c33)
		}
	}
}

func add4(c []float32, v0, v1, v2, v3 float32) {
	d := (*[4]float32)(c[:4])
	d[0] += v0
	d[1] += v1
	d[2] += v2
	d[3] += v3
}

// EnvKernel names an environment variable that, read once at start, can
// choose a slower kernel than the CPU's best: "avx2" or "go" (to measure
// them, or to rule the assembly out). Other values are ignored.
const EnvKernel = "RAGD_KERNEL"

// KernelName names the micro-kernel this process uses: "avx512", "avx2"
// (amd64 with those features) or "go" (portable; any other CPU, the purego
// build tag, or RAGD_KERNEL=go).
func KernelName() string { return kernelName }

// QKernelName names the int8 micro-kernel this process uses:
// "avx512vnni" (amd64 with AVX-512 VNNI), "avx2" (amd64 with AVX2 and
// FMA, or RAGD_KERNEL=avx2), "neon" (arm64 with the dot-product extension)
// or "go" (portable: any other CPU, the purego build tag, or
// RAGD_KERNEL=go).
func QKernelName() string { return qKernelName }
