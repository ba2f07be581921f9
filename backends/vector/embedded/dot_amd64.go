//go:build amd64 && !purego

package embedded

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The assembly kernels: AVX-512 with VNNI where the CPU has it, else
// AVX2; without either the portable loop runs.
var (
	haveVNNI = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI
	haveAVX2 = cpu.X86.HasAVX2
)

// The kernels first prefetch the len(a) bytes at ahead unless it is nil.

//go:noescape
func dotCodesAVX2(a []int16, b []int8, ahead *int8) int32

//go:noescape
func dotCodesVNNI(a []int16, b []int8, ahead *int8) int32

//go:noescape
func dotCodesManyVNNI(a []int16, b []int8, out []int32)

// prefetch asks the CPU to bring the n bytes at p into its caches (at
// least one line, whatever n; p may point anywhere).
//
//go:noescape
func prefetch(p *byte, n int)

// dotCodes is the inner product of a query's codes a and a row's codes
// b[:len(a)].
func dotCodes(a []int16, b []int8) int32 { return dotCodesAhead(a, b, nil) }

// dotCodesAhead is dotCodes(a, b), and meanwhile asks the CPU to fetch the
// len(a) bytes at ahead (nil: none) into its caches: the codes of a row
// the caller scores soon. A scan of rows in sequence already has them
// fetched by the hardware within a 4 KiB page, but not across one, and a
// list's sweep crosses a page every row and a half (384 dimensions); the
// prefetch never faults, so ahead may be any address.
func dotCodesAhead(a []int16, b []int8, ahead *int8) int32 {
	b = b[:len(a)]
	switch {
	case haveVNNI:
		return dotCodesVNNI(a, b, ahead)
	case haveAVX2:
		return dotCodesAVX2(a, b, ahead)
	}
	return dotCodesGeneric(a, b)
}

// dotCodesMany sets out[j] to dotCodes(a, b[j·len(a):]) for every j <
// len(out): one call for all of them with VNNI, else one a row.
func dotCodesMany(a []int16, b []int8, out []int32) {
	if haveVNNI {
		dotCodesManyVNNI(a, b[:len(out)*len(a)], out)
		return
	}
	dotCodesEach(a, b, out)
}

// dotKernels are the kernels this CPU runs, by name, for the tests (the
// assembly ones prefetching the row they score).
func dotKernels() map[string]func([]int16, []int8) int32 {
	k := map[string]func([]int16, []int8) int32{"generic": dotCodesGeneric}
	if haveAVX2 {
		k["avx2"] = func(a []int16, b []int8) int32 { return dotCodesAVX2(a, b, unsafe.SliceData(b)) }
	}
	if haveVNNI {
		k["avx512vnni"] = func(a []int16, b []int8) int32 { return dotCodesVNNI(a, b, unsafe.SliceData(b)) }
	}
	return k
}
