package modelcache

import (
	"errors"
	"fmt"
)

var (
	// ErrNotCached: the cache holds no complete model under that name.
	ErrNotCached = errors.New("modelcache: model not in the cache")
	// ErrInvalidName: a model name that is empty, absolute, climbs out of
	// the cache or has characters Hugging Face does not allow.
	ErrInvalidName = errors.New("modelcache: invalid model name")
	// ErrUnknownModel: Pull was asked for a model without a pinned revision
	// and file hashes (see KnownModels); import it instead.
	ErrUnknownModel = errors.New("modelcache: no pinned revision for this model")
	// ErrUnreachable: the model host could not be reached (no network, DNS
	// failure, connection refused or timed out). Nothing was installed; a
	// partial download is kept for the next Pull to resume.
	ErrUnreachable = errors.New("modelcache: model host unreachable")
	// ErrMismatch is wrapped by *VerifyError.
	ErrMismatch = errors.New("modelcache: file does not match its pinned hash")
	// ErrInvalidModel: an import source that is not a usable model in the
	// sentence-transformers layout, or an unsafe archive.
	ErrInvalidModel = errors.New("modelcache: not a valid model")
	// ErrDiskFull: the file system holding the cache ran out of space.
	// Nothing was installed.
	ErrDiskFull = errors.New("modelcache: disk full")
)

// VerifyError says that a downloaded file is not the pinned one. The file
// was deleted and nothing was installed.
type VerifyError struct {
	Model, Revision, File string
	WantSize, GotSize     int64  // GotSize -1: not known (the hash differed)
	WantSHA256, GotSHA256 string // GotSHA256 "": not computed (the size differed)
}

func (e *VerifyError) Error() string {
	if e.GotSHA256 == "" {
		return fmt.Sprintf("modelcache: %s at revision %s: %s is %d bytes, want %d; nothing was installed",
			e.Model, short(e.Revision), e.File, e.GotSize, e.WantSize)
	}
	return fmt.Sprintf("modelcache: %s at revision %s: %s has SHA-256 %s, want %s; the file was deleted and nothing was installed",
		e.Model, short(e.Revision), e.File, e.GotSHA256, e.WantSHA256)
}

func (e *VerifyError) Unwrap() error { return ErrMismatch }

// invalidModelError wraps ErrInvalidModel for the importer. Its text leaves
// out the package prefix the sentinel carries, since Import puts its own in
// front: "modelcache: import NAME from SRC: not a valid model: WHY".
type invalidModelError struct{ why string }

func (e *invalidModelError) Error() string { return "not a valid model: " + e.why }
func (e *invalidModelError) Unwrap() error { return ErrInvalidModel }

// invalidf is an *invalidModelError saying why, as fmt.Sprintf formats it.
func invalidf(format string, a ...any) error {
	return &invalidModelError{why: fmt.Sprintf(format, a...)}
}

// HTTPError is a download that the server refused (any status but 200 or
// 206), e.g. 404 for a file missing at the pinned revision.
type HTTPError struct {
	Model, Revision, File, URL string
	Status                     int
}

func (e *HTTPError) Error() string {
	what := fmt.Sprintf("HTTP %d", e.Status)
	switch e.Status {
	case 404:
		what = "not found (HTTP 404)"
	case 401, 403:
		what = fmt.Sprintf("refused (HTTP %d: the repository is gated, private or does not exist)", e.Status)
	}
	return fmt.Sprintf("modelcache: %s at revision %s: %s %s from %s", e.Model, short(e.Revision), e.File, what, e.URL)
}

// short abbreviates a commit hash for messages.
func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
