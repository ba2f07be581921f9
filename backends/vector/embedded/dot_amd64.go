//go:build amd64 && !purego

package embedded

import "golang.org/x/sys/cpu"

// The assembly kernels: AVX-512 with VNNI where the CPU has it, else
// AVX2; without either the portable loop runs.
var (
	haveVNNI = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI
	haveAVX2 = cpu.X86.HasAVX2
)

//go:noescape
func dotCodesAVX2(a []int16, b []int8) int32

//go:noescape
func dotCodesVNNI(a []int16, b []int8) int32

// dotCodes is the inner product of a query's codes a and a row's codes
// b[:len(a)].
func dotCodes(a []int16, b []int8) int32 {
	b = b[:len(a)]
	switch {
	case haveVNNI:
		return dotCodesVNNI(a, b)
	case haveAVX2:
		return dotCodesAVX2(a, b)
	}
	return dotCodesGeneric(a, b)
}

// dotKernels are the kernels this CPU runs, by name, for the tests.
func dotKernels() map[string]func([]int16, []int8) int32 {
	k := map[string]func([]int16, []int8) int32{"generic": dotCodesGeneric}
	if haveAVX2 {
		k["avx2"] = dotCodesAVX2
	}
	if haveVNNI {
		k["avx512vnni"] = dotCodesVNNI
	}
	return k
}
