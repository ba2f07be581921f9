package spitest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/spi"
)

// RecordStore is what the change-log contract exercises: a system of
// record with its log.
type RecordStore interface {
	spi.ChangeLog
	spi.Hydrator
}

// TestChangeLog runs the spi.ChangeLog contract. open returns a new, empty
// store of vectors of dimension dim and registers its cleanup with t.
func TestChangeLog(t *testing.T, dim int, open func(t *testing.T) RecordStore) {
	s := &logSuite{dim: dim, open: open}
	t.Run("CommitAndRead", s.testCommitAndRead)
	t.Run("UnchangedUpsert", s.testUnchanged)
	t.Run("Tenants", s.testTenants)
	t.Run("Deletes", s.testDeletes)
	t.Run("VersionsAndCurrent", s.testVersions)
	t.Run("Compact", s.testCompact)
	t.Run("CommitOrder", s.testCommitOrder)
	t.Run("DocCount", s.testDocCount)
}

type logSuite struct {
	dim  int
	open func(t *testing.T) RecordStore
}

func (s *logSuite) doc(id, tenant, text string) spi.Document {
	v := make([]float32, s.dim)
	for i := range v {
		v[i] = float32(len(text)%7+i) + 1
	}
	return spi.Document{ID: id, Tenant: tenant, Text: text, Vector: v}
}

func commit(t *testing.T, st RecordStore, ws ...spi.Write) []spi.WriteResult {
	t.Helper()
	out, err := st.Commit(context.Background(), ws)
	if err != nil {
		t.Fatalf("Commit(%d writes): %v", len(ws), err)
	}
	if len(out) != len(ws) {
		t.Fatalf("Commit returned %d outcomes for %d writes", len(out), len(ws))
	}
	return out
}

func up(d spi.Document) spi.Write { return spi.Write{Op: spi.OpUpsert, Doc: d, KeepTenant: true} }
func del(id, scope string) spi.Write {
	return spi.Write{Op: spi.OpDelete, Doc: spi.Document{ID: id}, Scope: scope}
}

func changes(t *testing.T, st RecordStore, after uint64) []spi.Change {
	t.Helper()
	cs, err := st.Changes(context.Background(), after, 1000)
	if err != nil {
		t.Fatalf("Changes(%d): %v", after, err)
	}
	return cs
}

func logState(t *testing.T, st RecordStore) spi.LogState {
	t.Helper()
	ls, err := st.LogState(context.Background())
	if err != nil {
		t.Fatalf("LogState: %v", err)
	}
	return ls
}

func (s *logSuite) testCommitAndRead(t *testing.T) {
	st := s.open(t)
	if ls := logState(t, st); ls.ID == "" || ls.First != 0 || ls.Last != 0 {
		t.Fatalf("empty log state = %+v, want an id and no entries", ls)
	}
	out := commit(t, st, up(s.doc("a", "t1", "alpha")), up(s.doc("b", "t1", "beta")))
	for i, o := range out {
		if o.Err != nil || !o.Changed || o.Version == 0 {
			t.Fatalf("outcome %d = %+v, want a changed write with a version", i, o)
		}
	}
	if out[1].Version <= out[0].Version {
		t.Fatalf("versions %d then %d: not increasing", out[0].Version, out[1].Version)
	}
	out2 := commit(t, st, up(s.doc("a", "t1", "alpha two")))
	if out2[0].Version <= out[1].Version {
		t.Fatalf("a later commit got version %d, not above %d", out2[0].Version, out[1].Version)
	}
	cs := changes(t, st, 0)
	if len(cs) != 3 {
		t.Fatalf("Changes(0) = %d entries, want 3", len(cs))
	}
	want := []uint64{out[0].Version, out[1].Version, out2[0].Version}
	for i, c := range cs {
		if c.Seq != want[i] || c.Op != spi.OpUpsert || c.At.IsZero() {
			t.Fatalf("entry %d = seq %d op %v at %v, want seq %d, an upsert with a time", i, c.Seq, c.Op, c.At, want[i])
		}
		if c.Doc == nil {
			t.Fatalf("entry %d (%s) has no current document", i, c.ID)
		}
	}
	// Entry 1 wrote "a" in an older version: it carries the current one.
	if cs[0].ID != "a" || cs[0].Doc.Text != "alpha two" || cs[0].Version != out2[0].Version {
		t.Fatalf("entry 1 = %s %q v%d, want a's current state %q v%d", cs[0].ID, cs[0].Doc.Text, cs[0].Version, "alpha two", out2[0].Version)
	}
	if got := changes(t, st, cs[1].Seq); len(got) != 1 || got[0].Seq != cs[2].Seq {
		t.Fatalf("Changes(after %d) = %v, want only entry %d", cs[1].Seq, seqs(got), cs[2].Seq)
	}
	if got, err := st.Changes(context.Background(), 0, 2); err != nil || len(got) != 2 {
		t.Fatalf("Changes(limit 2) = %d entries, %v", len(got), err)
	}
	if ls := logState(t, st); ls.First != cs[0].Seq || ls.Last != cs[2].Seq {
		t.Fatalf("log state = %+v, want first %d last %d", ls, cs[0].Seq, cs[2].Seq)
	}
}

