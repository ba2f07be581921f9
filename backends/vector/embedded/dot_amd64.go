//go:build amd64 && !purego

package embedded

import "golang.org/x/sys/cpu"

// haveAVX2 selects the assembly kernel; without AVX2 the portable loop runs.
var haveAVX2 = cpu.X86.HasAVX2

//go:noescape
func dotCodesAVX2(a []int16, b []int8) int32

// dotCodes is the inner product of a query's codes a and a row's codes
// b[:len(a)].
func dotCodes(a []int16, b []int8) int32 {
	b = b[:len(a)]
	if haveAVX2 {
		return dotCodesAVX2(a, b)
	}
	return dotCodesGeneric(a, b)
}
