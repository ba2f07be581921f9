package embedded

import (
	"context"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/ragd/ragd/backends/graph/graphspec"
	"github.com/ragd/ragd/spi"
)

// Upsert inserts or replaces documents, atomically for the whole call. A
// document's previous MENTIONS and LINKS_TO edges are replaced by the ones
// it carries now; entity names are normalised with graphspec.Normalize.
// Links to documents that do not exist yet are kept and take effect once
// the target is upserted. Invalid documents wrap spi.ErrInvalidQuery.
func (s *Store) Upsert(ctx context.Context, docs []spi.Document) error {
	prepared, err := graphspec.Prepare(docs)
	if err != nil {
		return fmt.Errorf("graph/embedded: upsert: %w", err)
	}
	if len(prepared) == 0 {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	err = s.update(ctx, "upsert", func(tx *bolt.Tx) error {
		for i, d := range prepared {
			if i%64 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if err := removeEdges(tx, d.ID); err != nil {
				return err
			}
			if err := putDoc(tx, d); err != nil {
				return err
			}
			if err := forgetVersion(tx, d.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		s.mem.upsert(prepared)
	}
	return err
}

// Delete removes documents, their mentions and their outgoing links, and
// prunes entities no document mentions any more. Links other documents hold
// to a deleted document stay dormant and revive if it is upserted again.
// Unknown ids are ignored.
func (s *Store) Delete(ctx context.Context, ids []string) error {
	ids = graphspec.Dedupe(ids)
	if len(ids) == 0 {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	err := s.update(ctx, "delete", func(tx *bolt.Tx) error {
		for i, id := range ids {
			if i%64 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if err := forgetVersion(tx, id); err != nil {
				return err
			}
			if tx.Bucket(bTenant).Get([]byte(id)) == nil {
				continue
			}
			if err := removeEdges(tx, id); err != nil {
				return err
			}
			if err := tx.Bucket(bDocs).Delete([]byte(id)); err != nil {
				return err
			}
			if err := tx.Bucket(bTenant).Delete([]byte(id)); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		s.mem.delete(ids)
	}
	return err
}

// forgetVersion drops id's change-log version: a write outside the log
// leaves the document unversioned (and a delete leaves no tombstone).
func forgetVersion(tx *bolt.Tx, id string) error {
	if b := tx.Bucket(bVersions); b != nil {
		return b.Delete([]byte(id))
	}
	return nil
}

// removeEdges deletes id's mentions and outgoing links and prunes orphaned
// entities from the term index.
func removeEdges(tx *bolt.Tx, id string) error {
	docEnt, entDoc, termEnt := tx.Bucket(bDocEnt), tx.Bucket(bEntDoc), tx.Bucket(bTermEnt)
	for _, e := range seconds(docEnt, id) {
		if err := docEnt.Delete(key(id, e)); err != nil {
			return err
		}
		if err := entDoc.Delete(key(e, id)); err != nil {
			return err
		}
		orphan := true
		scanPrefix(entDoc, e, func(string) bool { orphan = false; return false })
		if orphan {
			for _, t := range graphspec.Tokens(e) {
				if err := termEnt.Delete(key(t, e)); err != nil {
					return err
				}
			}
		}
	}
	out, in := tx.Bucket(bLinkOut), tx.Bucket(bLinkIn)
	for _, to := range seconds(out, id) {
		if err := out.Delete(key(id, to)); err != nil {
			return err
		}
		if err := in.Delete(key(to, id)); err != nil {
			return err
		}
	}
	return nil
}

func putDoc(tx *bolt.Tx, d spi.Document) error {
	v, err := json.Marshal(record{Tenant: d.Tenant, Title: d.Title, Text: d.Text, Metadata: d.Metadata, UpdatedAt: d.UpdatedAt})
	if err != nil {
		return err
	}
	if err := tx.Bucket(bDocs).Put([]byte(d.ID), v); err != nil {
		return err
	}
	if err := tx.Bucket(bTenant).Put([]byte(d.ID), []byte(d.Tenant)); err != nil {
		return err
	}
	docEnt, entDoc, termEnt := tx.Bucket(bDocEnt), tx.Bucket(bEntDoc), tx.Bucket(bTermEnt)
	for _, e := range d.Entities {
		if err := docEnt.Put(key(d.ID, e), nil); err != nil {
			return err
		}
		if err := entDoc.Put(key(e, d.ID), nil); err != nil {
			return err
		}
		for _, t := range graphspec.Tokens(e) {
			if err := termEnt.Put(key(t, e), nil); err != nil {
				return err
			}
		}
	}
	out, in := tx.Bucket(bLinkOut), tx.Bucket(bLinkIn)
	for _, to := range d.Links {
		if err := out.Put(key(d.ID, to), nil); err != nil {
			return err
		}
		if err := in.Put(key(to, d.ID), nil); err != nil {
			return err
		}
	}
	return nil
}
