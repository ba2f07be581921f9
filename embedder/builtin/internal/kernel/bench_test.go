package kernel_test

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/ragd/ragd/embedder/builtin/internal/kernel"
)

// BenchmarkGemm multiplies a batch of token rows by a MiniLM-shaped weight
// on one goroutine with each micro-kernel; GFLOP/s is the figure to read.
func BenchmarkGemm(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, s := range [][3]int{{1024, 384, 384}, {1024, 1536, 384}, {1024, 384, 1536}, {12, 384, 384}} {
		m, n, k := s[0], s[1], s[2]
		a := randSlice(r, m*k)
		p := kernel.PackNK(nil, randSlice(r, n*k), k, n, k)
		c := make([]float32, m*n)
		scratch := make([]float32, kernel.ScratchLen)
		for _, name := range kernel.Kernels() {
			b.Run(fmt.Sprintf("%s/m%d_n%d_k%d", name, m, n, k), func(b *testing.B) {
				defer kernel.UseKernel(name)()
				cpu0 := cpuTime()
				for b.Loop() {
					kernel.Gemm(m, a, k, p, 0, kernel.NumPanels(n), c, n, scratch)
				}
				flop := 2 * float64(m*n*k) * float64(b.N)
				b.ReportMetric(flop/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(flop/(cpuTime()-cpu0).Seconds()/1e9, "GFLOP/cpu-s")
			})
		}
	}
}

// cpuTime is the process's user and system CPU time: on a busy machine,
// work per CPU second varies less than work per wall second.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
