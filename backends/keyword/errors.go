package keyword

import "errors"

// Sentinel errors of the keyword backend, matched with errors.Is.
var (
	// ErrCorrupt means the index directory exists but cannot be used: an
	// unreadable pointer file, a missing or damaged bleve index. The index
	// is a derived copy, so the remedy is OpenOrRebuild.
	ErrCorrupt = errors.New("keyword: index corrupt")
	// ErrIncompatible means the index was built by another schema version or
	// with another analyzer than the configuration asks for. OpenOrRebuild
	// rebuilds it; Open refuses it.
	ErrIncompatible = errors.New("keyword: index incompatible with config")
	// ErrLocked means another process holds the index open. It is never
	// treated as corruption: OpenOrRebuild returns it unchanged.
	ErrLocked = errors.New("keyword: index locked by another process")
	// ErrClosed means the Backend was closed. Calls that fail with it also
	// wrap spi.ErrUnavailable.
	ErrClosed = errors.New("keyword: backend closed")
)
