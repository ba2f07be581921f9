//go:build amd64 && !purego

package embedded

import "golang.org/x/sys/cpu"

// haveAVX2 selects the assembly kernel; without AVX2 the portable loop runs.
var haveAVX2 = cpu.X86.HasAVX2

//go:noescape
func dotInt8AVX2(a, b []int8) int32

// dotInt8 is the inner product of a and b[:len(a)].
func dotInt8(a, b []int8) int32 {
	b = b[:len(a)]
	if haveAVX2 {
		return dotInt8AVX2(a, b)
	}
	return dotInt8Generic(a, b)
}
