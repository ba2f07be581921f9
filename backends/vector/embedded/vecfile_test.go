package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ragd/ragd/spi"
)

func vfDocs(r *rand.Rand, n, dim int, prefix string) []spi.Document {
	docs := make([]spi.Document, n)
	for i := range docs {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		docs[i] = spi.Document{ID: fmt.Sprintf("%s%05d", prefix, i), Tenant: "t", Text: "text", Vector: v,
			Metadata: spi.Metadata{"k": spi.String(fmt.Sprint(i % 3))}}
	}
	return docs
}

func vfOpen(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{Dir: dir, Dimension: 8, NoSync: true, ANN: ANN{MinRows: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// checkVectorFile checks the invariant written beside vectorFile, of the
// current generation, and that the file at the path is that generation's.
func checkVectorFile(v *vectorFile) error {
	v.mu.RLock()
	defer v.mu.RUnlock()
	g := v.cur
	st, err := g.f.Stat()
	if err != nil {
		return err
	}
	if st.Size() != int64(len(g.vids))*v.entry {
		return fmt.Errorf("file of %d bytes for %d entries of %d", st.Size(), len(g.vids), v.entry)
	}
	if pst, err := os.Stat(v.path); err != nil || !os.SameFile(st, pst) {
		return fmt.Errorf("the current generation is not the file at %s (%v)", v.path, err)
	}
	for i, vid := range g.vids {
		if i > 0 && vid <= g.vids[i-1] {
			return fmt.Errorf("vid %d after %d", vid, g.vids[i-1])
		}
		if vid >= v.next {
			return fmt.Errorf("vid %d, next %d", vid, v.next)
		}
	}
	return nil
}

// entries is the number of entries of the current vectors file.
func entries(s *Store) int {
	s.vecs.mu.RLock()
	defer s.vecs.mu.RUnlock()
	return len(s.vecs.cur.vids)
}

// sameDocs fails unless s holds exactly docs, vectors bit for bit.
func sameDocs(t *testing.T, s *Store, docs []spi.Document) {
	t.Helper()
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	got, missing, err := s.Hydrate(context.Background(), ids)
	if err != nil || len(missing) > 0 {
		t.Fatalf("Hydrate: %v, missing %v", err, missing)
	}
	for i, d := range got {
		if !slices.Equal(d.Vector, docs[i].Vector) || d.Text != docs[i].Text || d.Tenant != docs[i].Tenant {
			t.Fatalf("%s came back as %+v, want %+v", d.ID, d, docs[i])
		}
	}
	if n := s.Len(); n != len(docs) {
		t.Fatalf("%d documents, want %d", n, len(docs))
	}
	if err := checkVectorFile(s.vecs); err != nil {
		t.Fatal(err)
	}
}

// The vectors are in the vectors file, and the records name them: a
// replaced document's vector is the new one, across a reopen; the
// garbage of replaced vectors is compacted away at Open once it
// outnumbers the live entries, and the documents keep their vectors
// (here the background compaction is off: compact_test.go tests it).
func TestVectorFileRoundTripAndCompaction(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 1))
	dir := t.TempDir()
	s := vfOpen(t, dir)
	noOnlineCompaction(s)
	docs := vfDocs(r, 1500, 8, "d")
	if err := s.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	for range 2 { // two rewrites: 4,500 entries, 1,500 live
		docs = vfDocs(r, 1500, 8, "d")
		if err := s.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	sameDocs(t, s, docs)
	if n := entries(s); n != 4500 {
		t.Fatalf("%d entries before compaction, want 4500", n)
	}
	rec := func(s *Store) []byte {
		var out []byte
		_ = s.db.View(func(tx *bolt.Tx) error {
			out = slices.Clone(tx.Bucket(bucketDocs).Get([]byte("d00007")))
			return nil
		})
		return out
	}
	if v := rec(s)[0]; v != recordVid {
		t.Fatalf("record version %d, want %d", v, recordVid)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = vfOpen(t, dir)
	sameDocs(t, s, docs)
	if n := entries(s); n != 1500 {
		t.Fatalf("%d entries after compaction, want 1500", n)
	}
	// Writes after a compaction, and another reopen.
	more := vfDocs(r, 100, 8, "e")
	if err := s.Upsert(ctx, more); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = vfOpen(t, dir)
	sameDocs(t, s, append(slices.Clone(docs), more...))
}

// A crash after a commit's vectors were appended and synced but before
// its bbolt transaction (simulated: the entries are appended, the
// transaction never runs) leaves entries no record names: Open ignores
// them, and later writes get other vids. A crash in the middle of an
// append (a torn last entry) is cut off at Open.
func TestVectorFileCrashLeftovers(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(2, 2))
	dir := t.TempDir()
	s := vfOpen(t, dir)
	docs := vfDocs(r, 50, 8, "d")
	if err := s.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	lost := vfDocs(r, 5, 8, "lost")
	var vecs [][]float32
	for _, d := range lost {
		vecs = append(vecs, d.Vector)
	}
	if _, err := s.vecs.appendVectors(vecs); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A torn entry after them.
	f, err := os.OpenFile(filepath.Join(dir, VectorFileName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s = vfOpen(t, dir)
	sameDocs(t, s, docs)
	if _, missing, _ := s.Hydrate(ctx, []string{"lost00000"}); len(missing) != 1 {
		t.Fatal("a document whose commit never ran is there")
	}
	if n := entries(s); n != 55 {
		t.Fatalf("%d entries, want 55 (the torn one cut)", n)
	}
	more := vfDocs(r, 10, 8, "e")
	if err := s.Upsert(ctx, more); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = vfOpen(t, dir)
	sameDocs(t, s, append(slices.Clone(docs), more...))
}

// A vector entry that no longer matches its checksum fails Open with
// ErrCorrupt naming the record; a record naming an entry the file lacks
// too.
func TestVectorFileCorrupt(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 3))
	for _, damage := range []string{"flip", "truncate"} {
		t.Run(damage, func(t *testing.T) {
			dir := t.TempDir()
			s := vfOpen(t, dir)
			if err := s.Upsert(ctx, vfDocs(r, 20, 8, "d")); err != nil {
				t.Fatal(err)
			}
			entry := s.vecs.entry
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, VectorFileName)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			switch damage {
			case "flip":
				b[3*entry+12] ^= 0x40
			case "truncate":
				b = b[:10*entry]
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = Open(ctx, Config{Dir: dir, Dimension: 8, NoSync: true})
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open of a damaged vectors file: %v, want ErrCorrupt", err)
			}
		})
	}
}

// A file written before the vectors file existed holds its vectors in
// its records (version 1): such records still load, hydrate and search,
// beside version 2 records written since.
func TestVectorFileReadsInlineRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := vfOpen(t, dir)
	if err := s.Upsert(ctx, []spi.Document{{ID: "new", Vector: []float32{0, 1, 0, 0, 0, 0, 0, 0}}}); err != nil {
		t.Fatal(err)
	}
	old := spi.Document{ID: "old", Tenant: "t", Title: "kept", Metadata: spi.Metadata{"a": spi.String("b")},
		Vector: []float32{1, 0.5, 0, 0, 0, 0, 0, 0.25}}
	err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketDocs).Put([]byte(old.ID), inlineRecord(t, old))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = vfOpen(t, dir)
	docs, missing, err := s.Hydrate(ctx, []string{"old", "new"})
	if err != nil || len(missing) > 0 || !slices.Equal(docs[0].Vector, old.Vector) || docs[0].Title != "kept" || !docs[0].Metadata["a"].Equal(spi.String("b")) {
		t.Fatalf("Hydrate = %+v, %v, %v", docs, missing, err)
	}
	refs, err := s.Retrieve(ctx, spi.VectorRequest{Vector: []float32{1, 0, 0, 0, 0, 0, 0, 0}, K: 1})
	if err != nil || len(refs) != 1 || refs[0].ID != "old" {
		t.Fatalf("Retrieve = %v, %v", refs, err)
	}
}

