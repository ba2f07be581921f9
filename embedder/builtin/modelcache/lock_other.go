//go:build !unix

package modelcache

import (
	"os"
	"sync"
)

// Without flock, locks exclude only within this process: concurrent pulls
// of one model from two processes are not protected on these systems.
var (
	heldMu sync.Mutex
	held   = map[string]bool{}
)

func tryLock(f *os.File) (busy bool, err error) {
	heldMu.Lock()
	defer heldMu.Unlock()
	if held[f.Name()] {
		return true, nil
	}
	held[f.Name()] = true
	return false, nil
}

func unlock(f *os.File) error {
	heldMu.Lock()
	defer heldMu.Unlock()
	delete(held, f.Name())
	return nil
}

func availableBytes(string) (int64, bool) { return 0, false }
