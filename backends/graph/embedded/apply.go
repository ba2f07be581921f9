package embedded

import (
	"context"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/ragd/ragd/backends/graph/graphspec"
	"github.com/ragd/ragd/spi"
)

// The change-log applier (spi.ChangeApplier). Versions and the checkpoint
// live in the store file and are written in the transaction that applies
// the changes, so the store and its checkpoint never disagree:
//
//	versions  id -> version (8 bytes BE); kept after a delete (tombstone)
//	meta      "applied_log" -> log id, "applied_seq" -> seq (8 bytes BE)
//
// Versions belong to the log named in applied_log: applying changes of
// another log drops them first.
var (
	bVersions     = []byte("versions")
	keyAppliedLog = []byte("applied_log")
	keyAppliedSeq = []byte("applied_seq")
)

var _ spi.ChangeApplier = (*Store)(nil)

// ApplyBatch is how many change-log entries ragd hands this store per
// ApplyChanges (ingest.NamedApplier.ApplyBatch; the derived stores'
// default is ingest.DefaultApplyBatch, 1,000). Each apply is one bbolt
// transaction, whose commit rewrites every page its puts touched: a
// graph's entity keys are scattered, so a larger batch shares more of
// those pages between its documents. BenchmarkBuildScale at 200,000
// scale-corpus documents (AMD EPYC, 2026-12-07, puts in key order): 367
// µs of CPU per document in batches of 1,000, 170 in batches of 8,000,
// 151 in 16,000 (docs/graph.md, "Memory and build time"). The
// read model takes its write lock once per apply, so a batch also bounds
// how long an apply holds the graph's queries back: for 8,192 documents
// of that corpus 39–64 ms, 173 ms at worst (when its arrays grow),
// measured between 65,000 and 262,000 documents. During a woken graph's
// catch-up nothing queries it yet (not ready); afterwards applies are as
// large as the writes behind it. A batch that runs out of the apply's
// deadline is halved by the applier.
const ApplyBatch = 8192

// ApplyChanges implements spi.ChangeApplier in one transaction; the
// in-memory read model is updated after it commits.
func (s *Store) ApplyChanges(ctx context.Context, log string, changes []spi.Change, through uint64) error {
	states, byID, err := graphspec.PrepareChanges(changes)
	if err != nil {
		return fmt.Errorf("graph/embedded: apply: %w", err)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var ups []spi.Document
	var dels []string
	err = s.update(ctx, "apply", func(tx *bolt.Tx) error {
		ups, dels = ups[:0], dels[:0]
		var p putSet
		vb, err := versionsFor(tx, log)
		if err != nil {
			return err
		}
		for i, c := range states {
			if i%64 == 63 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if version(vb, c.ID) >= c.Version {
				continue
			}
			if err := removeEdges(tx, c.ID); err != nil {
				return err
			}
			if c.Doc == nil {
				if err := tx.Bucket(bDocs).Delete([]byte(c.ID)); err != nil {
					return err
				}
				if err := tx.Bucket(bTenant).Delete([]byte(c.ID)); err != nil {
					return err
				}
				dels = append(dels, c.ID)
			} else {
				if err := p.doc(byID[c.ID]); err != nil {
					return err
				}
				ups = append(ups, byID[c.ID])
			}
			if err := vb.Put([]byte(c.ID), binary.BigEndian.AppendUint64(nil, c.Version)); err != nil {
				return err
			}
		}
		if err := p.flush(tx); err != nil {
			return err
		}
		meta := tx.Bucket(bMeta)
		if through <= seqOf(meta.Get(keyAppliedSeq)) {
			return nil
		}
		return meta.Put(keyAppliedSeq, binary.BigEndian.AppendUint64(nil, through))
	})
	if err != nil {
		return err
	}
	// The read model follows the commit, in commit order (wmu).
	s.mem.upsert(ups)
	s.mem.delete(dels)
	return nil
}

// versionsFor returns the versions bucket of log, recreating it (and
// resetting the checkpoint) when the store held another log's.
func versionsFor(tx *bolt.Tx, log string) (*bolt.Bucket, error) {
	meta := tx.Bucket(bMeta)
	if string(meta.Get(keyAppliedLog)) != log {
		if tx.Bucket(bVersions) != nil {
			if err := tx.DeleteBucket(bVersions); err != nil {
				return nil, err
			}
		}
		if err := meta.Put(keyAppliedLog, []byte(log)); err != nil {
			return nil, err
		}
		if err := meta.Delete(keyAppliedSeq); err != nil {
			return nil, err
		}
	}
	return tx.CreateBucketIfNotExists(bVersions)
}

func seqOf(v []byte) uint64 {
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func version(b *bolt.Bucket, id string) uint64 {
	if b == nil || id == "" || len(id) > bolt.MaxKeySize {
		return 0
	}
	return seqOf(b.Get([]byte(id)))
}

// AppliedSeq implements spi.ChangeApplier.
func (s *Store) AppliedSeq(ctx context.Context, log string) (uint64, error) {
	var seq uint64
	err := s.run(ctx, "applied seq", false, func(tx *bolt.Tx) error {
		meta := tx.Bucket(bMeta)
		if string(meta.Get(keyAppliedLog)) == log {
			seq = seqOf(meta.Get(keyAppliedSeq))
		}
		return nil
	})
	return seq, err
}

// Versions implements spi.ChangeApplier, in id order.
func (s *Store) Versions(ctx context.Context, log, after string, limit int) ([]spi.IDVersion, error) {
	var out []spi.IDVersion
	err := s.run(ctx, "versions", false, func(tx *bolt.Tx) error {
		var vb *bolt.Bucket
		if string(tx.Bucket(bMeta).Get(keyAppliedLog)) == log {
			vb = tx.Bucket(bVersions)
		}
		c := tx.Bucket(bTenant).Cursor()
		k, _ := c.Seek([]byte(after))
		if k != nil && string(k) == after {
			k, _ = c.Next()
		}
		for ; k != nil && len(out) < limit; k, _ = c.Next() {
			out = append(out, spi.IDVersion{ID: string(k), Version: version(vb, string(k))})
		}
		return nil
	})
	return out, err
}