func seqs(cs []spi.Change) []uint64 {
	out := make([]uint64, len(cs))
	for i, c := range cs {
		out[i] = c.Seq
	}
	return out
}

func (s *logSuite) testUnchanged(t *testing.T) {
	st := s.open(t)
	d := s.doc("a", "", "alpha")
	first := commit(t, st, up(d))[0]
	d.UpdatedAt = time.Now().Add(time.Hour) // not part of the content
	again := commit(t, st, up(d))[0]
	if again.Err != nil || again.Changed || again.Version != first.Version {
		t.Fatalf("identical upsert = %+v, want unchanged at version %d", again, first.Version)
	}
	if n := len(changes(t, st, 0)); n != 1 {
		t.Fatalf("identical upsert appended: %d entries, want 1", n)
	}
	d.Metadata = spi.Strings(map[string]string{"k": "v"})
	if o := commit(t, st, up(d))[0]; !o.Changed || o.Version <= first.Version {
		t.Fatalf("changed upsert = %+v, want a new version", o)
	}
}

func (s *logSuite) testTenants(t *testing.T) {
	st := s.open(t)
	commit(t, st, up(s.doc("x", "acme", "owned by acme")))
	out := commit(t, st, up(s.doc("x", "globex", "taken over")), up(s.doc("y", "globex", "fresh")))
	if !errors.Is(out[0].Err, spi.ErrTenantConflict) || out[0].Changed {
		t.Fatalf("upsert of another tenant's id = %+v, want ErrTenantConflict", out[0])
	}
	if out[1].Err != nil || !out[1].Changed {
		t.Fatalf("the other document of the batch = %+v, want written", out[1])
	}
	docs, _, err := st.Hydrate(context.Background(), []string{"x"})
	if err != nil || len(docs) != 1 || docs[0].Tenant != "acme" || docs[0].Text != "owned by acme" {
		t.Fatalf("x after the conflict = %+v, %v; want acme's document unchanged", docs, err)
	}
	// A scoped upsert must carry its scope's tenant.
	w := up(s.doc("z", "acme", "z"))
	w.Scope = "globex"
	if o := commit(t, st, w)[0]; !errors.Is(o.Err, spi.ErrTenantConflict) {
		t.Fatalf("upsert outside its scope = %+v, want ErrTenantConflict", o)
	}
	// Without KeepTenant a document may move (spi.Indexer.Upsert).
	move := spi.Write{Op: spi.OpUpsert, Doc: s.doc("x", "globex", "moved")}
	if o := commit(t, st, move)[0]; o.Err != nil || !o.Changed {
		t.Fatalf("unguarded move = %+v, want written", o)
	}
}

func (s *logSuite) testDeletes(t *testing.T) {
	st := s.open(t)
	commit(t, st, up(s.doc("a", "acme", "a")), up(s.doc("b", "acme", "b")))
	out := commit(t, st, del("a", "globex"), del("missing", ""), del("b", "acme"))
	if !errors.Is(out[0].Err, spi.ErrNotFound) || out[0].Changed {
		t.Fatalf("delete outside scope = %+v, want ErrNotFound", out[0])
	}
	if !errors.Is(out[1].Err, spi.ErrNotFound) || out[1].Changed {
		t.Fatalf("delete of a missing id = %+v, want ErrNotFound", out[1])
	}
	if out[2].Err != nil || !out[2].Changed || out[2].Version == 0 {
		t.Fatalf("delete = %+v, want changed with a version", out[2])
	}
	cs := changes(t, st, 0)
	if len(cs) != 3 {
		t.Fatalf("log has %d entries, want 3 (two upserts, one delete)", len(cs))
	}
	last := cs[2]
	if last.Op != spi.OpDelete || last.ID != "b" || last.Doc != nil || last.Version < last.Seq {
		t.Fatalf("delete entry = %+v, want a tombstone for b with version >= seq", last)
	}
	if cs[1].ID != "b" || cs[1].Doc != nil {
		t.Fatalf("b's upsert entry carries %+v, want the current state (deleted)", cs[1].Doc)
	}
	if docs, missing, err := st.Hydrate(context.Background(), []string{"a", "b"}); err != nil || len(docs) != 1 || !slices.Equal(missing, []string{"b"}) {
		t.Fatalf("Hydrate after delete = %d docs, missing %v, %v", len(docs), missing, err)
	}
}

