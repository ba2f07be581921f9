package modelcache

import "io"

// SetLockWait installs a hook called once when a Pull or Import finds the
// model's lock held by another.
func SetLockWait(c *Cache, f func(name string)) { c.lockWait = f }

// SetWrapWriter wraps each file a Pull or an Import writes (fault injection: disk full,
// cancellation after N bytes).
func SetWrapWriter(c *Cache, f func(path string, w io.Writer) io.Writer) { c.wrapWriter = f }

// SetFreeSpace replaces the free-space probe.
func SetFreeSpace(c *Cache, f func(dir string) (int64, bool)) { c.freeSpace = f }

// CheckWeightsInChunks runs the streaming weights check over b written in
// chunks of n bytes, the file's size known.
func CheckWeightsInChunks(b []byte, n int) error {
	wc := newWeightsCheck(int64(len(b)), 1<<40)
	for len(b) > 0 {
		k := min(n, len(b))
		if _, err := wc.Write(b[:k]); err != nil {
			return err
		}
		b = b[k:]
	}
	return wc.finish()
}
