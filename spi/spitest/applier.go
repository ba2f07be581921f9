package spitest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/ragd/ragd/spi"
)

// AppliedStore is what the applier contract exercises: a derived store
// that applies the change log and serves the documents it holds.
type AppliedStore interface {
	spi.ChangeApplier
	spi.Hydrator
}

// TestChangeApplier runs the spi.ChangeApplier contract. open returns a new
// store and registers its cleanup with t; ids gives the test's document ids
// a prefix so that stores shared between tests (a Neo4j server) keep runs
// apart.
func TestChangeApplier(t *testing.T, open func(t *testing.T) AppliedStore) {
	s := &applierSuite{open: open}
	t.Run("ApplyAndCheckpoint", s.testApply)
	t.Run("NeverOlder", s.testNeverOlder)
	t.Run("Tombstones", s.testTombstones)
	t.Run("LaterChangeInBatchWins", s.testLaterWins)
	t.Run("Idempotent", s.testIdempotent)
	t.Run("OtherLog", s.testOtherLog)
	t.Run("VersionsInPages", s.testVersionsInPages)
}

type applierSuite struct {
	open func(t *testing.T) AppliedStore
}

// run gives one subtest a fresh log id and id prefix.
type applierRun struct {
	st     AppliedStore
	log    string
	prefix string
}

func (s *applierSuite) start(t *testing.T) *applierRun {
	var b [6]byte
	_, _ = rand.Read(b[:])
	tag := hex.EncodeToString(b[:])
	return &applierRun{st: s.open(t), log: "log-" + tag, prefix: "ap-" + tag + "-"}
}

func (r *applierRun) id(s string) string { return r.prefix + s }

func (r *applierRun) upsert(seq uint64, id, text string) spi.Change {
	d := spi.Document{ID: r.id(id), Tenant: r.prefix, Title: id, Text: text,
		Entities: []string{"entity " + text}, UpdatedAt: time.Unix(1700000000, 0).UTC()}
	return spi.Change{Seq: seq, Op: spi.OpUpsert, ID: d.ID, Doc: &d, Version: seq, At: time.Now()}
}

func (r *applierRun) tombstone(seq uint64, id string) spi.Change {
	return spi.Change{Seq: seq, Op: spi.OpDelete, ID: r.id(id), Version: seq, At: time.Now()}
}

func (r *applierRun) apply(t *testing.T, through uint64, cs ...spi.Change) {
	t.Helper()
	if err := r.st.ApplyChanges(context.Background(), r.log, cs, through); err != nil {
		t.Fatalf("ApplyChanges(through %d): %v", through, err)
	}
}

// texts returns id (without prefix) -> text of the given ids the store holds.
func (r *applierRun) texts(t *testing.T, ids ...string) map[string]string {
	t.Helper()
	full := make([]string, len(ids))
	for i, id := range ids {
		full[i] = r.id(id)
	}
	docs, _, err := r.st.Hydrate(context.Background(), full)
	if err != nil {
		t.Fatalf("Hydrate: %v", err)
	}
	out := map[string]string{}
	for _, d := range docs {
		out[d.ID[len(r.prefix):]] = d.Text
	}
	return out
}

