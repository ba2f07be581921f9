// Package atomicfile replaces a file so that a crash leaves either the old
// or the new content, never a mix: the one way ragd rewrites its state
// files (maintenance holds, the event log, ingest checkpoints, the model
// cache's records, the embedded vector store's vectors file when it is
// compacted).
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
	p, err := Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(p)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil && perm != 0 {
		err = p.Chmod(perm)
	}
	if err != nil {
		p.Abort()
		return err
	}
	return p.Commit()
}

// Pending is a replacement of path being written, for a writer that must
// do more than Write allows between the writes and the rename (sync most
// of a large file before taking a lock, say). Write to the embedded file;
// Commit puts it in place as Write does, Abort drops it. Exactly one of
// them must be called.
type Pending struct {
	*os.File
	path string
}

// Create starts a replacement of path: a temporary file beside it,
// created 0600.
func Create(path string) (*Pending, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, err
	}
	return &Pending{File: tmp, path: path}, nil
}

// Commit syncs and closes the temporary file, renames it over the path
// and syncs the directory. On error the path is left as it was and the
// temporary file is removed.
func (p *Pending) Commit() error {
	err := p.Sync()
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(p.Name(), p.path)
	}
	if err != nil {
		_ = os.Remove(p.Name())
		return err
	}
	SyncDir(filepath.Dir(p.path))
	return nil
}

// Abort closes and removes the temporary file; the path is left as it
// was.
func (p *Pending) Abort() {
	_ = p.Close()
	_ = os.Remove(p.Name())
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
