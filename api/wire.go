package api

import "github.com/ragd/ragd/wire"

// The JSON bodies of the API live in package wire, which the Go client
// imports without linking the server; these names keep them here too.
type (
	ErrorResponse      = wire.ErrorResponse
	ErrorDetail        = wire.ErrorDetail
	UpsertRequest      = wire.UpsertRequest
	DeleteRequest      = wire.DeleteRequest
	BatchResponse      = wire.BatchResponse
	BreakersResponse   = wire.BreakersResponse
	ForceCloseResponse = wire.ForceCloseResponse
	ForceOpenResponse  = wire.ForceOpenResponse
	HoldRequest        = wire.HoldRequest
	HoldResponse       = wire.HoldResponse
	HealthResponse     = wire.HealthResponse
	ComponentHealth    = wire.ComponentHealth
	ComponentLag       = wire.ComponentLag
	ReadyResponse      = wire.ReadyResponse
	LiveResponse       = wire.LiveResponse
	EventsResponse     = wire.EventsResponse
	SourcesResponse    = wire.SourcesResponse
	ServerResponse     = wire.ServerResponse
	KeyInfo            = wire.KeyInfo
	Inventory          = wire.Inventory
	SourceInfo         = wire.SourceInfo
	EmbedderInfo       = wire.EmbedderInfo
	StoreInfo          = wire.StoreInfo
)
