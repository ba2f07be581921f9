package sourcestats

import "github.com/ragd/ragd/wire"

// The summary's types are the body of GET /v1/status/sources, in package
// wire, which the Go client shares.
type (
	Snapshot = wire.SourcesResponse
	Source   = wire.SourceSummary
	Answers  = wire.Answers
	Failure  = wire.SourceFailure
)
