package retriever

import "github.com/ragd/ragd/wire"

// A query, its limits and its answer are JSON bodies of the HTTP API; they
// live in package wire, which the Go client shares without linking the
// retriever. These names keep them where the retriever's users look.
type (
	Query          = wire.Query
	SourceOptions  = wire.SourceOptions
	FusionOptions  = wire.FusionOptions
	ExpandOptions  = wire.ExpandOptions
	QueryError     = wire.QueryError
	Limits         = wire.Limits
	Status         = wire.Status
	SourceStatus   = wire.SourceStatus
	Hit            = wire.Hit
	Contribution   = wire.Contribution
	FusionSettings = wire.FusionSettings
	ExpandSettings = wire.ExpandSettings
	Result         = wire.Result
)

// Source statuses (wire.Status).
const (
	StatusOK             = wire.StatusOK
	StatusCircuitOpen    = wire.StatusCircuitOpen
	StatusShed           = wire.StatusShed
	StatusError          = wire.StatusError
	StatusTimeout        = wire.StatusTimeout
	StatusCallerDeadline = wire.StatusCallerDeadline
	StatusDisabled       = wire.StatusDisabled
	StatusSkipped        = wire.StatusSkipped
)

// Fusion modes, bounds and the reasons of SourceStatus.Error (see wire).
const (
	FusionRRF   = wire.FusionRRF
	FusionScore = wire.FusionScore
	FusionDBSF  = wire.FusionDBSF

	MaxWeight     = wire.MaxWeight
	MaxQueryTerms = wire.MaxQueryTerms

	DefaultMaxLimit       = wire.DefaultMaxLimit
	DefaultMaxOffset      = wire.DefaultMaxOffset
	DefaultMaxWindow      = wire.DefaultMaxWindow
	DefaultMaxK           = wire.DefaultMaxK
	DefaultMaxTextBytes   = wire.DefaultMaxTextBytes
	DefaultMaxBudget      = wire.DefaultMaxBudget
	DefaultMaxExpandSeeds = wire.DefaultMaxExpandSeeds
	DefaultMaxHops        = wire.DefaultMaxHops

	ReasonInvalidQuery    = wire.ReasonInvalidQuery
	ReasonCanceled        = wire.ReasonCanceled
	ReasonNothingToSearch = wire.ReasonNothingToSearch
	ReasonDormant         = wire.ReasonDormant
)

// DefaultLimits returns the built-in limits.
func DefaultLimits() Limits { return wire.DefaultLimits() }

// Only returns Sources options that enable exactly the named sources
// (wire.Only): Only(spi.SourceKeyword) is a keyword-only query.
func Only(names ...string) map[string]SourceOptions { return wire.Only(names...) }
