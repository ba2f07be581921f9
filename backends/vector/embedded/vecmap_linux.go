//go:build linux

package embedded

import (
	"os"

	"golang.org/x/sys/unix"
)

// useMap selects mapped reads (tests turn it off to read through
// ReadAt).
var useMap = true

// mapFile maps size bytes of f for reading, shared with the page cache: a
// read is then a copy from memory, not a system call. The mapping may
// reach past the end of the file; pages there become readable as appends
// write them (the caller reads only whole entries it knows are written).
func mapFile(f *os.File, size int64) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
}

// unmapFile undoes mapFile.
func unmapFile(m []byte) error { return unix.Munmap(m) }