func (r *applierRun) versions(t *testing.T) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	err := spi.AllVersions(context.Background(), r.st, r.log, 2, func(id string, v uint64) error {
		if len(id) > len(r.prefix) && id[:len(r.prefix)] == r.prefix {
			out[id[len(r.prefix):]] = v
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Versions: %v", err)
	}
	return out
}

func (r *applierRun) applied(t *testing.T) uint64 {
	t.Helper()
	seq, err := r.st.AppliedSeq(context.Background(), r.log)
	if err != nil {
		t.Fatalf("AppliedSeq: %v", err)
	}
	return seq
}

func (s *applierSuite) testApply(t *testing.T) {
	r := s.start(t)
	if seq := r.applied(t); seq != 0 {
		t.Fatalf("a new store's AppliedSeq = %d, want 0", seq)
	}
	r.apply(t, 3, r.upsert(1, "a", "alpha"), r.upsert(2, "b", "beta"), r.upsert(3, "c", "gamma"))
	if got, want := r.texts(t, "a", "b", "c"), map[string]string{"a": "alpha", "b": "beta", "c": "gamma"}; !maps.Equal(got, want) {
		t.Fatalf("after apply the store holds %v, want %v", got, want)
	}
	if seq := r.applied(t); seq != 3 {
		t.Fatalf("AppliedSeq = %d, want 3", seq)
	}
	if got, want := r.versions(t), map[string]uint64{"a": 1, "b": 2, "c": 3}; !maps.Equal(got, want) {
		t.Fatalf("Versions = %v, want %v", got, want)
	}
	// An empty batch moves the checkpoint; a lower one never moves it back.
	r.apply(t, 9)
	r.apply(t, 5)
	if seq := r.applied(t); seq != 9 {
		t.Fatalf("AppliedSeq = %d after applying through 9 then 5, want 9", seq)
	}
}

func (s *applierSuite) testNeverOlder(t *testing.T) {
	r := s.start(t)
	r.apply(t, 5, r.upsert(5, "a", "new"))
	r.apply(t, 6, r.upsert(3, "a", "old"))
	if got := r.texts(t, "a"); got["a"] != "new" {
		t.Fatalf("an older version replaced a newer one: a = %q", got["a"])
	}
	if v := r.versions(t)["a"]; v != 5 {
		t.Fatalf("version of a = %d, want 5", v)
	}
	r.apply(t, 7, r.upsert(7, "a", "newer"))
	if got := r.texts(t, "a"); got["a"] != "newer" {
		t.Fatalf("a newer version was not applied: a = %q", got["a"])
	}
}

func (s *applierSuite) testTombstones(t *testing.T) {
	r := s.start(t)
	r.apply(t, 2, r.upsert(2, "a", "alpha"))
	r.apply(t, 5, r.tombstone(5, "a"))
	if got := r.texts(t, "a"); len(got) != 0 {
		t.Fatalf("after the delete the store still holds %v", got)
	}
	if _, ok := r.versions(t)["a"]; ok {
		t.Fatal("Versions lists a deleted document")
	}
	// A late upsert older than the delete must not bring it back.
	r.apply(t, 6, r.upsert(4, "a", "ghost"))
	if got := r.texts(t, "a"); len(got) != 0 {
		t.Fatalf("an upsert older than the tombstone revived the document: %v", got)
	}
	r.apply(t, 8, r.upsert(8, "a", "reborn"))
	if got := r.texts(t, "a"); got["a"] != "reborn" {
		t.Fatalf("an upsert newer than the tombstone was not applied: %v", got)
	}
}

func (s *applierSuite) testLaterWins(t *testing.T) {
	r := s.start(t)
	r.apply(t, 4, r.upsert(3, "a", "first"), r.upsert(4, "a", "second"), r.upsert(1, "b", "b"), r.tombstone(2, "b"))
	if got, want := r.texts(t, "a", "b"), map[string]string{"a": "second"}; !maps.Equal(got, want) {
		t.Fatalf("store holds %v, want %v", got, want)
	}
}

func (s *applierSuite) testIdempotent(t *testing.T) {
	r := s.start(t)
	batch := []spi.Change{r.upsert(1, "a", "alpha"), r.upsert(2, "b", "beta"), r.tombstone(3, "b")}
	r.apply(t, 3, batch...)
	r.apply(t, 3, batch...)
	if got, want := r.texts(t, "a", "b"), map[string]string{"a": "alpha"}; !maps.Equal(got, want) {
		t.Fatalf("after applying a batch twice the store holds %v, want %v", got, want)
	}
	if got, want := r.versions(t), map[string]uint64{"a": 1}; !maps.Equal(got, want) {
		t.Fatalf("Versions = %v, want %v", got, want)
	}
}

func (s *applierSuite) testOtherLog(t *testing.T) {
	r := s.start(t)
	r.apply(t, 50, r.upsert(50, "a", "from log one"))
	other := &applierRun{st: r.st, log: r.log + "-other", prefix: r.prefix}
	if seq := other.applied(t); seq != 0 {
		t.Fatalf("AppliedSeq of another log = %d, want 0", seq)
	}
	// Versions of another record mean nothing here: a low version of the
	// new log must apply.
	other.apply(t, 2, other.upsert(2, "a", "from log two"))
	if got := other.texts(t, "a"); got["a"] != "from log two" {
		t.Fatalf("a change of a new log was not applied: %v", got)
	}
	if seq := other.applied(t); seq != 2 {
		t.Fatalf("AppliedSeq = %d, want 2", seq)
	}
	if v := other.versions(t)["a"]; v != 2 {
		t.Fatalf("version under the new log = %d, want 2", v)
	}
}

func (s *applierSuite) testVersionsInPages(t *testing.T) {
	r := s.start(t)
	r.apply(t, 6, r.upsert(1, "c", "c"), r.upsert(2, "a", "a"), r.upsert(3, "e", "e"), r.upsert(4, "b", "b"), r.upsert(5, "d", "d"), r.tombstone(6, "d"))
	var got []string
	after := r.prefix // every id of this run sorts after its prefix
	for range 10 {
		page, err := r.st.Versions(context.Background(), r.log, after, 2)
		if err != nil {
			t.Fatalf("Versions: %v", err)
		}
		var mine []string
		for _, p := range page {
			if len(p.ID) > len(r.prefix) && p.ID[:len(r.prefix)] == r.prefix {
				mine = append(mine, p.ID[len(r.prefix):]+fmt.Sprint(p.Version))
			}
		}
		got = append(got, fmt.Sprint(mine))
		if len(page) < 2 || len(mine) < len(page) {
			break
		}
		after = page[len(page)-1].ID
	}
	if want := "[[a2 b4] [c1 e3] []]"; fmt.Sprint(got) != want && fmt.Sprint(got) != "[[a2 b4] [c1 e3]]" {
		t.Fatalf("pages of 2 = %v, want %s (ascending ids after the last of the previous page, deleted ones left out)", got, want)
	}
}
