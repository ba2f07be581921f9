//go:build !amd64 || purego

package embedded

// dotCodes is the inner product of a query's codes a and a row's codes
// b[:len(a)].
func dotCodes(a []int16, b []int8) int32 { return dotCodesGeneric(a, b) }
