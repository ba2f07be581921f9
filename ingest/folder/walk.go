// Package folder turns a folder of Markdown, plain text, HTML and PDF files
// into chunk documents for `ragd ingest DIR`: it walks the folder (hidden files
// and directories, symbolic links and other file types left out, --include
// and --exclude globs applied), reads and chunks each file (package
// ingest/chunk), gives every chunk an id that stays the same while its
// text, title and file do, and keeps a State of what an earlier run sent,
// so that a rerun sends only what changed and deletes the chunks of files
// that changed or are gone, and nothing else.
package folder

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Format is a file format the folder reader knows.
type Format string

// Formats, by file extension (any case).
const (
	Markdown Format = "markdown" // .md, .markdown, .mdown, .mkd
	Text     Format = "text"     // .txt, .text
	HTML     Format = "html"     // .html, .htm, .xhtml
	// PDF files are read by the caller (package ingest/pdf) and chunked
	// with Chunker.PageDocuments.
	PDF Format = "pdf" // .pdf
)

// FormatOf returns the format of a file name, "" when it is none of them.
func FormatOf(name string) Format {
	switch strings.ToLower(path.Ext(name)) {
	case ".md", ".markdown", ".mdown", ".mkd":
		return Markdown
	case ".txt", ".text":
		return Text
	case ".html", ".htm", ".xhtml":
		return HTML
	case ".pdf":
		return PDF
	}
	return ""
}

// File is a file the walk found.
type File struct {
	// Rel is the path relative to the root, with forward slashes.
	Rel    string
	Path   string // the path to open
	Size   int64
	Format Format
	// IsDir marks a directory Walk could not read.
	IsDir bool
}

// Filter decides which files of a folder are read. Patterns are
// doublestar globs ("*.md", "guides/**", "**/draft-*"): one without a "/"
// matches a file or directory name at any depth, as in .gitignore; one
// with a "/" matches the whole path relative to the root.
type Filter struct {
	// Include, when not empty, keeps only the files that match one of
	// them (directories are always entered).
	Include []string
	// Exclude leaves out the files and whole directories that match one
	// of them.
	Exclude []string
}

// ErrPattern is wrapped by Filter.Validate's errors.
var ErrPattern = errors.New("folder: bad pattern")

// ErrSymlink is what Walk reports for a symbolic link it does not follow.
var ErrSymlink = errors.New("a symbolic link, not followed")

// Validate checks the patterns.
func (f Filter) Validate() error {
	for _, p := range append(append([]string(nil), f.Include...), f.Exclude...) {
		if p == "" || !doublestar.ValidatePattern(p) {
			return fmt.Errorf("%w: %q", ErrPattern, p)
		}
	}
	return nil
}

func matchAny(patterns []string, rel string) bool {
	for _, p := range patterns {
		target := rel
		if !strings.Contains(p, "/") {
			target = path.Base(rel)
		}
		if ok, _ := doublestar.Match(p, target); ok {
			return true
		}
	}
	return false
}

// Walk calls fn for every file under root that Walk reads, in lexical
// order: regular files of a known Format, not hidden (no path element
// starting with "."), not excluded and, when the filter has includes,
// included. Symbolic links are not followed (so a link loop cannot trap
// the walk): each one the filter would read is reported to fn as a File
// with only Rel set and ErrSymlink. A directory that cannot be read is
// reported to fn as a File with only Rel set, IsDir, and the error; fn's
// error stops the walk and is returned.
func Walk(root string, f Filter, fn func(File, error) error) error {
	if st, err := os.Lstat(root); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		// The root itself may be a link (the folder the user named).
		if root, err = filepath.EvalSymlinks(root); err != nil {
			return err
		}
	}
	return filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		rel, rerr := filepath.Rel(root, p)
		if rerr != nil {
			return rerr
		}
		rel = filepath.ToSlash(rel)
		if err != nil {
			if rel == "." {
				return err
			}
			if ferr := fn(File{Rel: rel, IsDir: de != nil && de.IsDir()}, err); ferr != nil {
				return ferr
			}
			if de != nil && de.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if rel == "." {
			return nil
		}
		hidden := strings.HasPrefix(de.Name(), ".")
		if de.IsDir() {
			if hidden || matchAny(f.Exclude, rel) {
				return fs.SkipDir
			}
			return nil
		}
		if de.Type()&fs.ModeSymlink != 0 {
			if hidden || matchAny(f.Exclude, rel) || len(f.Include) > 0 && !matchAny(f.Include, rel) {
				return nil
			}
			return fn(File{Rel: rel}, ErrSymlink)
		}
		format := FormatOf(de.Name())
		if hidden || !de.Type().IsRegular() || format == "" || matchAny(f.Exclude, rel) ||
			len(f.Include) > 0 && !matchAny(f.Include, rel) {
			return nil
		}
		info, err := de.Info()
		if err != nil {
			return fn(File{Rel: rel}, err)
		}
		return fn(File{Rel: rel, Path: p, Size: info.Size(), Format: format}, nil)
	})
}
