// Package kernel holds the numeric kernels of the built-in encoder: a
// single-precision matrix multiply over pre-packed right-hand panels (the
// model's weights), and the element-wise functions of a transformer layer
// (GELU, softmax, layer normalisation).
//
// The multiply follows the GotoBLAS/BLIS design. The right-hand matrix B
// (K×N) is stored as panels of NR columns, each panel K rows of NR
// contiguous floats, zero-padded past N; weights are packed once at load.
// The left-hand matrix A is packed per call, MC rows × KC columns at a
// time, into row blocks of MR rows laid out k-major (a[k*MR+r]) so that the
// micro-kernel reads one contiguous stream. The micro-kernel accumulates an
// MR×NR tile of C in registers: on amd64 with AVX-512 it is 12×32 (24 zmm
// accumulators), with AVX2+FMA four 6×16 calls, elsewhere portable Go.
//
// Every function here is serial; callers split work across goroutines by
// row blocks or panels (the ranges are independent).
package kernel

// Tile sizes. MR×NR is the register tile; KC×NR floats of B (48 KiB) stream from
// L1 while the MC×KC packed block of A (288 KiB) stays in L2.
const (
	MR = 12
	NR = 32
	KC = 384
	MC = 16 * MR
)

// ScratchLen is the length of the scratch slice Gemm needs.
const ScratchLen = MC*KC + MR*NR

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

// packA copies rows × kb of A (stride lda) into MR-row blocks, k-major,
// zero-filling the rows past rows in the last block.
func packA(dst, a []float32, lda, rows, kb int) {
	for ib := 0; ib*MR < rows; ib++ {
		blk := dst[ib*MR*kb : (ib+1)*MR*kb]
		r0 := ib * MR
		nr := min(MR, rows-r0)
		for r := 0; r < nr; r++ {
			src := a[(r0+r)*lda : (r0+r)*lda+kb]
			for kk, v := range src {
				blk[kk*MR+r] = v
			}
		}
		for r := nr; r < MR; r++ {
			for kk := 0; kk < kb; kk++ {
				blk[kk*MR+r] = 0
			}
		}
	}
}

// Gemm adds A·B to C for the m rows of A (m×K, row stride lda) and the
// columns of panels [p0, p1) of B: C[i][j] += Σk A[i][k]·B[k][j]. C has row
// stride ldc. scratch must hold ScratchLen floats; Gemm allocates nothing.
func Gemm(m int, a []float32, lda int, b Panels, p0, p1 int, c []float32, ldc int, scratch []float32) {
	if m <= 0 || p0 >= p1 || b.K == 0 {
		return
	}
	K := b.K
	ap := scratch[:MC*KC]
	tile := scratch[MC*KC : MC*KC+MR*NR]
	for i0 := 0; i0 < m; i0 += MC {
		mb := min(MC, m-i0)
		for k0 := 0; k0 < K; k0 += KC {
			kb := min(KC, K-k0)
			packA(ap, a[i0*lda+k0:], lda, mb, kb)
			for p := p0; p < p1; p++ {
				bp := b.Data[p*K*NR+k0*NR : p*K*NR+(k0+kb)*NR]
				ncols := min(NR, b.N-p*NR)
				for ib := 0; ib*MR < mb; ib++ {
					rows := min(MR, mb-ib*MR)
					ablk := ap[ib*MR*kb : (ib+1)*MR*kb]
					coff := (i0+ib*MR)*ldc + p*NR
					if rows == MR && ncols == NR {
						microKernel(kb, ablk, bp, c[coff:], ldc)
						continue
					}
					clear(tile)
					microKernel(kb, ablk, bp, tile, NR)
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
// stride ldc) += a (kb×MR, k-major) · b (kb×NR).
func microKernelGo(kb int, a, b, c []float32, ldc int) {
	var acc [MR][NR]float32
	for kk := 0; kk < kb; kk++ {
		brow := (*[NR]float32)(b[kk*NR : kk*NR+NR])
		arow := (*[MR]float32)(a[kk*MR : kk*MR+MR])
		for r := 0; r < MR; r++ {
			av := arow[r]
			row := &acc[r]
			for j := 0; j < NR; j++ {
				row[j] += av * brow[j]
			}
		}
	}
	for r := 0; r < MR; r++ {
		dst := c[r*ldc : r*ldc+NR]
		for j := range dst {
			dst[j] += acc[r][j]
		}
	}
}

// KernelName names the micro-kernel this process uses: "avx512", "avx2"
// (amd64 with those features) or "go" (portable; any other CPU, or the
// purego build tag).
func KernelName() string { return kernelName }
