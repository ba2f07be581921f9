package embedded

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
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

// incompressible is n bytes of random letters and digits: text that
// compression cannot shrink to much less than 3/4, for tests that need
// records of a size on disk (records' bodies are compressed).
func incompressible(r *rand.Rand, n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
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

// writeAndReopen upserts more into s, closes it, reopens dir and checks
// that the store holds docs and more, as written.
func writeAndReopen(t *testing.T, s *Store, dir string, docs, more []spi.Document) {
	t.Helper()
	if err := s.Upsert(context.Background(), more); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sameDocs(t, vfOpen(t, dir), append(slices.Clone(docs), more...))
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
	writeAndReopen(t, s, dir, docs, vfDocs(r, 100, 8, "e"))
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
	writeAndReopen(t, s, dir, docs, vfDocs(r, 10, 8, "e"))
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

// A record whose body compresses is written as version 4 (string
// metadata) or 5 (typed); one whose body would not shrink (a short title
// alone) stays version 2 or 3. All four read back the same document after
// a reopen, and a compressed body that is damaged fails the read (and
// Scan, which ragd check runs) with ErrCorrupt instead of answering with
// a wrong document.
func TestCompressedRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := vfOpen(t, dir)
	prose := strings.Repeat("the spanwise distribution of the lift increase due to the slipstream ", 12)
	when := spi.MustTime(time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC))
	docs := []spi.Document{
		{ID: "short-str", Tenant: "t", Title: "x", Vector: []float32{1, 0, 0, 0, 0, 0, 0, 0},
			Metadata: spi.Metadata{"k": spi.String("a")}},
		{ID: "short-typed", Tenant: "t", Title: "x", Vector: []float32{0, 1, 0, 0, 0, 0, 0, 0},
			Metadata: spi.Metadata{"n": spi.Int(1)}},
		{ID: "long-str", Tenant: "t", Title: "wing", Text: prose, Entities: []string{"slipstream", "lift"},
			Links: []string{"short-str"}, Vector: []float32{0, 0, 1, 0, 0, 0, 0, 0}, Metadata: spi.Metadata{"k": spi.String("a")}},
		{ID: "long-typed", Tenant: "u", Text: prose + "é ü ∂", Vector: []float32{0, 0, 0, 1, 0, 0, 0, 0},
			Metadata: spi.Metadata{"at": when, "n": spi.Float(2.5)}},
	}
	if err := s.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	raw := func(s *Store, id string) []byte {
		var v []byte
		_ = s.db.View(func(tx *bolt.Tx) error {
			v = slices.Clone(tx.Bucket(bucketDocs).Get([]byte(id)))
			return nil
		})
		return v
	}
	for id, want := range map[string]byte{"short-str": recordVid, "short-typed": recordVidTyped, "long-str": recordVidZ, "long-typed": recordVidTypedZ} {
		if v := raw(s, id)[0]; v != want {
			t.Fatalf("%s: record version %d, want %d", id, v, want)
		}
	}
	if n := len(raw(s, "long-str")); n >= len(prose)/2 {
		t.Fatalf("long-str: record of %d bytes for %d bytes of text, want under half", n, len(prose))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = vfOpen(t, dir)
	ids := []string{"short-str", "short-typed", "long-str", "long-typed"}
	got, missing, err := s.Hydrate(ctx, ids)
	if err != nil || len(missing) > 0 || len(got) != len(docs) {
		t.Fatalf("Hydrate = %+v, %v, %v", got, missing, err)
	}
	for i, d := range got {
		w := docs[i]
		if d.ID != w.ID || d.Title != w.Title || d.Text != w.Text || d.Tenant != w.Tenant || !slices.Equal(d.Entities, w.Entities) ||
			!slices.Equal(d.Links, w.Links) || !slices.Equal(d.Vector, w.Vector) || !d.Metadata.Equal(w.Metadata) || d.UpdatedAt.IsZero() {
			t.Fatalf("%s came back as %+v, want %+v", w.ID, d, w)
		}
	}
	// Damage the compressed body's last byte (its checksum): the read
	// fails as corrupt.
	rec := raw(s, "long-str")
	rec[len(rec)-1] ^= 0xff
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketDocs).Put([]byte("long-str"), rec) }); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Hydrate(ctx, []string{"long-str"}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Hydrate of a damaged body: %v, want ErrCorrupt", err)
	}
	if err := s.Scan(ctx, func(spi.Document) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Scan over a damaged body: %v, want ErrCorrupt", err)
	}
}

