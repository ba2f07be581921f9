//go:build unix

package embedded

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// allocCodes returns a zeroed slice of length and capacity size in an
// anonymous private mapping, outside the Go heap (nil for size 0).
func allocCodes(size int) []int8 {
	if size <= 0 {
		return nil
	}
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		// As make would on running out of memory.
		panic(fmt.Sprintf("vector/embedded: mapping %d bytes for the codes: %v", size, err))
	}
	return unsafe.Slice((*int8)(p), size)
}

// freeCodes unmaps what allocCodes returned (b may be resliced from 0:
// its capacity is the mapping's length).
func freeCodes(b []int8) {
	if cap(b) == 0 {
		return
	}
	if err := unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(cap(b))); err != nil {
		panic(fmt.Sprintf("vector/embedded: unmapping the codes: %v", err))
	}
}
