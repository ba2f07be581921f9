package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/ragd/ragd/spi"
)

// Retrieve returns the req.K documents nearest to req.Vector among those of
// req.Tenant (when set) that match req.Filter, ordered by descending
// similarity and then ascending id: the answer of an exact scan, found by a
// scan of the int8 codes and a float32 rescoring of the rows it cannot rule
// out (quant.go); or, in a store of ANN.MinRows documents or more once its
// IVF is built, the best of the rows in the lists the probe visits
// (ivf.go).
func (s *Store) Retrieve(ctx context.Context, req spi.VectorRequest) ([]spi.Ref, error) {
	if err := s.checkRequest(req); err != nil {
		return nil, fmt.Errorf("vector/embedded: retrieve: %w", err)
	}
	if err := s.checkOpen(ctx, "retrieve"); err != nil {
		return nil, err
	}
	q := query{k: req.K, filter: req.Filter, l2: s.cfg.Distance == L2,
		anyTen: req.Tenant == "", tenantName: req.Tenant}
	q.vec = append([]float32(nil), req.Vector...)
	if s.cfg.Distance == Cosine {
		normalizeInPlace(q.vec)
	}
	hits, err := s.search(ctx, q)
	if err != nil {
		return nil, err
	}
	refs := make([]spi.Ref, len(hits))
	for i, h := range hits {
		refs[i] = spi.Ref{ID: h.id, Score: s.score(h.key), Source: spi.SourceVector}
	}
	return refs, nil
}

// errMoved means a commit changed a candidate's record between the
// state a search's candidates came from and the file it reads.
var errMoved = errors.New("vector/embedded: a candidate changed during the search")

// search answers q from one state of the store: the candidates come from
// memory and their exact scores from the file, both as of one log
// sequence.
//
// A commit makes the file durable first and memory follows under mu's
// write lock, so memory is at s.seq and the file at s.seq or ahead. A
// search read-locks mu and opens its read transaction of the file before
// scanning; the transaction keeps that state of the file for the
// rescoring, whatever commits after it. When the file was already ahead
// (a commit durable, memory not yet following: the last fsync of a
// commit), the records of the candidates no entry after s.seq touched are
// still those of state s.seq, and the search goes on. Only when a
// candidate was touched does it wait for that commit (by taking writeMu,
// under which the file and memory agree) and search again.
func (s *Store) search(ctx context.Context, q query) ([]hit, error) {
	hits, err := s.searchOnce(ctx, q, false)
	if errors.Is(err, errMoved) {
		s.waits.Add(1)
		if h := s.hooks.moved; h != nil {
			h()
		}
		hits, err = s.searchOnce(ctx, q, true)
	}
	return hits, err
}

// searchOnce is one attempt of search; with wait, no commit is between
// the file and memory and it cannot fail with errMoved.
func (s *Store) searchOnce(ctx context.Context, q query, wait bool) ([]hit, error) {
	tx, g, done, seq, err := s.pin(wait)
	if err != nil {
		return nil, err
	}
	defer done()
	ids, vids, his, err := s.candidates(ctx, q)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	if tx.Bucket(bucketLog).Sequence() != seq {
		touched, err := touchedSince(tx, seq, ids)
		if err != nil {
			return nil, s.readErr("retrieve", err)
		}
		if touched {
			return nil, errMoved
		}
	}
	if h := s.hooks.beforeRescore; h != nil {
		h()
	}
	return s.rescore(ctx, tx, g, q, ids, vids, his)
}

// pin read-locks mu and opens a read transaction of the file with its
// vectors file generation (readTx); it returns the sequence memory
// reflects. mu stays read-locked until candidates returns; done ends the
// transaction. With wait it holds writeMu while it pins, so that no
// commit is between the file and memory.
func (s *Store) pin(wait bool) (*bolt.Tx, *vecGen, func(), uint64, error) {
	if wait {
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
	}
	s.mu.RLock()
	tx, g, done, err := s.readTx()
	if err != nil {
		s.mu.RUnlock()
		return nil, nil, nil, 0, s.readErr("retrieve", err)
	}
	return tx, g, done, s.seq, nil
}

