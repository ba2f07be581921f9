package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

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
		var p putSet
		for i, d := range prepared {
			if i%64 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if err := removeEdges(tx, d.ID); err != nil {
				return err
			}
			if err := p.doc(d); err != nil {
				return err
			}
			if err := forgetVersion(tx, d.ID); err != nil {
				return err
			}
		}
		return p.flush(tx)
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

// putSet gathers a transaction's puts to write each bucket's in key
// order once the removals are done (flush). bbolt inserts a key into its
// leaf node's sorted slice and splits nodes only at commit, so puts in
// random order into a node the transaction grows cost time quadratic in
// its keys (the first thousands of documents of a graph built from empty
// went into one node per bucket), and scattered puts touch the tree's
// pages out of order; in key order each is an append to the node it
// lands in. BenchmarkBuildScale, docs/graph.md ("Memory and build time").
//
// A transaction's removals all come before its puts: removeEdges may
// drop an entity's terms that a later document's put adds back, and the
// state after the transaction is the same as applying each document in
// turn.
type putSet map[string][]keyValue

type keyValue struct{ k, v []byte }

func (p *putSet) add(bucket, k, v []byte) {
	if *p == nil {
		*p = putSet{}
	}
	(*p)[string(bucket)] = append((*p)[string(bucket)], keyValue{k, v})
}

// doc adds d's record, tenant, mentions, terms and links.
func (p *putSet) doc(d spi.Document) error {
	v, err := json.Marshal(record{Tenant: d.Tenant, Title: d.Title, Text: d.Text, Metadata: d.Metadata, UpdatedAt: d.UpdatedAt})
	if err != nil {
		return err
	}
	p.add(bDocs, []byte(d.ID), v)
	p.add(bTenant, []byte(d.ID), []byte(d.Tenant))
	for _, e := range d.Entities {
		p.add(bDocEnt, key(d.ID, e), nil)
		p.add(bEntDoc, key(e, d.ID), nil)
		for _, t := range graphspec.Tokens(e) {
			p.add(bTermEnt, key(t, e), nil)
		}
	}
	for _, to := range d.Links {
		p.add(bLinkOut, key(d.ID, to), nil)
		p.add(bLinkIn, key(to, d.ID), nil)
	}
	return nil
}

// flush writes the puts, each bucket's in key order (for equal keys, the
// one added last wins, as if written in turn).
func (p putSet) flush(tx *bolt.Tx) error {
	for name, kvs := range p {
		slices.SortStableFunc(kvs, func(a, b keyValue) int { return bytes.Compare(a.k, b.k) })
		b := tx.Bucket([]byte(name))
		for _, kv := range kvs {
			if err := b.Put(kv.k, kv.v); err != nil {
				return err
			}
		}
	}
	return nil
}
