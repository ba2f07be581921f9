package embedded

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ragd/ragd/spi"
)

// The change log (spi.ChangeLog) lives in the store file, beside the
// documents, and is written in the same bbolt transaction:
//
//	log       seq (8 bytes big-endian) -> op byte, commit time (unix ns, 8 bytes BE), id
//	versions  id -> version (8 bytes BE), content hash (32 bytes), tenant
//	meta      "log_id" -> 16 random bytes, hex; "log_compacted" -> seq (8 bytes BE)
//
// bbolt has one writer at a time, so sequences (the log bucket's
// NextSequence) increase in commit order. Files written before the log
// existed are upgraded at open: their documents have version 0 until they
// are written again.
var (
	bucketLog      = []byte("log")
	bucketVersions = []byte("versions")
	keyLogID       = []byte("log_id")
	keyCompacted   = []byte("log_compacted")
)

var _ spi.ChangeLog = (*Store)(nil)

// initLog creates the log buckets and the log id when missing.
func initLog(db *bolt.DB) error {
	return db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketLog, bucketVersions} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("vector/embedded: open: %w", err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		if meta.Get(keyLogID) != nil {
			return nil
		}
		var id [16]byte
		if _, err := rand.Read(id[:]); err != nil {
			return fmt.Errorf("vector/embedded: open: log id: %w", err)
		}
		return meta.Put(keyLogID, []byte(hex.EncodeToString(id[:])))
	})
}

// state is what the versions bucket holds for a document.
type state struct {
	version uint64
	hash    [32]byte
	tenant  string
}

func encodeState(s state) []byte {
	buf := make([]byte, 0, 40+len(s.tenant))
	buf = binary.BigEndian.AppendUint64(buf, s.version)
	buf = append(buf, s.hash[:]...)
	return append(buf, s.tenant...)
}

// lookup returns the state of id, and whether the record holds it. A
// document written before the log existed has version 0 and no hash.
func (s *Store) lookup(tx *bolt.Tx, id []byte) (state, bool, error) {
	if v := tx.Bucket(bucketVersions).Get(id); len(v) >= 40 {
		st := state{version: binary.BigEndian.Uint64(v), tenant: string(v[40:])}
		copy(st.hash[:], v[8:40])
		return st, true, nil
	}
	rec := tx.Bucket(bucketDocs).Get(id)
	if rec == nil {
		return state{}, false, nil
	}
	h, _, err := decodeHeader(rec, s.cfg.Dimension, nil)
	if err != nil {
		return state{}, false, fmt.Errorf("%w: record %q: %v", ErrCorrupt, id, err)
	}
	return state{tenant: h.tenant}, true, nil
}

func encodeEntry(op spi.Op, at time.Time, id string) []byte {
	buf := make([]byte, 0, 9+len(id))
	buf = append(buf, byte(op))
	buf = binary.BigEndian.AppendUint64(buf, uint64(at.UnixNano()))
	return append(buf, id...)
}