// candidates scans the codes for q's candidates (index.candidates) and
// releases the read lock pin took.
func (s *Store) candidates(ctx context.Context, q query) ([]string, []uint64, []float64, error) {
	defer s.mu.RUnlock()
	if !q.anyTen {
		t, ok := s.idx.tenantIDs[q.tenantName]
		if !ok {
			return nil, nil, nil, nil
		}
		q.tenant = t
	}
	ids, vids, his, err := s.idx.candidates(ctx, q, s.parallelism())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("vector/embedded: retrieve: %w", err)
	}
	if h := s.hooks.afterCandidates; h != nil {
		h()
	}
	return ids, vids, his, nil
}

// touchedSince reports whether a log entry of tx after seq names one of
// ids (or whether such entries are missing, which compaction of entries
// that new never does, but then nothing can be said).
func touchedSince(tx *bolt.Tx, seq uint64, ids []string) (bool, error) {
	log := tx.Bucket(bucketLog)
	changed := map[string]struct{}{}
	n := uint64(0)
	c := log.Cursor()
	for k, v := c.Seek(seqKey(seq + 1)); k != nil; k, v = c.Next() {
		ch, err := decodeEntry(binary.BigEndian.Uint64(k), v)
		if err != nil {
			return false, err
		}
		changed[ch.ID] = struct{}{}
		n++
	}
	if n != log.Sequence()-seq {
		return true, nil
	}
	for _, id := range ids {
		if _, ok := changed[id]; ok {
			return true, nil
		}
	}
	return false, nil
}

// score turns a search key into the similarity pgvector would report.
func (s *Store) score(key float32) float64 {
	switch s.cfg.Distance {
	case L2:
		return 1 / (1 + math.Sqrt(float64(-key)))
	default:
		return float64(key)
	}
}

func (s *Store) checkRequest(req spi.VectorRequest) error {
	if req.K < 1 || req.K > MaxK {
		return fmt.Errorf("%w: k must be in [1, %d], got %d", spi.ErrInvalidQuery, MaxK, req.K)
	}
	if err := s.checkVector(req.Vector); err != nil {
		return err
	}
	return req.Filter.Validate()
}

func (s *Store) checkVector(v []float32) error {
	if err := spi.ValidateVector(v, s.cfg.Dimension); err != nil {
		return err
	}
	if s.cfg.Distance == Cosine {
		for _, x := range v {
			if x != 0 {
				return nil
			}
		}
		return fmt.Errorf("%w: a zero vector has no direction under cosine distance", spi.ErrInvalidQuery)
	}
	return nil
}

// validateDoc applies the same document rules as the PostgreSQL backend:
// an id, and strings that are valid UTF-8 without NUL bytes.
func validateDoc(d *spi.Document) error {
	if d.ID == "" {
		return fmt.Errorf("%w: document id must not be empty", spi.ErrInvalidQuery)
	}
	if len(d.ID) > bolt.MaxKeySize {
		return fmt.Errorf("%w: document id is longer than %d bytes", spi.ErrInvalidQuery, bolt.MaxKeySize)
	}
	bad := func(s string) bool { return !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 }
	check := []string{d.ID, d.Tenant, d.Title, d.Text}
	if err := d.Metadata.Validate(); err != nil {
		return fmt.Errorf("%w: document %q: %v", spi.ErrInvalidQuery, d.ID, err)
	}
	for k, v := range d.Metadata {
		check = append(check, k)
		for _, it := range v.Scalars() {
			if it.Kind() == spi.KindString {
				check = append(check, it.Str())
			}
		}
	}
	check = append(check, d.Entities...)
	check = append(check, d.Links...)
	for _, s := range check {
		if bad(s) {
			return fmt.Errorf("%w: document %q holds invalid UTF-8 or a NUL byte", spi.ErrInvalidQuery, d.ID)
		}
	}
	return nil
}

// Upsert inserts or replaces docs by id in one durable transaction: all or
// none. It is Commit of upserts without a tenant scope, so the change log
// records them. An invalid document wraps spi.ErrInvalidQuery and nothing
// is written; an id held by another tenant fails with a *spi.BatchError
// naming it (wrapping spi.ErrTenantConflict) while the others are written.
// When ids repeat within docs the last one wins. A document without
// UpdatedAt is stamped with Config.Now; times are kept to the microsecond,
// as PostgreSQL keeps them.
func (s *Store) Upsert(ctx context.Context, docs []spi.Document) error {
	writes := make([]spi.Write, len(docs))
	for i := range docs {
		d := &docs[i]
		if err := validateDoc(d); err != nil {
			return fmt.Errorf("vector/embedded: upsert: %w", err)
		}
		if err := s.checkVector(d.Vector); err != nil {
			return fmt.Errorf("vector/embedded: upsert: document %q: %w", d.ID, err)
		}
		writes[i] = spi.Write{Op: spi.OpUpsert, Doc: *d}
	}
	if len(writes) == 0 {
		return nil
	}
	out, err := s.Commit(ctx, writes)
	if err != nil {
		return err
	}
	failed := map[string]error{}
	for i, o := range out {
		if o.Err != nil {
			failed[docs[i].ID] = fmt.Errorf("vector/embedded: upsert: %w", o.Err)
		}
	}
	if len(failed) > 0 {
		return &spi.BatchError{Failed: failed}
	}
	return nil
}

