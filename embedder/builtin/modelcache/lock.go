package modelcache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// lockPoll is how often a waiting Pull or Import retries a busy lock.
const lockPoll = 100 * time.Millisecond

// lock takes the model's lock file, waiting while another Pull or Import
// of the same model (in this or another process) holds it, until ctx ends.
// The returned function releases it.
func (c *Cache) lock(ctx context.Context, name string) (func(), error) {
	if err := os.MkdirAll(c.lockDir(), 0o755); err != nil {
		return nil, fmt.Errorf("modelcache: lock %s: %w", name, err)
	}
	path := filepath.Join(c.lockDir(), strings.ReplaceAll(name, "/", "--")+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("modelcache: lock %s: %w", name, err)
	}
	waited := false
	for {
		busy, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("modelcache: lock %s: %w", name, err)
		}
		if !busy {
			return func() { _ = unlock(f); f.Close() }, nil
		}
		if !waited {
			waited = true
			if c.lockWait != nil {
				c.lockWait(name)
			}
		}
		t := time.NewTimer(lockPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("modelcache: waiting for another pull or import of %s: %w", name, context.Cause(ctx))
		case <-t.C:
		}
	}
}
