//go:build !amd64 || purego

package kernel

// kernelName is the micro-kernel in use: "go" on this build.
var kernelName = "go"

func microKernel(kb int, a, b, c []float32, ldc int) {
	microKernelGo(kb, a, b, c, ldc)
}

func geluImpl(x []float32) { geluGo(x) }

func expSub(row []float32, m float32) float32 { return expSubGo(row, m) }
