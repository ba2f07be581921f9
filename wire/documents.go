package wire

import (
	"time"

	"github.com/ragd/ragd/spi"
)

// UpsertRequest is the body of POST /v1/documents.
type UpsertRequest struct {
	Documents []spi.Document `json:"documents"`
}

// DeleteRequest is the body of POST /v1/documents/delete.
type DeleteRequest struct {
	IDs []string `json:"ids"`
}

// BatchResponse answers a batch write or delete: one result per input, in
// input order, and the counts by status. The HTTP status is 200 when no
// result failed and 207 Multi-Status when at least one did.
type BatchResponse struct {
	Results []DocumentResult `json:"results"`
	Total   int              `json:"total"`
	OK      int              `json:"ok"`
	Failed  int              `json:"failed"`
	// NotFound counts delete ids that did not exist (or belong to another
	// tenant); it is not a failure.
	NotFound int `json:"not_found,omitempty"`
	// Pending counts results some derived store has not applied yet (see
	// each result's stores); they are stored and will be.
	Pending int `json:"pending,omitempty"`
}

// DocumentResult is the outcome for one input document or id, in input order.
type DocumentResult struct {
	ID string `json:"id"`
	// Status is "ok", "failed" or (deletes) "not_found".
	Status string `json:"status"`
	// Code is one of the Code* constants when Status is "failed".
	Code string `json:"code,omitempty"`
	// Error says what went wrong, without document content.
	Error string `json:"error,omitempty"`
	// Version is the document's version after the write: the sequence of
	// its entry in the record's change log (0 without a log). The API
	// answers it to keys of no tenant only: the sequence counts every
	// tenant's writes.
	Version uint64 `json:"version,omitempty"`
	// Unchanged marks an upsert identical to the stored document (a
	// retry): nothing was written and Version is the existing one.
	Unchanged bool `json:"unchanged,omitempty"`
	// Stores maps the record store to "ok" and each derived store to
	// "current" (it has applied the write) or "pending" (it will); nil when
	// the write failed.
	Stores map[string]string `json:"stores,omitempty"`
}

// LogStatus describes the change log and how far each derived store got.
type LogStatus struct {
	// AsOf is when the status was read (just before the log's head): a
	// status served from a cache (the health endpoint's) describes the
	// log as of then, so a caller waiting for the stores to apply what
	// was written up to some moment accepts only a status read after it.
	AsOf   time.Time  `json:"as_of"`
	Head   uint64     `json:"head"`
	Stores []StoreLag `json:"stores"`
	// Embedding is the write path's embedding progress (with an ETA for
	// the texts in flight); absent without an embedder.
	Embedding *EmbedStatus `json:"embedding,omitempty"`
}

// StoreLag is how far one derived store is behind the log.
type StoreLag struct {
	Store string `json:"store"`
	// Applied is the store's checkpoint.
	Applied uint64 `json:"applied"`
	// Behind is the number of log sequences after Applied (an upper bound
	// on the entries: PostgreSQL sequences may skip numbers).
	Behind uint64 `json:"behind"`
	// LagSeconds is the age of the oldest entry the store has not applied.
	LagSeconds float64 `json:"lag_seconds"`
	// Error is the last apply failure while it lasts.
	Error string `json:"error,omitempty"`
	// Dormant marks a store that is not kept current because nothing
	// reads it (ingest.NamedApplier.Dormant): Applied is 0 and Behind the
	// head until it is woken.
	Dormant bool `json:"dormant,omitempty"`
}

// EmbedStatus is the write path's embedding progress: what the embedder
// has left to do for the writes in flight, and how fast it goes.
type EmbedStatus struct {
	// Pending is the number of texts of writes in flight that still wait
	// for their vector (queued or being embedded).
	Pending int `json:"pending"`
	// Embedded counts texts the embedder turned into vectors since start
	// (a vector cache in front of it counts its hits here too); Reused
	// counts documents that kept their stored vector because their
	// embedded text had not changed, so nothing was embedded.
	Embedded uint64 `json:"embedded"`
	Reused   uint64 `json:"reused"`
	// RatePerSecond is the recent embedding throughput in texts per
	// second (0 before the first batch).
	RatePerSecond float64 `json:"rate_per_s"`
	// ETASeconds is Pending / RatePerSecond: when the texts in flight will
	// have their vectors at the recent pace; absent when nothing is pending
	// or no rate is known yet.
	ETASeconds float64 `json:"eta_s,omitempty"`
}

// CheckReport is the result of a check of the derived stores against the
// record (ingest.Pipeline.Check, POST /v1/status/check).
type CheckReport struct {
	// Head is the log's last sequence when the check began.
	Head   uint64       `json:"head"`
	Stores []StoreCheck `json:"stores"`
	// Legacy counts record documents without a version (written before
	// the log existed); a repair gives them one by writing them again.
	Legacy int `json:"legacy,omitempty"`
}

// StoreCheck compares one derived store with the record.
type StoreCheck struct {
	Store string `json:"store"`
	// Applied is the store's checkpoint when compared.
	Applied uint64 `json:"applied"`
	// RecordDocuments and Documents count what each side holds.
	RecordDocuments int `json:"record_documents"`
	Documents       int `json:"documents"`
	// Missing, Stale and Extra count the differences found; Examples lists
	// up to 20 of them, in id order.
	Missing  int          `json:"missing"`
	Stale    int          `json:"stale"`
	Extra    int          `json:"extra"`
	Examples []Difference `json:"examples,omitempty"`
	// Repaired is the number of documents a repair rewrote or removed;
	// Remaining the differences a comparison after the repair still found.
	Repaired  int `json:"repaired,omitempty"`
	Remaining int `json:"remaining,omitempty"`
	// Error says why the store could not be checked.
	Error string `json:"error,omitempty"`
	// Dormant marks a store that was not checked because it is not kept
	// current (nothing reads it; ingest.NamedApplier.Dormant).
	Dormant bool `json:"dormant,omitempty"`
}

// Differences is the number of differences found.
func (c StoreCheck) Differences() int { return c.Missing + c.Stale + c.Extra }

// Difference is one document on which a derived store and the record
// disagree. A version of 0 means "absent" for RecordVersion and "present
// without a version" for StoreVersion.
type Difference struct {
	ID            string `json:"id"`
	Kind          string `json:"kind"`
	RecordVersion uint64 `json:"record_version"`
	StoreVersion  uint64 `json:"store_version"`
}
