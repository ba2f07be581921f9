package spi

import "errors"

// Sentinel errors shared by every backend. Match them with errors.Is; backends
// wrap them with the place the failure happened, for example
// fmt.Errorf("vector: retrieve: %w: %v", spi.ErrUnavailable, err).
var (
	// ErrUnavailable means the backend could not serve the call: connection
	// refused, server down, pool exhausted, backend-side timeout. Callers may
	// retry later; circuit breakers count it as a failure.
	ErrUnavailable = errors.New("spi: backend unavailable")

	// ErrInvalidQuery means the request itself is wrong (vector dimension,
	// NaN/Inf values, bad filter, malformed explicit query syntax). Retrying the
	// same request cannot succeed; circuit breakers do not count it.
	ErrInvalidQuery = errors.New("spi: invalid query")

	// ErrNotFound means a single addressed object (a document by id) does not
	// exist. Batch lookups such as Hydrate report missing ids instead.
	ErrNotFound = errors.New("spi: not found")

	// ErrUnsupported means the backend does not offer the requested capability
	// (for example the Cypher passthrough on the embedded graph store).
	ErrUnsupported = errors.New("spi: unsupported")

	// ErrNothingToSearch means the request holds nothing the backend could
	// search for (a text with no word it indexes, no seeds), so it answered
	// without contacting the backend: the answer is empty by construction.
	// It is neither a failure nor a success of the backend: such an answer
	// says nothing about its health, so gates count it as neither (see
	// OutcomeOf) and the retriever reports the source as skipped. Retrying
	// the same request cannot give another answer.
	ErrNothingToSearch = errors.New("spi: nothing to search")

	// ErrNotReady means the backend is being built — a derived store
	// that was dormant (nothing read it) or lost, catching up from the
	// record's change log — and answers nothing until it holds what the
	// record held when it began, rather than answer from part of it. It is
	// a state that ends on its own, not a sign of a sick backend: gates
	// count it as neither a failure nor a success (see OutcomeOf), and the
	// answer lacks the source. Backends wrap it together with
	// ErrUnavailable.
	ErrNotReady = errors.New("spi: not ready")

	// ErrDormant means the backend is a dormant derived store (nothing in
	// the configuration reads it, so it is not built) and the call may not
	// wake it: building it costs every tenant, so only an operator's call
	// (IsOperator) does. Backends wrap it together with ErrNotReady (gates
	// count it as neither a failure nor a success) and ErrUnavailable.
	ErrDormant = errors.New("spi: dormant")
)
