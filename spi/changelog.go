package spi

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"time"
)

// The change log.
//
// The system of record (the vector store) keeps an ordered log of every
// accepted write, appended in the same transaction as the write itself.
// Every other store is derived: it applies the log in order and persists
// how far it got (its checkpoint) together with its own data, so a crash,
// a race or an outage can delay a derived store but never make it diverge.
//
// A document's version is the sequence number of the log entry that last
// wrote it. Derived stores remember versions (and, for deletes, tombstones
// where several writers may race) so that an older state is never applied
// over a newer one.

// ErrTenantConflict means an upsert named an id that a document of another
// tenant holds: a document never moves between tenants by upsert. Callers
// must not tell the writer which tenant holds it.
var ErrTenantConflict = errors.New("spi: the id is held by another tenant")

// Op is what a log entry did.
type Op uint8

// Log operations.
const (
	OpUpsert Op = 1
	OpDelete Op = 2
)

func (o Op) String() string {
	switch o {
	case OpUpsert:
		return "upsert"
	case OpDelete:
		return "delete"
	}
	return "unknown"
}

// Write is one change offered to a ChangeLog.
type Write struct {
	// Op is OpUpsert (Doc is the new document) or OpDelete (Doc.ID names
	// the document to delete; the other fields are ignored).
	Op  Op
	Doc Document
	// Scope, when non-empty, is the only tenant the write may touch: an
	// upsert must carry Doc.Tenant == Scope, and a delete of a document of
	// another tenant is reported exactly like the delete of a missing one.
	Scope string
	// KeepTenant fails an upsert with ErrTenantConflict when the record
	// holds the id under another tenant (the write path always sets it;
	// spi.Indexer.Upsert does not, and may move a document).
	KeepTenant bool
}

// WriteResult is the result of one Write.
type WriteResult struct {
	// Version is the document's version after the write: the sequence of
	// the entry the write appended, or, when nothing changed, the version
	// the document already had (0 for a delete of a missing document).
	Version uint64
	// Changed is false when nothing was written and nothing appended: an
	// upsert whose content equals the stored document's (see ContentHash),
	// or a delete of a document that does not exist or is outside Scope.
	Changed bool
	// Err is this write's own failure: ErrTenantConflict, ErrNotFound (a
	// delete of a missing or out-of-scope document) or ErrInvalidQuery.
	Err error
}

// Change is one log entry as an applier reads it: the entry, and the
// current state of its document in the record at the time of the read.
// Appliers apply the state, not the entry, so reading entries again (after
// a crash) converges to the same result.
type Change struct {
	Seq uint64
	Op  Op
	ID  string
	// At is when the entry was committed.
	At time.Time
	// Doc is the document as the record holds it now; nil when the record
	// no longer holds it. Changes may leave Doc.Vector out (the derived
	// stores keep no vectors); Current carries it.
	Doc *Document
	// Version is Doc's version, or, when Doc is nil, the version of the
	// deletion (at least Seq): the tombstone derived stores keep.
	Version uint64
}

// LogState describes a record's log.
type LogState struct {
	// ID identifies the log. It is created with the record, so a derived
	// store can tell that its checkpoint belongs to another record.
	ID string
	// First is the oldest sequence still in the log (0 when empty); Last
	// is the newest one ever appended (0 when nothing was).
	First, Last uint64
	// Compacted is the highest sequence CompactLog removed: an applier
	// whose checkpoint is below it has missed entries and must be
	// resynchronised from the documents.
	Compacted uint64
}

// ChangeLog is an optional capability of a system-of-record store.
//
// Sequences increase in commit order: an applier that has seen entry n
// will never later see an entry below n appear.
type ChangeLog interface {
	// Commit applies writes and appends one entry per changed write in
	// one transaction. Ownership is decided inside that transaction. It
	// returns one WriteResult per write, in order. The error is non-nil when
	// the transaction failed (nothing was written): it wraps
	// ErrUnavailable, ErrInvalidQuery (a document the store cannot hold;
	// the caller may bisect the batch) or ErrOutcomeUnknown (the commit
	// was sent but its answer lost: it may have happened).
	Commit(ctx context.Context, writes []Write) ([]WriteResult, error)
	// Changes returns up to limit entries with Seq > after, in Seq order.
	Changes(ctx context.Context, after uint64, limit int) ([]Change, error)
	// Current returns the current state of each id, as a Change with Seq
	// 0 (Doc nil for an id the record does not hold).
	Current(ctx context.Context, ids []string) ([]Change, error)
	// LogState reports the log's identity and bounds.
	LogState(ctx context.Context) (LogState, error)
	// Versions visits every document the record holds with its version,
	// in ascending id order.
	Versions(ctx context.Context, fn func(id string, version uint64) error) error
	// CompactLog removes the entries committed before before whose Seq is
	// at most upTo, and returns how many it removed.
	CompactLog(ctx context.Context, before time.Time, upTo uint64) (int, error)
}

// ErrOutcomeUnknown means a write was sent to the store but its answer was
// lost: it may or may not have been committed. Retrying is safe (an
// identical upsert is a no-op).
var ErrOutcomeUnknown = errors.New("spi: write outcome unknown")