// writeErr wraps a failed write. A write that fails at the file level
// (disk full, I/O error) leaves the store unable to serve writes, which is
// reported as spi.ErrUnavailable.
func (s *Store) writeErr(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("vector/embedded: %s: %w", op, err)
	}
	return fmt.Errorf("vector/embedded: %s: %w: %v", op, spi.ErrUnavailable, err)
}

// readErr wraps a failed read; a store closed underneath the call is
// spi.ErrUnavailable.
func (s *Store) readErr(op string, err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("vector/embedded: %s: %w: %v", op, spi.ErrUnavailable, err)
	}
	return fmt.Errorf("vector/embedded: %s: %w", op, err)
}

// Delete removes documents by id in one durable transaction, through
// Commit, so the change log records it. Unknown ids are ignored.
func (s *Store) Delete(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	writes := make([]spi.Write, len(ids))
	for i, id := range ids {
		writes[i] = spi.Write{Op: spi.OpDelete, Doc: spi.Document{ID: id}}
	}
	if _, err := s.Commit(ctx, writes); err != nil {
		return fmt.Errorf("vector/embedded: delete: %w", err)
	}
	return nil
}

// Hydrate returns the stored documents for ids in the order of ids (each id
// once), with the ids that do not exist in missing.
func (s *Store) Hydrate(ctx context.Context, ids []string) ([]spi.Document, []string, error) {
	if err := s.checkOpen(ctx, "hydrate"); err != nil {
		return nil, nil, err
	}
	var docs []spi.Document
	var missing []string
	seen := make(map[string]bool, len(ids))
	err := s.view(func(tx *bolt.Tx, g *vecGen) error {
		b := tx.Bucket(bucketDocs)
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			var v []byte
			if id != "" && len(id) <= bolt.MaxKeySize {
				v = b.Get([]byte(id))
			}
			if v == nil {
				missing = append(missing, id)
				continue
			}
			d, err := s.decodeDocument(g, id, v)
			if err != nil {
				return fmt.Errorf("%w: record %q: %v", ErrCorrupt, id, err)
			}
			docs = append(docs, d)
		}
		return nil
	})
	if err != nil {
		return nil, nil, s.readErr("hydrate", err)
	}
	return docs, missing, nil
}

// scanPage is the number of documents Scan decodes per read transaction,
// so a slow fn never holds a transaction open for long.
const scanPage = 256

// Scan visits every document in ascending id (byte) order. Each page of
// documents is read in its own transaction: documents written during a
// scan may or may not be visited. An error from fn stops the scan and is
// returned as is.
func (s *Store) Scan(ctx context.Context, fn func(spi.Document) error) error {
	var after []byte
	first := true
	for {
		if err := s.checkOpen(ctx, "scan"); err != nil {
			return err
		}
		page := make([]spi.Document, 0, scanPage)
		err := s.view(func(tx *bolt.Tx, g *vecGen) error {
			c := tx.Bucket(bucketDocs).Cursor()
			var k, v []byte
			if first {
				k, v = c.First()
			} else {
				k, v = c.Seek(after)
				if k != nil && string(k) == string(after) {
					k, v = c.Next()
				}
			}
			for ; k != nil && len(page) < scanPage; k, v = c.Next() {
				d, err := s.decodeDocument(g, string(k), v)
				if err != nil {
					return fmt.Errorf("%w: record %q: %v", ErrCorrupt, k, err)
				}
				page = append(page, d)
			}
			return nil
		})
		if err != nil {
			return s.readErr("scan", err)
		}
		for _, d := range page {
			if err := fn(d); err != nil {
				return err
			}
		}
		if len(page) < scanPage {
			return nil
		}
		first = false
		after = []byte(page[len(page)-1].ID)
	}
}
