package kernel_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ragd/ragd/embedder/builtin/internal/kernel"
	"github.com/ragd/ragd/internal/benchutil"
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
				cpu0 := benchutil.CPUTime()
				for b.Loop() {
					kernel.Gemm(m, a, k, p, 0, kernel.NumPanels(n), c, n, scratch)
				}
				flop := 2 * float64(m*n*k) * float64(b.N)
				b.ReportMetric(flop/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(flop/(benchutil.CPUTime()-cpu0).Seconds()/1e9, "GFLOP/cpu-s")
			})
		}
	}
}

// BenchmarkElementwise runs GELU over an FFN row block, softmax over an
// attention row and LayerNorm over hidden rows with each kernel; ns/op is
// per call (MiniLM sizes).
func BenchmarkElementwise(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	inter := randSlice(r, 64*1536)
	scores := randSlice(r, 185)
	hidden := randSlice(r, 64*384)
	gamma, beta := randSlice(r, 384), randSlice(r, 384)
	for _, name := range kernel.Kernels() {
		b.Run("gelu_64x1536/"+name, func(b *testing.B) {
			defer kernel.UseKernel(name)()
			x := make([]float32, len(inter))
			for b.Loop() {
				copy(x, inter)
				kernel.GELU(x)
			}
		})
		b.Run("softmax_185/"+name, func(b *testing.B) {
			defer kernel.UseKernel(name)()
			x := make([]float32, len(scores))
			for b.Loop() {
				copy(x, scores)
				kernel.Softmax(x)
			}
		})
		b.Run("layernorm_64x384/"+name, func(b *testing.B) {
			defer kernel.UseKernel(name)()
			x := make([]float32, len(hidden))
			for b.Loop() {
				copy(x, hidden)
				kernel.LayerNorm(x, 384, 64, gamma, beta, 1e-12)
			}
		})
	}
}

// BenchmarkGemmQ8 is BenchmarkGemm for the int8 multiply (the activations
// quantised beforehand, as the encoder does once per linear layer), with
// each int8 kernel, plus the quantisation of the activations alone;
// GOP/cpu-s counts a multiply-add as two operations, like GFLOP.
func BenchmarkGemmQ8(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, s := range [][3]int{{1024, 384, 384}, {1024, 1536, 384}, {1024, 384, 1536}, {20, 1536, 384}, {20, 384, 1536}} {
		m, n, k := s[0], s[1], s[2]
		a := randSlice(r, m*k)
		q := kernel.QuantizeNK(randSlice(r, n*k), k, n, k)
		var qa kernel.QRows
		qa.Quantize(a, k, m, k)
		c := make([]float32, m*n)
		var scratch kernel.QScratch
		for _, name := range kernel.QKernels() {
			b.Run(fmt.Sprintf("%s/m%d_n%d_k%d", name, m, n, k), func(b *testing.B) {
				defer kernel.UseQKernel(name)()
				cpu0 := benchutil.CPUTime()
				for b.Loop() {
					kernel.GemmQ8(m, &qa, 0, q, 0, kernel.NumPanels(n), c, n, &scratch)
				}
				op := 2 * float64(m*n*k) * float64(b.N)
				b.ReportMetric(op/(benchutil.CPUTime()-cpu0).Seconds()/1e9, "GOP/cpu-s")
			})
		}
		b.Run(fmt.Sprintf("quantize/m%d_k%d", m, k), func(b *testing.B) {
			for b.Loop() {
				qa.Quantize(a, k, m, k)
			}
		})
	}
}