// ChangeApplier is an optional capability of a derived store: it applies
// the record's log and keeps its checkpoint with its own data.
//
// log is LogState.ID of the record: a store that holds a checkpoint or
// versions of another log treats them as absent.
type ChangeApplier interface {
	// ApplyChanges makes the store hold the state of every change (for an
	// id listed twice, the later change wins), skipping any state whose
	// Version is not newer than the one the store already holds for the
	// id (tombstones included), and records through as its checkpoint.
	// Applying the same changes twice is harmless. Stores that can do so
	// apply and checkpoint atomically; the others apply first, so a crash
	// in between makes the next run apply the changes again.
	ApplyChanges(ctx context.Context, log string, changes []Change, through uint64) error
	// AppliedSeq is the checkpoint: every entry up to it is applied.
	AppliedSeq(ctx context.Context, log string) (uint64, error)
	// Versions returns up to limit of the documents the store holds whose
	// ids sort after after ("" for the first page), in ascending order of
	// id, with their versions (0 when the store holds the document
	// without a version of this log), so that a comparison with the
	// record goes a page at a time. The order is byte order, except in
	// Neo4j, which orders strings by UTF-16 code units: the two differ
	// only for ids with a character above U+FFFF where another has one in
	// U+E000–U+FFFF.
	Versions(ctx context.Context, log string, after string, limit int) ([]IDVersion, error)
}

// ApplyLeaser is an optional capability of a change log that several
// processes share (replicas on one PostgreSQL): it elects, per derived
// store that they share too (one Neo4j), the one process that applies the
// log to it, so that each write is applied once and not once per process.
//
// ApplyLease reports whether this process holds the lease named name,
// taking it when it is free. A holder keeps it until it closes the log or
// loses its connection to the record; another process may then take it.
// A lease is an economy, not a guarantee: a holder cut off from the
// record may still be applying when another takes over, so appliers must
// stay correct when two apply at once (ChangeApplier's versions make them
// so). Errors wrap ErrUnavailable when the record cannot be reached.
type ApplyLeaser interface {
	ApplyLease(ctx context.Context, name string) (bool, error)
}

// IDVersion is a document id with its version.
type IDVersion struct {
	ID      string
	Version uint64
}

// AllVersions visits every document a derived store holds with its
// version, a page of limit at a time, in the store's order of ids.
func AllVersions(ctx context.Context, a ChangeApplier, log string, limit int, fn func(id string, version uint64) error) error {
	after := ""
	for {
		page, err := a.Versions(ctx, log, after, limit)
		if err != nil {
			return err
		}
		for _, p := range page {
			if err := fn(p.ID, p.Version); err != nil {
				return err
			}
		}
		if len(page) < limit {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// LastByID keeps the last of each id among xs (id names an element's id),
// in the order of those last elements: a batch then writes each document
// once, in its final state. xs itself is returned when no id repeats. It
// is the one "last state per id" of ragd: of changes (Change.ID) for
// appliers, of documents (Document.ID) for writers.
func LastByID[T any](xs []T, id func(T) string) []T {
	last := make(map[string]int, len(xs))
	for i, x := range xs {
		last[id(x)] = i
	}
	if len(last) == len(xs) {
		return xs
	}
	out := make([]T, 0, len(last))
	for i, x := range xs {
		if last[id(x)] == i {
			out = append(out, x)
		}
	}
	return out
}

// ChangeID and DocumentID name the id of a change and of a document, for
// LastByID.
func ChangeID(c Change) string     { return c.ID }
func DocumentID(d Document) string { return d.ID }

// ContentHash is the digest record stores compare to tell an upsert that
// changes nothing (a retry after a lost reply) from a real change. It
// covers every field but ID and UpdatedAt.
func ContentHash(d Document) [32]byte {
	h := sha256.New()
	var n [8]byte
	str := func(s string) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	strs := func(ss []string) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(ss)))
		h.Write(n[:])
		for _, s := range ss {
			str(s)
		}
	}
	str(d.Tenant)
	str(d.Title)
	str(d.Text)
	keys := make([]string, 0, len(d.Metadata))
	for k := range d.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	binary.LittleEndian.PutUint64(n[:], uint64(len(keys)))
	h.Write(n[:])
	for _, k := range keys {
		str(k)
		v := d.Metadata[k]
		if v.Kind() == KindString {
			str(v.Str()) // as before typed metadata: stored hashes stay valid
			continue
		}
		// A typed value: a length no string has, then its JSON.
		binary.LittleEndian.PutUint64(n[:], math.MaxUint64)
		h.Write(n[:])
		raw, _ := v.MarshalJSON() // a stored value always marshals
		str(string(raw))
	}
	binary.LittleEndian.PutUint64(n[:], uint64(len(d.Vector)))
	h.Write(n[:])
	for _, x := range d.Vector {
		binary.LittleEndian.PutUint32(n[:4], math.Float32bits(x))
		h.Write(n[:4])
	}
	strs(d.Entities)
	strs(d.Links)
	var out [32]byte
	h.Sum(out[:0])
	return out
}
