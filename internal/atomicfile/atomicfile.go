// Package atomicfile replaces a small file so that a crash leaves either
// the old or the new content, never a mix: the one way ragd rewrites its
// state files (maintenance holds, the event log, ingest checkpoints, the
// model cache's records).
package atomicfile

import (
	"bufio"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with what write writes: into a temporary file beside
// it (created 0600), synced, then renamed over path, and the directory
// synced so that the rename survives a crash too. On any error path is
// left as it was and the temporary file is removed.
func Write(path string, write func(io.Writer) error) error {
	return writeMode(path, 0, write)
}

// writeMode is Write, the file's permissions set to perm unless it is 0.
func writeMode(path string, perm fs.FileMode, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	w := bufio.NewWriter(tmp)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil && perm != 0 {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return err
	}
	SyncDir(dir)
	return nil
}

// WriteBytes replaces path with b, as Write does.
func WriteBytes(path string, b []byte) error {
	return WriteFile(path, b, 0)
}

// WriteFile replaces path with b, as Write does, with permissions perm
// exactly (no umask applies); 0 means 0600.
func WriteFile(path string, b []byte, perm fs.FileMode) error {
	return writeMode(path, perm, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// SyncDir flushes a directory's entries (renames, new files) to disk, so
// that they survive a crash. It is best effort: not every file system (nor
// Windows) can sync a directory.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
