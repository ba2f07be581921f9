//go:build !amd64 || purego

package embedded

// dotInt8 is the inner product of a and b[:len(a)].
func dotInt8(a, b []int8) int32 { return dotInt8Generic(a, b) }