// An upsert that writes nothing appends no vector: the same documents
// again (unchanged), or a document refused for its tenant; a batch that
// names an id twice still writes the last one with its own vector.
func TestNoVectorForWritesThatWriteNothing(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 3))
	s := vfOpen(t, t.TempDir())
	noOnlineCompaction(s)
	docs := vfDocs(r, 200, 8, "d")
	if err := s.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	out, err := s.Commit(ctx, writesOf(docs, ""))
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range out {
		if o.Err != nil || o.Changed {
			t.Fatalf("write %d of the same documents: %+v, want unchanged", i, o)
		}
	}
	if n := entries(s); n != 200 {
		t.Fatalf("%d vector entries after writing the same 200 documents twice, want 200", n)
	}
	// Another tenant's write of the same ids, kept to its tenant: refused.
	other := slices.Clone(docs[:10])
	for i := range other {
		other[i].Tenant = "other"
	}
	out, err = s.Commit(ctx, writesOf(other, "other"))
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range out {
		if !errors.Is(o.Err, spi.ErrTenantConflict) {
			t.Fatalf("write %d into another tenant's id: %+v, want ErrTenantConflict", i, o)
		}
	}
	if n := entries(s); n != 200 {
		t.Fatalf("%d vector entries after refused writes, want 200", n)
	}
	// One id twice in a batch, the second time its old content: the
	// first write changes it, the second changes it back.
	changed := docs[5]
	changed.Vector = slices.Clone(changed.Vector)
	changed.Vector[0] += 1
	out, err = s.Commit(ctx, writesOf([]spi.Document{changed, docs[5], docs[6]}, ""))
	if err != nil {
		t.Fatal(err)
	}
	if !out[0].Changed || !out[1].Changed || out[2].Changed {
		t.Fatalf("outcomes %+v, want changed, changed, unchanged", out)
	}
	if n := entries(s); n != 202 {
		t.Fatalf("%d vector entries, want 202 (one per write of the repeated id)", n)
	}
	sameDocs(t, s, docs)
}

// writesOf makes upserts of docs, kept to tenant scope when it is given.
func writesOf(docs []spi.Document, scope string) []spi.Write {
	ws := make([]spi.Write, len(docs))
	for i, d := range docs {
		ws[i] = spi.Write{Op: spi.OpUpsert, Doc: d, Scope: scope, KeepTenant: scope != ""}
	}
	return ws
}

// TestFindVid checks findVid against a binary search over every entry,
// on vids with and without gaps, for vids present, absent and out of
// range.
func TestFindVid(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 500 {
		n := r.IntN(200)
		vids := make([]uint64, n)
		next := uint64(1 + r.IntN(1000))
		gaps := r.IntN(3) // 0: dense, as an ingest leaves the file
		for i := range vids {
			vids[i] = next
			next++
			if gaps > 0 && r.IntN(4) == 0 {
				next += uint64(r.IntN(gaps * 20))
			}
		}
		for range 50 {
			vid := uint64(r.IntN(int(next) + 10))
			wp, wok := slices.BinarySearch(vids, vid)
			gp, gok := findVid(vids, vid)
			if gok != wok || (wok && gp != wp) {
				t.Fatalf("round %d: findVid(%v, %d) = %d, %v; want %d, %v", round, vids, vid, gp, gok, wp, wok)
			}
		}
	}
}

// TestDecodeBody: what encoding/json writes, decodeBody reads back as
// encoding/json does; a body the faster decoder refuses still decodes.
func TestDecodeBody(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	pieces := []string{"", "a", "wing flutter", "<b>&amp;</b>", "\u2028\u2029", "é漢字🙂", "\x00\x1f\"\\/", "\xff\xfe bad utf-8", "\t\n\r"}
	str := func() string {
		var b strings.Builder
		for range r.IntN(4) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	list := func() []string {
		if r.IntN(3) == 0 {
			return nil
		}
		l := make([]string, r.IntN(4))
		for i := range l {
			l[i] = str()
		}
		return l
	}
	times := []time.Time{{}, time.Unix(0, 0).UTC(), time.Date(2026, 12, 6, 4, 35, 19, 510900807, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.FixedZone("x", 5*3600+1800)), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)}
	for i := range 2000 {
		in := body{Title: str(), Text: str(), Entities: list(), Links: list(), UpdatedAt: times[r.IntN(len(times))]}
		js, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var want body
		if err := json.Unmarshal(js, &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeBody(js)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("body %d %s: decodeBody = %+v, %v; encoding/json reads %+v", i, js, got, err, want)
		}
	}
	got, err := decodeBody([]byte(`{"title":"a","title":"b","updated_at":"2026-12-06T00:00:00Z"}`))
	if err != nil || got.Title != "b" {
		t.Fatalf("a name twice: decodeBody = %+v, %v; want title b, as encoding/json reads it", got, err)
	}
	if _, err := decodeBody([]byte(`{"title":`)); err == nil {
		t.Fatal("a broken body decoded without an error")
	}
}

