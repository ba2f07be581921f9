//go:build !(amd64 || arm64) || purego

package kernel

// qKernelName is the int8 micro-kernel in use: "go" on this build (CPUs
// other than amd64 and arm64, or the purego tag).
var qKernelName = "go"

func microKernelQ8(k4 int, a []uint8, lda int, sa []float32, za []int32, b []int8, sw []float32, cs []int32, c []float32, ldc int, _ *QScratch) {
	microKernelQ8Go(k4, a, lda, sa, za, b, sw, cs, c, ldc)
}

func minMax(x []float32) (lo, hi float32) { return minMaxGo(x) }

func quant(dst []uint8, x []float32, inv, z float32) { quantGo(dst, x, inv, z) }
