package ingest

import "github.com/ragd/ragd/wire"

// The write path's answer types live in package wire, which the Go client
// shares without linking the pipeline; these names keep them here too.
type (
	// Result is one document's or id's outcome (wire.DocumentResult).
	Result      = wire.DocumentResult
	LogStatus   = wire.LogStatus
	StoreLag    = wire.StoreLag
	EmbedStatus = wire.EmbedStatus
	CheckReport = wire.CheckReport
	StoreCheck  = wire.StoreCheck
	Difference  = wire.Difference
)