func (s *logSuite) testVersions(t *testing.T) {
	st := s.open(t)
	out := commit(t, st, up(s.doc("c", "", "c")), up(s.doc("a", "", "a")), up(s.doc("b", "", "b")))
	commit(t, st, del("b", ""))
	var got []string
	err := st.Versions(context.Background(), func(id string, v uint64) error {
		got = append(got, fmt.Sprintf("%s@%d", id, v))
		return nil
	})
	want := []string{fmt.Sprintf("a@%d", out[1].Version), fmt.Sprintf("c@%d", out[0].Version)}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("Versions = %v, %v; want %v", got, err, want)
	}
	cur, err := st.Current(context.Background(), []string{"a", "b"})
	if err != nil || len(cur) != 2 {
		t.Fatalf("Current = %v, %v", cur, err)
	}
	if cur[0].Doc == nil || cur[0].Version != out[1].Version {
		t.Fatalf("Current(a) = %+v, want the document at version %d", cur[0], out[1].Version)
	}
	if ls := logState(t, st); cur[1].Doc != nil || cur[1].Version < ls.Last {
		t.Fatalf("Current(b) = %+v, want no document and a tombstone version >= %d", cur[1], ls.Last)
	}
}

func (s *logSuite) testCompact(t *testing.T) {
	st := s.open(t)
	for i := range 5 {
		commit(t, st, up(s.doc(fmt.Sprintf("d%d", i), "", fmt.Sprint(i))))
	}
	cs := changes(t, st, 0)
	ctx := context.Background()
	if n, err := st.CompactLog(ctx, time.Now().Add(-time.Hour), cs[4].Seq); err != nil || n != 0 {
		t.Fatalf("compacting entries older than an hour removed %d, %v; want 0", n, err)
	}
	n, err := st.CompactLog(ctx, time.Now().Add(time.Hour), cs[2].Seq)
	if err != nil || n != 3 {
		t.Fatalf("CompactLog(upTo %d) removed %d, %v; want 3", cs[2].Seq, n, err)
	}
	if got := changes(t, st, 0); !slices.Equal(seqs(got), seqs(cs[3:])) {
		t.Fatalf("after compaction the log holds %v, want %v", seqs(got), seqs(cs[3:]))
	}
	if ls := logState(t, st); ls.Compacted != cs[2].Seq || ls.First != cs[3].Seq {
		t.Fatalf("log state after compaction = %+v, want Compacted %d and First %d", ls, cs[2].Seq, cs[3].Seq)
	}
	if _, err := st.CompactLog(ctx, time.Now().Add(time.Hour), cs[4].Seq); err != nil {
		t.Fatal(err)
	}
	if ls := logState(t, st); ls.Last != cs[4].Seq || ls.Compacted != cs[3].Seq {
		t.Fatalf("after compacting everything, Last = %d and Compacted = %d, want %d and %d (the newest entry stays)", ls.Last, ls.Compacted, cs[4].Seq, cs[3].Seq)
	}
}

// testCommitOrder checks the promise appliers rely on: once a reader has
// seen entry n, no entry below n appears later.
func (s *logSuite) testCommitOrder(t *testing.T) {
	st := s.open(t)
	ctx := context.Background()
	const writers, each = 4, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("w%d-%d", w, i%5)
				if _, err := st.Commit(ctx, []spi.Write{up(s.doc(id, "", fmt.Sprint(i)))}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var reads [][]uint64
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		cs, err := st.Changes(ctx, 0, 10000)
		if err != nil {
			t.Fatal(err)
		}
		reads = append(reads, seqs(cs))
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	final := seqs(changes(t, st, 0))
	if len(final) != writers*each {
		t.Fatalf("log has %d entries, want %d", len(final), writers*each)
	}
	for _, r := range reads {
		if len(r) == 0 {
			continue
		}
		top := r[len(r)-1]
		var below []uint64
		for _, q := range final {
			if q <= top {
				below = append(below, q)
			}
		}
		if !slices.Equal(r, below) {
			t.Fatalf("a reader saw %d entries up to %d, but %d entries up to it were committed eventually: an entry appeared behind a reader", len(r), top, len(below))
		}
	}
}

// testDocCount: a record store that counts (spi.DocCounter) counts every
// tenant's documents, deleted ones not included.
func (s *logSuite) testDocCount(t *testing.T) {
	st := s.open(t)
	c, ok := st.(spi.DocCounter)
	if !ok {
		t.Skipf("%T does not count its documents", st)
	}
	commit(t, st, up(s.doc("a", "acme", "a")), up(s.doc("b", "globex", "b")), up(s.doc("c", "", "c")))
	commit(t, st, del("b", "globex"))
	if n, err := c.DocCount(context.Background()); err != nil || n != 2 {
		t.Fatalf("DocCount = %d, %v; want 2 (3 written, 1 deleted)", n, err)
	}
}
