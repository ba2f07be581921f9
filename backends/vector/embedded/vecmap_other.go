//go:build !linux

package embedded

import (
	"errors"
	"os"
)

// useMap selects mapped reads (tests turn it off to read through
// ReadAt).
var useMap = false

// mapFile is not used outside Linux: reads go through ReadAt.
func mapFile(*os.File, int64) ([]byte, error) {
	return nil, errors.New("vector/embedded: no file mappings on this system")
}

func unmapFile([]byte) error { return nil }