func decodeEntry(seq uint64, v []byte) (spi.Change, error) {
	if len(v) < 9 {
		return spi.Change{}, fmt.Errorf("%w: log entry %d is truncated", ErrCorrupt, seq)
	}
	return spi.Change{
		Seq: seq, Op: spi.Op(v[0]), ID: string(v[9:]),
		At: time.Unix(0, int64(binary.BigEndian.Uint64(v[1:9]))).UTC(),
	}, nil
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// prepared is one validated write.
type prepared struct {
	w    spi.Write
	rec  encodedRecord // upserts: the record but its vid
	val  []byte        // upserts: the record, once its vector has a vid
	vid  uint64        // upserts: that vid
	hash [32]byte
	err  error
}

// Commit implements spi.ChangeLog: the documents, their versions and the
// log entries are written in one durable transaction. A document the store
// cannot hold gets its own WriteResult.Err (wrapping spi.ErrInvalidQuery)
// while the others are written.
func (s *Store) Commit(ctx context.Context, writes []spi.Write) ([]spi.WriteResult, error) {
	now := s.cfg.Now()
	preps := make([]prepared, len(writes))
	for i, w := range writes {
		preps[i].w = w
		if w.Op == spi.OpUpsert {
			preps[i].err = s.prepare(&preps[i], now)
		} else if w.Op != spi.OpDelete {
			preps[i].err = fmt.Errorf("vector/embedded: commit: %w: unknown op %d", spi.ErrInvalidQuery, w.Op)
		}
	}
	out := make([]spi.WriteResult, len(writes))
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.checkOpen(ctx, "commit"); err != nil {
		return nil, err
	}
	// The vectors first, durable before the transaction that names them
	// (vecfile.go); none for an upsert that will write nothing.
	keep, err := s.writesRecord(preps)
	if err != nil {
		return nil, s.writeErr("commit", err)
	}
	var vecs [][]float32
	for i := range preps {
		if keep[i] {
			vecs = append(vecs, preps[i].w.Doc.Vector)
		}
	}
	// Room in the codes for the rows the commit may add, copied now, before
	// memory's lock, when they must move to a larger mapping
	// (rowCodes.grown): searches go on meanwhile.
	grown := s.idx.codes.grown(len(vecs) * s.idx.dim)
	if grown != nil {
		if h := s.hooks.codesGrown; h != nil {
			h()
		}
	}
	adopted := false
	defer func() {
		if !adopted {
			freeCodes(grown)
		}
	}()
	vids, err := s.vecs.appendVectors(vecs)
	if err != nil {
		return nil, s.writeErr("commit", err)
	}
	for i := range preps {
		if keep[i] {
			preps[i].vid, preps[i].val, vids = vids[0], preps[i].rec.withVid(vids[0]), vids[1:]
		}
	}
	var seq uint64
	err = s.db.Update(func(tx *bolt.Tx) error {
		setFill(tx)
		for i := range preps {
			if i%ctxCheckEvery == ctxCheckEvery-1 && ctx.Err() != nil {
				return context.Cause(ctx)
			}
			o, err := s.apply(tx, &preps[i], now)
			if err != nil {
				return err
			}
			out[i] = o
		}
		seq = tx.Bucket(bucketLog).Sequence()
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			return nil, fmt.Errorf("vector/embedded: commit: %w", err)
		}
		return nil, s.writeErr("commit", err)
	}
	if h := s.hooks.afterDiskCommit; h != nil {
		h()
	}
	adopted = true
	freeCodes(s.follow(seq, preps, out, grown))
	return out, nil
}

// follow makes memory follow a commit durable at seq: grown (nil: none)
// becomes the codes, then the changed writes of preps (out) are applied
// to the index. It returns the codes' old mapping, for freeCodes now
// that no search can be reading it. The caller holds the writers' mutex;
// until memory has followed, a search finds the file ahead of s.seq and
// starts again (ops.go).
func (s *Store) follow(seq uint64, preps []prepared, out []spi.WriteResult, grown []int8) (oldCodes []int8) {
	s.mu.Lock()
	defer s.mu.Unlock()
	oldCodes = s.idx.codes.adopt(grown)
	s.seq = seq
	for i, p := range preps {
		if !out[i].Changed {
			continue
		}
		if p.w.Op == spi.OpDelete {
			s.idx.remove(p.w.Doc.ID)
			continue
		}
		d := p.w.Doc
		md := d.Metadata
		if len(md) == 0 {
			md = nil
		} else {
			md = md.Clone()
		}
		s.idx.put(d.ID, d.Tenant, md, d.Vector, p.vid)
	}
	s.maybeBuild(false)
	s.armIdle()
	s.maybeCompact()
	return oldCodes
}

// writesRecord reports which of preps are upserts that may write their
// record: all valid upserts but those of an id written once in the batch
// that apply will find unchanged or refuse for its tenant, judged on the
// state the commit's transaction will start from (the caller holds the
// writers' mutex). A repeated ingest of the same documents then appends
// no vector, where it used to append one garbage entry per document
// (compacted away only once garbage outnumbered the live vectors).
func (s *Store) writesRecord(preps []prepared) ([]bool, error) {
	keep := make([]bool, len(preps))
	seen := make(map[string]int, len(preps))
	for i := range preps {
		if p := &preps[i]; p.err == nil && p.w.Op == spi.OpUpsert {
			keep[i] = true
			seen[p.w.Doc.ID]++
		}
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		for i := range preps {
			p := &preps[i]
			if !keep[i] || seen[p.w.Doc.ID] > 1 {
				continue
			}
			id := p.w.Doc.ID
			if id == "" || len(id) > bolt.MaxKeySize {
				keep[i] = false
				continue
			}
			cur, exists, err := s.lookup(tx, []byte(id))
			if err != nil {
				return err
			}
			_, keep[i] = judge(p, cur, exists)
		}
		return nil
	})
	return keep, err
}

// judge decides whether upsert p of a valid id writes its record over the
// state cur (exists: the id has a record); when it does not, the result
// says why (refused for its tenant, or unchanged at cur's version).
func judge(p *prepared, cur state, exists bool) (spi.WriteResult, bool) {
	d := &p.w.Doc
	switch {
	case p.w.Scope != "" && d.Tenant != p.w.Scope:
		return spi.WriteResult{Err: spi.ErrTenantConflict}, false
	case exists && p.w.KeepTenant && cur.tenant != d.Tenant:
		return spi.WriteResult{Err: spi.ErrTenantConflict}, false
	case exists && cur.version > 0 && cur.hash == p.hash:
		return spi.WriteResult{Version: cur.version}, false
	}
	return spi.WriteResult{}, true
}

