package opensearch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ragd/ragd/spi"
)

// The change-log applier (spi.ChangeApplier).
//
// Versions. A document's OpenSearch _version is its change-log version,
// written with version_type=external: OpenSearch itself refuses a write
// whose version is not above the stored one, so a replayed, reordered or
// concurrent apply (ragd replicas sharing the cluster) never overwrites a
// newer state. A version is tagged with the log's epoch,
//
//	_version = epoch << 40 | version
//
// where the epoch is a number <prefix>-meta gives each log when it first
// applies (and again when a log comes back after another one applied):
// versions of a log that came later are above every version of earlier
// ones, so a new record's low versions apply over an old record's high
// ones, and a version read back whose epoch is not the log's reads as 0
// (spi.ChangeApplier.Versions).
//
// Where a document lives. Deletes carry no document, and tenants have an
// index each, so <prefix>-ids records, per id, the version the tenant
// indexes hold and the tenant holding it, or that it was deleted: the
// durable tombstone, since OpenSearch forgets a deleted document's
// version after index.gc_deletes (60 s). An apply reads the ids' records
// (realtime), writes the tenant indexes (documents, and deletes from the
// index a document moved out of) and waits for the refresh, then writes
// the records compare-and-set (applyStates resolves a racing replica's
// record). A crash in between leaves records behind the documents, and
// the next apply writes the same versions again, which OpenSearch answers
// as conflicts, harmlessly. (A replica that crashes there while another
// moves the id to a third tenant leaves a copy in the second: ragd check
// does not see it, since Versions keeps an id's highest version.)
//
// Checkpoints. <prefix>-meta holds cp:<log> with the checkpoint as its
// external version (external_gte): a lower one never moves it back.
//
// Tombstones have an end: records of deleted documents below the
// checkpoint and older than tombstoneAge are deleted (at most every
// tombstoneAge). Entries up to the checkpoint are not applied again; a
// state read before a delete and applied more than tombstoneAge after it
// (a replica stalled that long mid-apply) could bring the document back,
// which `ragd check` reports and repairs.
const (
	seqBits      = 40
	maxSeq       = 1<<seqBits - 1
	tombstoneAge = 10 * time.Minute
)

func encodeVersion(epoch, seq uint64) int64 { return int64(epoch<<seqBits | seq) }

func decodeVersion(v int64) (epoch, seq uint64) {
	return uint64(v) >> seqBits, uint64(v) & maxSeq
}

// logKey is a log's key in <prefix>-meta.
func logKey(log string) string {
	h := sha256.Sum256([]byte(log))
	return hex.EncodeToString(h[:12])
}

// ApplyBatch is how many change-log entries ragd hands this backend per
// ApplyChanges (ingest.NamedApplier.ApplyBatch; the bleve backend takes
// ingest.DefaultApplyBatch). Every apply waits for a refresh (up to
// Config.RefreshInterval) and pays four round trips whatever its size, so
// batches of 256 held the apply to about 190 documents a second; a batch
// of 2,000 documents of about 1 KiB is a _bulk body of about 3 MiB, well
// under OpenSearch's 100 MiB http.max_content_length. A batch that runs
// out of the apply's deadline is halved by the applier.
const ApplyBatch = 2000

// ApplyChanges implements spi.ChangeApplier: the tenant indexes in one
// bulk request that returns once its writes are searchable, then the
// records and the checkpoint in a second.
func (b *Backend) ApplyChanges(ctx context.Context, log string, changes []spi.Change, through uint64) error {
	if err := b.live(); err != nil {
		return err
	}
	states := spi.LastByID(changes, spi.ChangeID)
	for _, c := range states {
		if err := validateChange(c); err != nil {
			return fmt.Errorf("keyword/opensearch: apply: %w", err)
		}
	}
	if through > maxSeq {
		return fmt.Errorf("keyword/opensearch: apply: checkpoint %d above %d", through, uint64(maxSeq))
	}
	epoch, err := b.applyEpoch(ctx, log)
	if err != nil {
		return fmt.Errorf("keyword/opensearch: apply: %w", err)
	}
	if len(states) > 0 {
		if err := b.applyStates(ctx, epoch, states); err != nil {
			return fmt.Errorf("keyword/opensearch: apply: %w", err)
		}
	}
	if through > 0 {
		var cp bytes.Buffer
		bulkLine(&cp, "index", b.n.meta(), "cp:"+logKey(log), int64(through), "external_gte", map[string]any{"log": log})
		if err := b.bulk(ctx, cp.Bytes(), ""); err != nil {
			return fmt.Errorf("keyword/opensearch: apply: %w", err)
		}
	}
	b.pruneTombstones(ctx, log, epoch)
	return nil
}

