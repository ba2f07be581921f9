//go:build arm64 && !purego

package kernel

import (
	"os"

	"golang.org/x/sys/cpu"
)

//go:noescape
func kernQ8SDOT(k4 int, a *uint8, lda int, b *int8, t *int32)

// qKernelName is the int8 micro-kernel in use: "neon" (the dot-product
// extension's SDOT, Armv8.2 and later: Graviton 2+, Apple M1+, Ampere
// Altra) or "go" (older arm64 CPUs, or RAGD_KERNEL=go).
var qKernelName = pickQKernelARM(os.Getenv(EnvKernel), cpu.ARM64.HasASIMDDP)

// pickQKernelARM returns "neon" when the CPU has SDOT and want does not
// name the portable kernel.
func pickQKernelARM(want string, dotprod bool) string {
	if dotprod && want != "go" {
		return "neon"
	}
	return "go"
}

func microKernelQ8(k4 int, a []uint8, lda int, sa []float32, za []int32, b []int8, sw []float32, cs []int32, c []float32, ldc int, s *QScratch) {
	if qKernelName != "neon" || k4 == 0 {
		microKernelQ8Go(k4, a, lda, sa, za, b, sw, cs, c, ldc)
		return
	}
	// Bounds: a holds (MR-1)·lda+4·k4 bytes, b k4 groups of NR×4, c
	// (MR-1)·ldc+NR floats; MR row and NR column scales and sums; the int32
	// tile MR×NR, as 4×16 blocks.
	_ = a[(MR-1)*lda+k4*QK-1]
	_ = b[k4*NR*QK-1]
	_ = c[(MR-1)*ldc+NR-1]
	_, _, _, _ = sa[MR-1], za[MR-1], sw[NR-1], cs[NR-1]
	t := s.itile[:MR*NR]
	for r := 0; r < MR; r += 4 {
		for j := 0; j < NR; j += 16 {
			kernQ8SDOT(k4, &a[r*lda], lda, &b[j*QK], &t[(r/4*(NR/16)+j/16)*64])
		}
	}
	var acc [NR]int32
	for r := 0; r < MR; r++ {
		blk := t[r/4*(NR/16)*64+r%4*16:]
		for j := 0; j < NR; j++ {
			acc[j] = blk[j/16*64+j%16] + 128*cs[j]
		}
		dequantRow(c[r*ldc:r*ldc+NR], &acc, sa[r], za[r], sw, cs)
	}
}

func minMax(x []float32) (lo, hi float32) { return minMaxGo(x) }

func quant(dst []uint8, x []float32, inv, z float32) { quantGo(dst, x, inv, z) }