// prepare validates and encodes an upsert.
func (s *Store) prepare(p *prepared, now time.Time) error {
	d := &p.w.Doc
	if err := validateDoc(d); err != nil {
		return fmt.Errorf("vector/embedded: commit: %w", err)
	}
	if err := s.checkVector(d.Vector); err != nil {
		return fmt.Errorf("vector/embedded: commit: document %q: %w", d.ID, err)
	}
	if d.UpdatedAt.IsZero() {
		d.UpdatedAt = now
	}
	d.UpdatedAt = d.UpdatedAt.UTC().Truncate(time.Microsecond)
	rec, err := encodeRecord(d)
	if err != nil {
		return fmt.Errorf("vector/embedded: commit: document %q: %w: %v", d.ID, spi.ErrInvalidQuery, err)
	}
	p.rec, p.hash = rec, spi.ContentHash(*d)
	return nil
}

// apply performs one prepared write inside tx. Only storage errors are
// returned; a write's own failure goes into its WriteResult.
func (s *Store) apply(tx *bolt.Tx, p *prepared, now time.Time) (spi.WriteResult, error) {
	if p.err != nil {
		return spi.WriteResult{Err: p.err}, nil
	}
	id := p.w.Doc.ID
	if id == "" || len(id) > bolt.MaxKeySize {
		if p.w.Op == spi.OpDelete {
			return spi.WriteResult{Err: spi.ErrNotFound}, nil
		}
		return spi.WriteResult{Err: fmt.Errorf("%w: invalid document id", spi.ErrInvalidQuery)}, nil
	}
	key := []byte(id)
	cur, exists, err := s.lookup(tx, key)
	if err != nil {
		return spi.WriteResult{}, err
	}
	docs, versions, log := tx.Bucket(bucketDocs), tx.Bucket(bucketVersions), tx.Bucket(bucketLog)
	if p.w.Op == spi.OpDelete {
		if !exists || (p.w.Scope != "" && cur.tenant != p.w.Scope) {
			return spi.WriteResult{Err: spi.ErrNotFound}, nil
		}
		seq, err := log.NextSequence()
		if err != nil {
			return spi.WriteResult{}, err
		}
		if err := docs.Delete(key); err != nil {
			return spi.WriteResult{}, err
		}
		if err := versions.Delete(key); err != nil {
			return spi.WriteResult{}, err
		}
		return spi.WriteResult{Version: seq, Changed: true}, log.Put(seqKey(seq), encodeEntry(spi.OpDelete, now, id))
	}
	d := p.w.Doc
	if o, ok := judge(p, cur, exists); !ok {
		return o, nil
	}
	if p.val == nil {
		// writesRecord judged this write on the same state and gave it
		// no vector: a bug, and nothing of the batch is written.
		return spi.WriteResult{}, fmt.Errorf("document %q would be written without its vector", id)
	}
	seq, err := log.NextSequence()
	if err != nil {
		return spi.WriteResult{}, err
	}
	if err := docs.Put(key, p.val); err != nil {
		return spi.WriteResult{}, err
	}
	if err := versions.Put(key, encodeState(state{version: seq, hash: p.hash, tenant: d.Tenant})); err != nil {
		return spi.WriteResult{}, err
	}
	return spi.WriteResult{Version: seq, Changed: true}, log.Put(seqKey(seq), encodeEntry(spi.OpUpsert, now, id))
}

