package keyword

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	index "github.com/blevesearch/bleve_index_api"

	"github.com/ragd/ragd/spi"
)

// The change-log applier (spi.ChangeApplier). Versions and the checkpoint
// are written in the same atomic batch as the documents they describe:
//
//	_version       stored field of a live document: log tag (8 bytes) +
//	               version (8 bytes BE); read from the in-memory postings
//	ragd.v/<id>    internal key, the same value for a deleted document
//	               (its tombstone), only while the checkpoint is below it
//	ragd.applied   internal key: log tag (8 bytes) + seq (8 bytes BE)
//
// Live documents' versions are not internal keys because scorch writes
// every internal key into each snapshot it persists. For the same reason
// tombstones are short-lived. One applier writes this index (the process
// holds its lock; the ingest pipeline serialises its applies), so an entry
// at or below the checkpoint was applied already and is skipped, and a
// later entry carries a later version: a delete the checkpoint passes
// needs no tombstone. Only a delete applied above the checkpoint (a repair
// applies the record's current state without moving the checkpoint) keeps
// one, until an apply moves the checkpoint past it; each apply drops the
// tombstones its checkpoint passes, those of an older ragd included.
//
// The log tag is the first 8 bytes of SHA-256(log id): a value written for
// another log reads as absent. A Rebuild starts a new index without
// versions or checkpoint, so the log is applied again from its start (or
// the store is resynchronised by ragd check).
const versionPrefix = "ragd.v/"

var appliedKey = []byte("ragd.applied")

// errRebuilding makes the applier retry once a running Rebuild is done.
var errRebuilding = errors.New("keyword: a rebuild is running")

var _ spi.ChangeApplier = (*Backend)(nil)

func logTag(log string) []byte {
	h := sha256.Sum256([]byte(log))
	return h[:8]
}

// tagged decodes a tag+number value; 0 when it belongs to another log.
func tagged(v, tag []byte) uint64 {
	if len(v) != 16 || !bytes.Equal(v[:8], tag) {
		return 0
	}
	return binary.BigEndian.Uint64(v[8:])
}

func taggedValue(tag []byte, n uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), tag...), n)
}

// ApplyChanges implements spi.ChangeApplier in one bleve batch.
func (b *Backend) ApplyChanges(ctx context.Context, log string, changes []spi.Change, through uint64) error {
	states := spi.LastByID(changes, spi.ChangeID)
	for _, c := range states {
		if c.Doc != nil {
			if err := validateDoc(*c.Doc); err != nil {
				return fmt.Errorf("keyword: apply: %w", err)
			}
		}
	}
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	st, unlock, err := b.acquire(ctx)
	if err != nil {
		return fmt.Errorf("keyword: apply: %w", err)
	}
	defer unlock()
	if b.pending != nil {
		return fmt.Errorf("keyword: apply: %w: %w", spi.ErrUnavailable, errRebuilding)
	}
	tag := logTag(log)
	var applied uint64
	err = b.withReader(st, func(r index.IndexReader) error {
		cur, err := r.GetInternal(appliedKey)
		applied = tagged(cur, tag)
		return err
	})
	if err != nil {
		return fmt.Errorf("keyword: apply: %w: %v", spi.ErrUnavailable, err)
	}
	checkpoint := max(applied, through)
	var docs []spi.Document
	var del []string
	lw := &logWrite{versions: map[string][]byte{}, tombs: map[string][]byte{}}
	for _, c := range states {
		if c.Seq > 0 && c.Seq <= applied {
			continue // an entry applied before: its state, or a newer one, is here
		}
		v, live := st.impact.versionOf(c.ID)
		if !live {
			v = st.tombs[c.ID]
		}
		if tagged(v, tag) >= c.Version {
			continue
		}
		if c.Doc != nil {
			docs = append(docs, *c.Doc)
			lw.versions[c.ID] = taggedValue(tag, c.Version)
			continue
		}
		del = append(del, c.ID)
		if c.Version > checkpoint {
			lw.tombs[c.ID] = taggedValue(tag, c.Version)
		}
	}
	// Tombstones the checkpoint passes, and those of another log, have
	// nothing left to guard: entries up to the checkpoint are never
	// applied again, and later ones carry later versions.
	for id, v := range st.tombs {
		if _, again := lw.tombs[id]; !again && tagged(v, tag) <= checkpoint {
			lw.drop = append(lw.drop, id)
		}
	}
	if through > applied {
		lw.applied = taggedValue(tag, through)
	}
	if len(docs)+len(del)+len(lw.drop) == 0 && lw.applied == nil {
		return nil
	}
	if err := ctxErr(ctx); err != nil {
		return fmt.Errorf("keyword: apply: %w", err)
	}
	if err := writeBatch(st, docs, del, lw); err != nil {
		return fmt.Errorf("keyword: apply: %w", err)
	}
	return nil
}

func (b *Backend) withReader(st *store, fn func(index.IndexReader) error) error {
	adv, err := st.idx.Advanced()
	if err != nil {
		return err
	}
	r, err := adv.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	return fn(r)
}

// AppliedSeq implements spi.ChangeApplier.
func (b *Backend) AppliedSeq(ctx context.Context, log string) (uint64, error) {
	st, unlock, err := b.acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("keyword: applied seq: %w", err)
	}
	defer unlock()
	v, err := st.idx.GetInternal(appliedKey)
	if err != nil {
		return 0, fmt.Errorf("keyword: applied seq: %w: %v", spi.ErrUnavailable, err)
	}
	return tagged(v, logTag(log)), nil
}

// Versions implements spi.ChangeApplier: the ids come from the index's
// term dictionary of document ids (sorted, so a page costs its own size),
// the versions from the in-memory postings, which skip deleted documents.
func (b *Backend) Versions(ctx context.Context, log, after string, limit int) ([]spi.IDVersion, error) {
	st, unlock, err := b.acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("keyword: versions: %w", err)
	}
	defer unlock()
	tag := logTag(log)
	var out []spi.IDVersion
	err = b.withReader(st, func(r index.IndexReader) error {
		dict, err := r.FieldDictRange("_id", []byte(after), nil)
		if err != nil {
			return err
		}
		defer dict.Close()
		for len(out) < limit {
			e, err := dict.Next()
			if err != nil || e == nil {
				return err
			}
			if e.Term == after {
				continue
			}
			if ver, live := st.impact.versionOf(e.Term); live {
				out = append(out, spi.IDVersion{ID: e.Term, Version: tagged(ver, tag)})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("keyword: versions: %w: %v", spi.ErrUnavailable, err)
	}
	return out, nil
}