// inlineRecord encodes d as the version 1 record of earlier stores.
func inlineRecord(t *testing.T, d spi.Document) []byte {
	t.Helper()
	rec, err := encodeRecord(&d)
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte{recordInline}, rec.head[1:]...)
	for _, x := range d.Vector {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(x))
	}
	return append(out, rec.body...)
}

// A document whose metadata values are all strings is written as a
// version 2 record, one with a typed value as version 3; after a reopen
// (every record decoded again, the postings rebuilt from them) both read
// back their metadata as written, and a range filter over the typed value
// finds its document through the postings.
func TestRecordVersions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := vfOpen(t, dir)
	when := spi.MustTime(time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC))
	docs := []spi.Document{
		{ID: "str", Tenant: "t", Vector: []float32{1, 0, 0, 0, 0, 0, 0, 0},
			Metadata: spi.Metadata{"k": spi.String("3")}},
		{ID: "typed", Tenant: "t", Vector: []float32{0, 1, 0, 0, 0, 0, 0, 0},
			Metadata: spi.Metadata{"k": spi.String("3"), "n": spi.Float(2.5), "at": when,
				"l": spi.List(spi.Int(1), spi.String("x")), "ok": spi.Bool(true)}},
	}
	if err := s.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	version := func(s *Store, id string) byte {
		var v byte
		_ = s.db.View(func(tx *bolt.Tx) error {
			v = tx.Bucket(bucketDocs).Get([]byte(id))[0]
			return nil
		})
		return v
	}
	for _, c := range []struct {
		id   string
		want byte
	}{{"str", recordVid}, {"typed", recordVidTyped}} {
		if v := version(s, c.id); v != c.want {
			t.Fatalf("%s: record version %d, want %d", c.id, v, c.want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = vfOpen(t, dir)
	got, missing, err := s.Hydrate(ctx, []string{"str", "typed"})
	if err != nil || len(missing) > 0 || len(got) != 2 {
		t.Fatalf("Hydrate = %+v, %v, %v", got, missing, err)
	}
	for i, d := range got {
		if !d.Metadata.Equal(docs[i].Metadata) {
			t.Fatalf("%s: metadata %v, want %v", d.ID, d.Metadata, docs[i].Metadata)
		}
	}
	for _, c := range []struct {
		f    spi.Filter
		want []string
	}{
		{spi.Gt("n", spi.Int(2)), []string{"typed"}},
		{spi.Lte("at", when), []string{"typed"}},
		{spi.Eq("l", spi.Float(1)), []string{"typed"}},
		{spi.Eq("ok", spi.Bool(true)), []string{"typed"}},
		{spi.Not(spi.Exists("n")), []string{"str"}},
		{spi.Eq("k", spi.String("3")), []string{"str", "typed"}},
		{spi.Eq("k", spi.Int(3)), nil},
	} {
		refs, err := s.Retrieve(ctx, spi.VectorRequest{Vector: []float32{1, 1, 0, 0, 0, 0, 0, 0}, K: 5, Tenant: "t", Filter: c.f})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range refs {
			ids = append(ids, r.ID)
		}
		slices.Sort(ids)
		if !slices.Equal(ids, c.want) {
			t.Fatalf("filter %v: %v, want %v", c.f, ids, c.want)
		}
	}
}