// Changes implements spi.ChangeLog: entries and the current documents are
// read in one transaction.
func (s *Store) Changes(ctx context.Context, after uint64, limit int) ([]spi.Change, error) {
	if err := s.checkOpen(ctx, "changes"); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	var out []spi.Change
	err := s.view(func(tx *bolt.Tx, g *vecGen) error {
		c := tx.Bucket(bucketLog).Cursor()
		for k, v := c.Seek(seqKey(after + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			ch, err := decodeEntry(binary.BigEndian.Uint64(k), v)
			if err != nil {
				return err
			}
			if err := s.fill(tx, g, &ch, ch.Seq); err != nil {
				return err
			}
			out = append(out, ch)
		}
		return nil
	})
	if err != nil {
		return nil, s.readErr("changes", err)
	}
	return out, nil
}

// fill sets ch.Doc and ch.Version from the record; tomb is the version of
// a deletion.
func (s *Store) fill(tx *bolt.Tx, g *vecGen, ch *spi.Change, tomb uint64) error {
	ch.Doc, ch.Version = nil, tomb
	if ch.ID == "" || len(ch.ID) > bolt.MaxKeySize {
		return nil
	}
	rec := tx.Bucket(bucketDocs).Get([]byte(ch.ID))
	if rec == nil {
		return nil
	}
	d, err := s.decodeDocument(g, ch.ID, rec)
	if err != nil {
		return fmt.Errorf("%w: record %q: %v", ErrCorrupt, ch.ID, err)
	}
	st, _, err := s.lookup(tx, []byte(ch.ID))
	if err != nil {
		return err
	}
	ch.Doc, ch.Version = &d, st.version
	return nil
}

// Current implements spi.ChangeLog. An id the record does not hold gets
// the log's last sequence as its tombstone version.
func (s *Store) Current(ctx context.Context, ids []string) ([]spi.Change, error) {
	if err := s.checkOpen(ctx, "current"); err != nil {
		return nil, err
	}
	out := make([]spi.Change, len(ids))
	err := s.view(func(tx *bolt.Tx, g *vecGen) error {
		last := tx.Bucket(bucketLog).Sequence()
		for i, id := range ids {
			out[i] = spi.Change{ID: id}
			if err := s.fill(tx, g, &out[i], last); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.readErr("current", err)
	}
	return out, nil
}

// LogState implements spi.ChangeLog.
func (s *Store) LogState(ctx context.Context) (spi.LogState, error) {
	if err := s.checkOpen(ctx, "log state"); err != nil {
		return spi.LogState{}, err
	}
	var st spi.LogState
	err := s.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		st.ID = string(meta.Get(keyLogID))
		if v := meta.Get(keyCompacted); len(v) == 8 {
			st.Compacted = binary.BigEndian.Uint64(v)
		}
		b := tx.Bucket(bucketLog)
		st.Last = b.Sequence()
		if k, _ := b.Cursor().First(); k != nil {
			st.First = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	if err != nil {
		return spi.LogState{}, s.readErr("log state", err)
	}
	return st, nil
}

// Versions implements spi.ChangeLog.
func (s *Store) Versions(ctx context.Context, fn func(id string, version uint64) error) error {
	var after []byte
	for {
		if err := s.checkOpen(ctx, "versions"); err != nil {
			return err
		}
		type iv struct {
			id string
			v  uint64
		}
		page := make([]iv, 0, scanPage)
		err := s.db.View(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketDocs).Cursor()
			k, _ := c.First()
			if after != nil {
				k, _ = c.Seek(after)
				if bytes.Equal(k, after) {
					k, _ = c.Next()
				}
			}
			for ; k != nil && len(page) < scanPage; k, _ = c.Next() {
				st, _, err := s.lookup(tx, k)
				if err != nil {
					return err
				}
				page = append(page, iv{string(k), st.version})
			}
			return nil
		})
		if err != nil {
			return s.readErr("versions", err)
		}
		for _, p := range page {
			if err := fn(p.id, p.v); err != nil {
				return err
			}
		}
		if len(page) < scanPage {
			return nil
		}
		after = []byte(page[len(page)-1].id)
	}
}

// CompactLog implements spi.ChangeLog; the newest entry is always kept.
func (s *Store) CompactLog(ctx context.Context, before time.Time, upTo uint64) (int, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.checkOpen(ctx, "compact log"); err != nil {
		return 0, err
	}
	n := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		var top uint64
		log := tx.Bucket(bucketLog)
		// The newest entry always stays, as in the PostgreSQL store.
		upTo = min(upTo, log.Sequence()-1)
		c := log.Cursor()
		for k, v := c.First(); k != nil && binary.BigEndian.Uint64(k) <= upTo; k, v = c.First() {
			ch, err := decodeEntry(binary.BigEndian.Uint64(k), v)
			if err != nil {
				return err
			}
			if !ch.At.Before(before) {
				break
			}
			if err := c.Delete(); err != nil {
				return err
			}
			n, top = n+1, ch.Seq
		}
		if top == 0 {
			return nil
		}
		return tx.Bucket(bucketMeta).Put(keyCompacted, seqKey(top))
	})
	if err != nil {
		return 0, s.writeErr("compact log", err)
	}
	return n, nil
}

// Page fill: bbolt splits a page that outgrows FillPercent of its size,
// 0.5 by default, which leaves pages of keys written in ascending order
// half empty. The log's keys only ever ascend, so its pages are filled;
// documents and versions, keyed by id, are filled to 0.9, which leaves
// room for an id written out of order (measured by
// BenchmarkDiskPerDocument: pages in use 2.26 → 1.25 KB per document
// for ids written in ascending order, 1.54 → 1.60 KB in random order).
const (
	docsFill = 0.9
	logFill  = 1.0
)

// setFill sets the fill of the buckets a commit writes; bbolt keeps it
// per transaction.
func setFill(tx *bolt.Tx) {
	tx.Bucket(bucketDocs).FillPercent = docsFill
	tx.Bucket(bucketVersions).FillPercent = docsFill
	tx.Bucket(bucketLog).FillPercent = logFill
}