// pendingState is a state whose documents are written and whose record
// is not yet.
type pendingState struct {
	c   spi.Change
	key string
	rec record
}

// applyStates writes the states newer than their records: the documents
// (waiting for the refresh), then the records, compare-and-set on what
// was read. A record that changed meanwhile was written by a racing
// applier: if its state is newer, this one's document is deleted again
// from its tenant's index when the newer state lives elsewhere; if older,
// its tenant's copy is deleted and the record written again. So of two
// replicas moving an id between tenants at once, the one that writes the
// record last has seen the other's tenant, and no stale copy is left.
func (b *Backend) applyStates(ctx context.Context, epoch uint64, states []spi.Change) error {
	keys := make([]string, len(states))
	for i, c := range states {
		keys[i] = docKey(c.ID)
	}
	held, err := b.records(ctx, keys)
	if err != nil {
		return err
	}
	now := b.cfg.Now().UnixMilli()
	var docs bytes.Buffer
	var todo []pendingState
	for _, c := range states {
		v := encodeVersion(epoch, c.Version)
		key := docKey(c.ID)
		r := held[key]
		if r.found && r.Ver > v {
			continue // a newer state is here
		}
		// The state the record already names is written again: a replay
		// costs conflicts, and a repair (ragd check) restores a document
		// the tenant index lost or holds in an older state.
		p := pendingState{c: c, key: key, rec: record{Ver: v, Epoch: epoch, Seq: c.Version, At: now}}
		if c.Doc != nil {
			p.rec.Tenant = c.Doc.Tenant
			bulkLine(&docs, "index", b.n.tenant(c.Doc.Tenant), key, v, "external", toSource(*c.Doc))
		} else {
			p.rec.Deleted, p.rec.Tenant = true, r.Tenant
		}
		if r.found && (c.Doc == nil || r.Tenant != c.Doc.Tenant) {
			bulkLine(&docs, "delete", b.n.tenant(r.Tenant), key, v, "external", nil)
		}
		todo = append(todo, p)
	}
	if docs.Len() > 0 {
		if err := b.bulk(ctx, docs.Bytes(), "wait_for"); err != nil {
			return err
		}
	}
	for round := 0; len(todo) > 0; round++ {
		if round == 10 {
			return fmt.Errorf("%w: the records of %d document(s) keep changing under this apply", spi.ErrUnavailable, len(todo))
		}
		var recs bytes.Buffer
		for _, p := range todo {
			r := held[p.key]
			meta := map[string]any{"_index": b.n.ids(), "_id": p.key}
			action := "create"
			if r.found {
				action, meta["if_seq_no"], meta["if_primary_term"] = "index", r.seqNo, r.primary
			}
			enc := json.NewEncoder(&recs)
			_ = enc.Encode(map[string]any{action: meta})
			_ = enc.Encode(p.rec)
		}
		statuses, err := b.bulkStatuses(ctx, recs.Bytes(), "")
		if err != nil {
			return err
		}
		var lost []pendingState
		var lostKeys []string
		for i, st := range statuses {
			if st == http.StatusConflict {
				lost, lostKeys = append(lost, todo[i]), append(lostKeys, todo[i].key)
			}
		}
		if len(lost) == 0 {
			return nil
		}
		if held, err = b.records(ctx, lostKeys); err != nil {
			return err
		}
		var fix bytes.Buffer
		todo = todo[:0]
		for _, p := range lost {
			r := held[p.key]
			if r.found && r.Ver >= p.rec.Ver {
				// A newer state won: take this one's copy back out of an
				// index the id no longer lives in.
				if p.c.Doc != nil && r.Ver > p.rec.Ver && (r.Deleted || r.Tenant != p.c.Doc.Tenant) {
					bulkLine(&fix, "delete", b.n.tenant(p.c.Doc.Tenant), p.key, r.Ver, "external", nil)
				}
				continue
			}
			if r.live() && (p.c.Doc == nil || r.Tenant != p.c.Doc.Tenant) {
				bulkLine(&fix, "delete", b.n.tenant(r.Tenant), p.key, p.rec.Ver, "external", nil)
			}
			todo = append(todo, p)
		}
		if fix.Len() > 0 {
			if err := b.bulk(ctx, fix.Bytes(), "wait_for"); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateChange reports a change the index cannot hold; the error wraps
// spi.ErrInvalidQuery, so the applier skips it (after bisecting).
func validateChange(c spi.Change) error {
	if c.ID == "" {
		return fmt.Errorf("%w: document id must not be empty", spi.ErrInvalidQuery)
	}
	if c.Version > maxSeq {
		return fmt.Errorf("%w: version %d above %d", spi.ErrInvalidQuery, c.Version, uint64(maxSeq))
	}
	if c.Doc != nil {
		for k := range c.Doc.Metadata {
			if k == "" {
				return fmt.Errorf("%w: document %q has an empty metadata key", spi.ErrInvalidQuery, c.ID)
			}
		}
	}
	return nil
}

// record is an id's entry in <prefix>-ids: the version of the state the
// tenant indexes hold (the document's _version there), and where it
// lives or, deleted, lived.
type record struct {
	Ver     int64  `json:"ver"`
	Tenant  string `json:"tenant"`
	Deleted bool   `json:"deleted"`
	Epoch   uint64 `json:"epoch"`
	Seq     uint64 `json:"seq"`
	At      int64  `json:"at"`
}

// held is a record as read, with what a compare-and-set needs.
type held struct {
	record
	found          bool
	seqNo, primary int64
}

func (h held) live() bool { return h.found && !h.Deleted }

// records reads the records of keys (realtime), keyed by _id.
func (b *Backend) records(ctx context.Context, keys []string) (map[string]held, error) {
	r, err := b.c.do(ctx, http.MethodPost, "/"+b.n.ids()+"/_mget", nil, map[string]any{"ids": keys})
	if err != nil {
		return nil, err
	}
	if r.status != http.StatusOK {
		return nil, failure(r)
	}
	var res struct {
		Docs []struct {
			ID      string          `json:"_id"`
			Found   bool            `json:"found"`
			SeqNo   int64           `json:"_seq_no"`
			Primary int64           `json:"_primary_term"`
			Source  record          `json:"_source"`
			Error   json.RawMessage `json:"error"`
		} `json:"docs"`
	}
	if err := json.Unmarshal(r.body, &res); err != nil {
		return nil, fmt.Errorf("%w: unreadable records: %v", spi.ErrUnavailable, err)
	}
	out := make(map[string]held, len(res.Docs))
	for _, d := range res.Docs {
		if len(d.Error) > 0 {
			return nil, fmt.Errorf("%w: reading a record failed", spi.ErrUnavailable)
		}
		if d.Found {
			out[d.ID] = held{record: d.Source, found: true, seqNo: d.SeqNo, primary: d.Primary}
		}
	}
	return out, nil
}

// bulkLine appends one bulk action (and its document, unless nil).
func bulkLine(buf *bytes.Buffer, action, index, id string, version int64, versionType string, doc any) {
	meta := map[string]any{action: map[string]any{"_index": index, "_id": id, "version": version, "version_type": versionType}}
	enc := json.NewEncoder(buf)
	_ = enc.Encode(meta) // maps of strings and numbers: cannot fail
	if doc != nil {
		_ = enc.Encode(doc)
	}
}

// bulk sends a bulk request and classifies its items: a version conflict
// (a newer state is there) and deleting what is gone are fine; 429 is
// overload, 400 a document the index cannot hold (the applier bisects
// and skips it), anything else unavailability.
func (b *Backend) bulk(ctx context.Context, body []byte, refresh string) error {
	_, err := b.bulkStatuses(ctx, body, refresh)
	return err
}

// bulkStatuses is bulk that also returns each item's status, in order.
func (b *Backend) bulkStatuses(ctx context.Context, body []byte, refresh string) ([]int, error) {
	var q url.Values
	if refresh != "" {
		q = url.Values{"refresh": {refresh}}
	}
	r, err := b.c.do(ctx, http.MethodPost, "/_bulk", q, body)
	if err != nil {
		return nil, err
	}
	if r.status != http.StatusOK {
		return nil, failure(r)
	}
	var res struct {
		Items []map[string]struct {
			Status int        `json:"status"`
			Error  *itemError `json:"error"`
		} `json:"items"`
	}
	if err := json.Unmarshal(r.body, &res); err != nil {
		return nil, fmt.Errorf("%w: unreadable bulk answer: %v", spi.ErrUnavailable, err)
	}
	statuses := make([]int, len(res.Items))
	var errs []error
	for i, it := range res.Items {
		for action, o := range it {
			statuses[i] = o.Status
			switch {
			case o.Status < 300:
			case o.Status == http.StatusConflict:
			case o.Status == http.StatusNotFound && action == "delete":
			default:
				errs = append(errs, itemFailure(o.Status, o.Error))
			}
		}
	}
	return statuses, firstByClass(errs)
}

// firstByClass returns one error for a bulk's failed items, the most
// telling: unavailable (the cluster is sick) before overloaded before
// invalid (only the documents are at fault).
func firstByClass(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	var over, invalid error
	for _, e := range errs {
		switch {
		case errors.Is(e, spi.ErrOverloaded):
			over = e
		case errors.Is(e, spi.ErrInvalidQuery):
			invalid = e
		default:
			return fmt.Errorf("%d item(s) failed: %w", len(errs), e)
		}
	}
	if over != nil {
		return fmt.Errorf("%d item(s) failed: %w", len(errs), over)
	}
	return fmt.Errorf("%d item(s) failed: %w", len(errs), invalid)
}

// AppliedSeq implements spi.ChangeApplier.
func (b *Backend) AppliedSeq(ctx context.Context, log string) (uint64, error) {
	if err := b.live(); err != nil {
		return 0, err
	}
	v, found, err := b.getVersion(ctx, "cp:"+logKey(log))
	if err != nil || !found {
		return 0, wrapErr("applied seq", err)
	}
	return uint64(v), nil
}

// getVersion reads a <prefix>-meta document's _version (realtime).
func (b *Backend) getVersion(ctx context.Context, id string) (int64, bool, error) {
	r, err := b.c.do(ctx, http.MethodGet, "/"+b.n.meta()+"/_doc/"+url.PathEscape(id), nil, nil)
	if err != nil {
		return 0, false, err
	}
	if r.status == http.StatusNotFound {
		return 0, false, nil
	}
	if r.status != http.StatusOK {
		return 0, false, failure(r)
	}
	var d struct {
		Version int64 `json:"_version"`
	}
	if err := json.Unmarshal(r.body, &d); err != nil {
		return 0, false, fmt.Errorf("%w: unreadable answer: %v", spi.ErrUnavailable, err)
	}
	return d.Version, true, nil
}

func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("keyword/opensearch: %s: %w", op, err)
}

// Versions implements spi.ChangeApplier from the tenant indexes, sorted by
// the id field (byte order), as of the last refresh. A version of another
// log's epoch reads as 0.
func (b *Backend) Versions(ctx context.Context, log, after string, limit int) ([]spi.IDVersion, error) {
	if err := b.live(); err != nil {
		return nil, err
	}
	epoch, err := b.knownEpoch(ctx, log)
	if err != nil {
		return nil, wrapErr("versions", err)
	}
	var out []spi.IDVersion
	for len(out) < limit {
		size := min(limit-len(out), maxWindow)
		q := any(map[string]any{"match_all": map[string]any{}})
		if after != "" {
			q = map[string]any{"range": map[string]any{"id": map[string]any{"gt": after}}}
		}
		body := map[string]any{
			"size": size, "query": q, "version": true, "_source": []string{"id"},
			"sort": []any{map[string]any{"id": "asc"}}, "track_total_hits": false,
		}
		params := searchParams()
		params.Set("allow_partial_search_results", "false")
		r, err := b.c.do(ctx, http.MethodPost, "/"+b.n.tenantPattern()+"/_search", params, body)
		if err != nil {
			return nil, wrapErr("versions", err)
		}
		if r.status != http.StatusOK {
			return nil, wrapErr("versions", failure(r))
		}
		var res struct {
			Hits struct {
				Hits []hit `json:"hits"`
			} `json:"hits"`
		}
		if err := json.Unmarshal(r.body, &res); err != nil {
			return nil, fmt.Errorf("keyword/opensearch: versions: %w: %v", spi.ErrUnavailable, err)
		}
		for _, h := range res.Hits.Hits {
			e, seq := decodeVersion(h.Version)
			if e != epoch {
				seq = 0
			}
			if n := len(out); n > 0 && out[n-1].ID == h.Source.ID {
				out[n-1].Version = max(out[n-1].Version, seq) // an id in two tenants' indexes
				continue
			}
			out = append(out, spi.IDVersion{ID: h.Source.ID, Version: seq})
		}
		if len(res.Hits.Hits) < size {
			break
		}
		after = res.Hits.Hits[len(res.Hits.Hits)-1].Source.ID
	}
	return out, nil
}

// knownEpoch is log's epoch, 0 when it never applied here.
func (b *Backend) knownEpoch(ctx context.Context, log string) (uint64, error) {
	b.mu.Lock()
	e, ok := b.epochs[log]
	b.mu.Unlock()
	if ok {
		return e, nil
	}
	st, err := b.readEpoch(ctx, log)
	return st.epoch, err
}

// epochState is what <prefix>-meta says of a log's epoch.
type epochState struct {
	epoch, highest uint64 // the log's (0: none) and the highest handed out
	found          bool   // the log has a document
	seqNo, primary int64  // of the log's document, for compare-and-set
}

// readEpoch reads log's epoch and the highest epoch handed out (realtime).
func (b *Backend) readEpoch(ctx context.Context, log string) (epochState, error) {
	r, err := b.c.do(ctx, http.MethodPost, "/"+b.n.meta()+"/_mget", nil,
		map[string]any{"ids": []string{"log:" + logKey(log), "epochs"}})
	if err != nil {
		return epochState{}, err
	}
	if r.status != http.StatusOK {
		return epochState{}, failure(r)
	}
	var res struct {
		Docs []struct {
			Found   bool  `json:"found"`
			SeqNo   int64 `json:"_seq_no"`
			Primary int64 `json:"_primary_term"`
			Source  struct {
				Epoch uint64 `json:"epoch"`
				Next  uint64 `json:"next"`
			} `json:"_source"`
		} `json:"docs"`
	}
	if err := json.Unmarshal(r.body, &res); err != nil || len(res.Docs) != 2 {
		return epochState{}, fmt.Errorf("%w: unreadable epochs", spi.ErrUnavailable)
	}
	l := res.Docs[0]
	return epochState{epoch: l.Source.Epoch, highest: res.Docs[1].Source.Next, found: l.Found,
		seqNo: l.SeqNo, primary: l.Primary}, nil
}

// applyEpoch is the epoch log applies with: its own, or a new one when it
// has none or another log took one since. Replicas of one log racing here
// agree: the log's document is written compare-and-set, and a replica
// that loses takes the winner's epoch. Decided once per process and log.
func (b *Backend) applyEpoch(ctx context.Context, log string) (uint64, error) {
	b.mu.Lock()
	e, ok := b.epochs[log]
	b.mu.Unlock()
	if ok {
		return e, nil
	}
	lost := false // another replica of the log gave it an epoch: take it
	for attempt := 0; ; attempt++ {
		st, err := b.readEpoch(ctx, log)
		if err != nil {
			return 0, err
		}
		e = st.epoch
		if !st.found || e < st.highest && !lost {
			if attempt == 5 {
				return 0, fmt.Errorf("%w: the log's epoch keeps changing (replicas of several records on one index prefix?)", spi.ErrUnavailable)
			}
			next, err := b.nextEpoch(ctx)
			if err != nil {
				return 0, err
			}
			q := url.Values{"op_type": {"create"}}
			if st.found {
				q = url.Values{"if_seq_no": {strconv.FormatInt(st.seqNo, 10)}, "if_primary_term": {strconv.FormatInt(st.primary, 10)}}
			}
			w, err := b.c.do(ctx, http.MethodPut, "/"+b.n.meta()+"/_doc/log:"+logKey(log), q, map[string]any{"log": log, "epoch": next})
			if err != nil {
				return 0, err
			}
			if w.status == http.StatusConflict {
				lost = true
				continue
			}
			if w.status != http.StatusOK && w.status != http.StatusCreated {
				return 0, failure(w)
			}
			e = next
			b.cfg.Logger.Info("keyword/opensearch: a new epoch for the change log", "prefix", b.cfg.IndexPrefix, "epoch", e)
		}
		b.mu.Lock()
		b.epochs[log] = e
		b.mu.Unlock()
		return e, nil
	}
}

// nextEpoch takes the next epoch number, compare-and-set on the counter,
// so no two takers share one.
func (b *Backend) nextEpoch(ctx context.Context) (uint64, error) {
	path := "/" + b.n.meta() + "/_doc/epochs"
	for attempt := 0; ; attempt++ {
		r, err := b.c.do(ctx, http.MethodGet, path, nil, nil)
		if err != nil {
			return 0, err
		}
		var cur struct {
			SeqNo   int64 `json:"_seq_no"`
			Primary int64 `json:"_primary_term"`
			Source  struct {
				Next uint64 `json:"next"`
			} `json:"_source"`
		}
		q := url.Values{"op_type": {"create"}}
		switch r.status {
		case http.StatusOK:
			if err := json.Unmarshal(r.body, &cur); err != nil {
				return 0, fmt.Errorf("%w: unreadable epoch counter", spi.ErrUnavailable)
			}
			q = url.Values{"if_seq_no": {strconv.FormatInt(cur.SeqNo, 10)}, "if_primary_term": {strconv.FormatInt(cur.Primary, 10)}}
		case http.StatusNotFound:
		default:
			return 0, failure(r)
		}
		next := cur.Source.Next + 1
		if next >= 1<<(63-seqBits) {
			return 0, errors.New("keyword/opensearch: epochs exhausted: delete the prefix's indexes")
		}
		w, err := b.c.do(ctx, http.MethodPut, path, q, map[string]any{"next": next})
		if err != nil {
			return 0, err
		}
		if w.status == http.StatusConflict && attempt < 20 {
			continue // taken meanwhile
		}
		if w.status != http.StatusOK && w.status != http.StatusCreated {
			return 0, failure(w)
		}
		return next, nil
	}
}

// pruneTombstones deletes, at most every tombstoneAge, the records of
// deleted documents of this epoch below the checkpoint and older than
// tombstoneAge, as a background task of the cluster. Failures are logged:
// the next apply tries again later.
func (b *Backend) pruneTombstones(ctx context.Context, log string, epoch uint64) {
	now := b.cfg.Now()
	b.mu.Lock()
	last, ok := b.pruned[log]
	if ok && now.Sub(last) < tombstoneAge {
		b.mu.Unlock()
		return
	}
	b.pruned[log] = now
	b.mu.Unlock()
	if !ok {
		return // the first apply of this process: the next one after tombstoneAge prunes
	}
	cp, err := b.AppliedSeq(ctx, log)
	if err != nil {
		b.cfg.Logger.Warn("keyword/opensearch: pruning tombstones: reading the checkpoint failed", "err", err)
		return
	}
	q := map[string]any{"query": map[string]any{"bool": map[string]any{"filter": []any{
		map[string]any{"term": map[string]any{"deleted": true}},
		map[string]any{"term": map[string]any{"epoch": epoch}},
		map[string]any{"range": map[string]any{"seq": map[string]any{"lte": cp}}},
		map[string]any{"range": map[string]any{"at": map[string]any{"lt": now.Add(-tombstoneAge).UnixMilli()}}},
	}}}}
	r, err := b.c.do(ctx, http.MethodPost, "/"+b.n.ids()+"/_delete_by_query",
		url.Values{"conflicts": {"proceed"}, "wait_for_completion": {"false"}}, q)
	if err == nil && r.status != http.StatusOK {
		err = failure(r)
	}
	if err != nil {
		b.cfg.Logger.Warn("keyword/opensearch: pruning tombstones failed", "err", err)
	}
}
