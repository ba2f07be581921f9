//go:build !(amd64 || arm64) || purego

package kernel

// kernelName is the micro-kernel in use: "go" on this build.
var kernelName = "go"

func microKernel(kb int, a []float32, lda int, b, c []float32, ldc int) {
	microKernelGo(kb, a, lda, b, c, ldc)
}

func geluImpl(x []float32) { geluGo(x) }

func softmax([]float32) bool { return false }

func layerNormRow(row, g, b []float32, eps float32) { layerNormRowGo(row, g, b, eps) }
