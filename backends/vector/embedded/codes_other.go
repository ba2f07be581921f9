//go:build !unix

package embedded

// allocCodes returns a zeroed slice of size bytes on the Go heap: without
// anonymous mappings the codes live where other slices do.
func allocCodes(size int) []int8 { return make([]int8, size) }

// freeCodes leaves b to the collector.
func freeCodes([]int8) {}
