//go:build !amd64 || purego

package embedded

// dotCodes is the inner product of a query's codes a and a row's codes
// b[:len(a)].
func dotCodes(a []int16, b []int8) int32 { return dotCodesGeneric(a, b) }

// dotCodesAhead is dotCodes(a, b); the portable code cannot prefetch.
func dotCodesAhead(a []int16, b []int8, _ *int8) int32 { return dotCodesGeneric(a, b) }

// dotCodesMany sets out[j] to dotCodes(a, b[j·len(a):]) for every j <
// len(out).
func dotCodesMany(a []int16, b []int8, out []int32) { dotCodesEach(a, b, out) }

// prefetch is a no-op in the portable code.
func prefetch(*byte, int) {}

// dotKernels are the kernels this CPU runs, by name, for the tests.
func dotKernels() map[string]func([]int16, []int8) int32 {
	return map[string]func([]int16, []int8) int32{"generic": dotCodesGeneric}
}