// Reads on Linux come from a mapping of the file (vecfile.go): appends
// past the mapping map it again, larger, and every read, mapped or
// through ReadAt, returns the vector written, also while writes append
// and remap beside the reads (run with -race).
func TestVectorFileMappedReads(t *testing.T) {
	if !useMap {
		t.Skip("reads go through ReadAt on this system")
	}
	ctx := context.Background()
	r := rand.New(rand.NewPCG(4, 4))
	s := vfOpen(t, t.TempDir())
	noOnlineCompaction(s)
	s.vecs.mapMin = 4 * s.vecs.entry // a mapping of 4 entries at first
	mapLen := func() int {
		s.vecs.mu.RLock()
		defer s.vecs.mu.RUnlock()
		return len(s.vecs.cur.m)
	}
	docs := vfDocs(r, 10, 8, "a")
	if err := s.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	sameDocs(t, s, docs)
	first := mapLen()
	if first < 10*int(s.vecs.entry) {
		t.Fatalf("mapping of %d bytes after reading 10 entries of %d", first, s.vecs.entry)
	}
	more := vfDocs(r, 200, 8, "b")
	if err := s.Upsert(ctx, more); err != nil {
		t.Fatal(err)
	}
	docs = append(docs, more...)
	sameDocs(t, s, docs)
	if mapLen() <= first {
		t.Fatalf("the mapping stayed at %d bytes for %d entries", mapLen(), entries(s))
	}
	useMap = false
	sameDocs(t, s, docs)
	useMap = true

	// Readers beside a writer whose appends outgrow the mapping again and
	// again; the readers read the last batch written too, so that their
	// reads remap.
	var last atomic.Pointer[[]spi.Document]
	last.Store(&docs)
	remaps := mapLen()
	done := make(chan struct{})
	errs := make(chan error, 2)
	for g := range 2 {
		go func() {
			r := rand.New(rand.NewPCG(6, uint64(g)))
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				d := docs[r.IntN(len(docs))]
				if r.IntN(2) == 0 {
					l := *last.Load()
					d = l[r.IntN(len(l))]
				}
				got, missing, err := s.Hydrate(ctx, []string{d.ID})
				if err != nil || len(missing) > 0 || !slices.Equal(got[0].Vector, d.Vector) {
					errs <- fmt.Errorf("Hydrate %s = %v, %v, %v", d.ID, got, missing, err)
					return
				}
			}
		}()
	}
	for b := range 20 {
		batch := vfDocs(rand.New(rand.NewPCG(5, uint64(b))), 50, 8, fmt.Sprintf("c%02d-", b))
		if err := s.Upsert(ctx, batch); err != nil {
			t.Fatal(err)
		}
		last.Store(&batch)
	}
	close(done)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if mapLen() <= remaps {
		t.Fatalf("no read mapped the file again beside the writes (%d bytes)", remaps)
	}
}

// TestAppendFloats checks the one-copy decoding against the little-endian
// reading of every float, from an aligned and from an unaligned start
// (the second takes the loop), after what dst already holds.
func TestAppendFloats(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	want := make([]float32, 97)
	raw := make([]byte, 1+4*len(want))
	for i := range want {
		want[i] = float32(rng.NormFloat64())
	}
	want[3], want[5] = float32(math.Inf(-1)), math.Float32frombits(1) // a subnormal
	for _, start := range []int{0, 1} {
		b := raw[start : start+4*len(want)]
		for i, f := range want {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		}
		got := appendFloats([]float32{42}, b)
		if got[0] != 42 || !slices.Equal(got[1:], want) {
			t.Fatalf("start %d: appendFloats = %v…, want 42 then %v…", start, got[:4], want[:3])
		}
	}
	if got := appendFloats(nil, nil); len(got) != 0 {
		t.Fatalf("appendFloats(nil, nil) = %v", got)
	}
}
