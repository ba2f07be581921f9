package corpus_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/ingest/corpus"
	"github.com/ragd/ragd/spi"
)

var fixedNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type readItem struct {
	line corpus.Line
	err  error
}

func readAll(r io.Reader, opts corpus.ReadOptions) []readItem {
	var out []readItem
	for l, err := range corpus.Read(r, opts) {
		out = append(out, readItem{l, err})
	}
	return out
}

func TestReadJSONL(t *testing.T) {
	in := `{"id":"a","title":"T","text":"x","metadata":{"lang":"en"},"vector":[1,2],"entities":["e"],"links":["b"],"updated_at":"2026-01-02T03:04:05Z"}

{"id":"b","txt":"typo"}
not json
{"id":"c","metadata":5}
{"id":"d"}`
	items := readAll(strings.NewReader(in), corpus.ReadOptions{Format: corpus.FormatJSONL})
	if len(items) != 5 {
		t.Fatalf("got %d items, want 5 (blank line skipped)", len(items))
	}
	a := items[0]
	if a.err != nil || a.line.Number != 1 || a.line.Offset != 0 {
		t.Fatalf("first item = %+v", a)
	}
	want := spi.Document{ID: "a", Title: "T", Text: "x", Metadata: spi.Strings(map[string]string{"lang": "en"}), Vector: []float32{1, 2},
		Entities: []string{"e"}, Links: []string{"b"}, UpdatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if fmt.Sprintf("%+v", a.line.Doc) != fmt.Sprintf("%+v", want) {
		t.Fatalf("doc = %+v\nwant %+v", a.line.Doc, want)
	}
	for i, wantLine := range map[int]int{1: 3, 2: 4, 3: 5} {
		var le *corpus.LineError
		if !errors.As(items[i].err, &le) || le.Line != wantLine || !errors.Is(items[i].err, corpus.ErrBadInput) {
			t.Errorf("item %d: err = %v, want a LineError for line %d", i, items[i].err, wantLine)
		}
		if !strings.Contains(items[i].err.Error(), fmt.Sprintf("line %d", wantLine)) {
			t.Errorf("item %d: message %q lacks the line number", i, items[i].err)
		}
	}
	if !strings.Contains(items[1].err.Error(), "txt") {
		t.Errorf("unknown key not named: %v", items[1].err)
	}
	d := items[4]
	if d.err != nil || d.line.Doc.ID != "d" || d.line.Number != 6 || d.line.End != int64(len(in)) {
		t.Fatalf("last line without newline: %+v", d)
	}
}

func TestReadBEIRAndAuto(t *testing.T) {
	in := `{"_id": "1", "title": "t1", "text": "body", "metadata": {"url": "http://x", "year": 1968, "score": 0.5, "open": true, "at": {"$time": "2024-05-01T12:00:00Z"}, "tags": ["a", "b"]}, "extra": true}
{"_id": 2, "title": "", "text": "numeric id"}
`
	for _, f := range []corpus.Format{corpus.FormatBEIR, corpus.FormatAuto} {
		items := readAll(strings.NewReader(in), corpus.ReadOptions{Format: f})
		if len(items) != 2 || items[0].err != nil || items[1].err != nil {
			t.Fatalf("format %q: %+v", f, items)
		}
		d := items[0].line.Doc
		if d.ID != "1" || d.Title != "t1" || d.Text != "body" {
			t.Fatalf("doc = %+v", d)
		}
		// Typed as a JSONL line's metadata (they were strings: "1968",
		// `["a","b"]`, so {"year": {"$gte": 1960}} matched nothing).
		wantMD := spi.Metadata{"url": spi.String("http://x"), "year": spi.Int(1968), "score": spi.Float(0.5), "open": spi.Bool(true),
			"at": spi.MustTime(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)), "tags": spi.List(spi.String("a"), spi.String("b"))}
		if !d.Metadata.Equal(wantMD) {
			t.Fatalf("metadata = %v, want %v", d.Metadata, wantMD)
		}
		if items[1].line.Doc.ID != "2" {
			t.Fatalf("numeric _id = %q", items[1].line.Doc.ID)
		}
	}
	items := readAll(strings.NewReader(`{"title":"no id"}`), corpus.ReadOptions{Format: corpus.FormatBEIR})
	if len(items) != 1 || !errors.Is(items[0].err, corpus.ErrBadInput) {
		t.Fatalf("missing _id: %+v", items)
	}
}

func TestReadLongLineIsSkipped(t *testing.T) {
	in := `{"id":"a","text":"` + strings.Repeat("x", 200) + `"}` + "\n" + `{"id":"b","text":"ok"}` + "\n"
	items := readAll(strings.NewReader(in), corpus.ReadOptions{MaxLineBytes: 100})
	if len(items) != 2 {
		t.Fatalf("items = %+v", items)
	}
	if items[0].err == nil || !strings.Contains(items[0].err.Error(), "longer than 100") {
		t.Fatalf("long line: %v", items[0].err)
	}
	if items[1].err != nil || items[1].line.Doc.ID != "b" || items[1].line.Number != 2 {
		t.Fatalf("line after the long one: %+v", items[1])
	}
}

func TestReadStopsOnBreak(t *testing.T) {
	n := 0
	for range corpus.ReadDocuments(strings.NewReader("{\"id\":\"a\"}\n{\"id\":\"b\"}\n"), corpus.FormatJSONL) {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("iterated %d times after break", n)
	}
}

type failingReader struct{ data string }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.data == "" {
		return 0, errors.New("disk gone")
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestReadError(t *testing.T) {
	items := readAll(&failingReader{data: "{\"id\":\"a\"}\n"}, corpus.ReadOptions{})
	if len(items) != 2 || items[0].err != nil || items[1].err == nil || !strings.Contains(items[1].err.Error(), "disk gone") {
		t.Fatalf("items = %+v", items)
	}
}

func TestResumeFromCheckpoint(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "docs.jsonl")
	var b strings.Builder
	for i := range 10 {
		fmt.Fprintf(&b, `{"id":"d%d","text":"t"}`+"\n", i)
	}
	if err := os.WriteFile(input, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ck := &corpus.Checkpoint{Path: input + ".ckpt", Input: input, Now: func() time.Time { return fixedNow }}

	// First run: commit after line 4, then "crash".
	f, err := os.Open(input)
	if err != nil {
		t.Fatal(err)
	}
	pos, err := ck.Load(-1)
	if err != nil || pos != (corpus.Position{}) {
		t.Fatalf("fresh Load = %+v, %v", pos, err)
	}
	for l, err := range corpus.ReadDocuments(f, corpus.FormatJSONL) {
		if err != nil {
			t.Fatal(err)
		}
		if l.Number == 4 {
			if err := ck.Save(l.Next()); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()

	// Second run resumes at line 5 with absolute numbers and offsets.
	st, _ := os.Stat(input)
	pos, err = ck.Load(st.Size())
	if err != nil || pos.Line != 4 {
		t.Fatalf("Load = %+v, %v", pos, err)
	}
	f, err = os.Open(input)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := corpus.SeekTo(f, pos); err != nil {
		t.Fatal(err)
	}
	var ids []string
	var last corpus.Line
	for l, err := range corpus.Read(f, corpus.ReadOptions{Start: pos}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, l.Doc.ID)
		last = l
	}
	if got := strings.Join(ids, ","); got != "d4,d5,d6,d7,d8,d9" {
		t.Fatalf("resumed ids = %s", got)
	}
	if last.Number != 10 || last.End != st.Size() {
		t.Fatalf("last line = %d end %d, want 10 and %d", last.Number, last.End, st.Size())
	}
	if err := ck.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := ck.Remove(); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
	if pos, err := ck.Load(-1); err != nil || pos != (corpus.Position{}) {
		t.Fatalf("Load after Remove = %+v, %v", pos, err)
	}
}

func TestSeekToRejectsNonBoundary(t *testing.T) {
	r := strings.NewReader("{\"id\":\"a\"}\n{\"id\":\"b\"}\n")
	if err := corpus.SeekTo(r, corpus.Position{Line: 1, Offset: 5}); !errors.Is(err, corpus.ErrCheckpoint) {
		t.Fatalf("mid-line offset: %v", err)
	}
	if err := corpus.SeekTo(r, corpus.Position{Line: 9, Offset: 500}); !errors.Is(err, corpus.ErrCheckpoint) {
		t.Fatalf("offset past end: %v", err)
	}
	if err := corpus.SeekTo(r, corpus.Position{Line: 1, Offset: 11}); err != nil {
		t.Fatalf("boundary offset: %v", err)
	}
}

func TestCheckpointMismatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.ckpt")
	a := &corpus.Checkpoint{Path: path, Input: "/data/a.jsonl"}
	if err := a.Save(corpus.Position{Line: 3, Offset: 90}); err != nil {
		t.Fatal(err)
	}
	b := &corpus.Checkpoint{Path: path, Input: "/data/b.jsonl"}
	if _, err := b.Load(-1); !errors.Is(err, corpus.ErrCheckpoint) {
		t.Fatalf("other input: %v", err)
	}
	if _, err := a.Load(50); !errors.Is(err, corpus.ErrCheckpoint) {
		t.Fatalf("shrunk input: %v", err)
	}
	if pos, err := a.Load(90); err != nil || pos != (corpus.Position{Line: 3, Offset: 90}) {
		t.Fatalf("Load = %+v, %v", pos, err)
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Load(-1); !errors.Is(err, corpus.ErrCheckpoint) {
		t.Fatalf("corrupt file: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestResolveInputAndParseFormat(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := corpus.ResolveInput(dir, corpus.FormatAuto); err == nil {
		t.Fatal("a directory without corpus.jsonl must fail")
	}
	path := filepath.Join(dir, "corpus.jsonl")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	file, f, err := corpus.ResolveInput(dir, corpus.FormatAuto)
	if err != nil || file != path || f != corpus.FormatBEIR {
		t.Fatalf("ResolveInput(dir) = %q %q %v", file, f, err)
	}
	if file, f, err := corpus.ResolveInput(path, corpus.FormatJSONL); err != nil || file != path || f != corpus.FormatJSONL {
		t.Fatalf("ResolveInput(file) = %q %q %v", file, f, err)
	}
	for in, want := range map[string]corpus.Format{"": corpus.FormatAuto, "auto": corpus.FormatAuto, "JSONL": corpus.FormatJSONL, "beir": corpus.FormatBEIR} {
		if got, err := corpus.ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := corpus.ParseFormat("csv"); !errors.Is(err, corpus.ErrBadInput) {
		t.Errorf("ParseFormat(csv) = %v", err)
	}
}

// TestReadInvalidUTF8 rejects the line: decoding it would store the id
// under another name (U+FFFD).
func TestReadInvalidUTF8(t *testing.T) {
	in := "{\"id\":\"a\xff\",\"text\":\"x\"}\n{\"_id\":\"b\",\"text\":\"ok\"}\n"
	for _, f := range []corpus.Format{corpus.FormatJSONL, corpus.FormatBEIR} {
		items := readAll(strings.NewReader(in), corpus.ReadOptions{Format: f})
		var le *corpus.LineError
		if len(items) != 2 || !errors.As(items[0].err, &le) || le.Line != 1 || !strings.Contains(items[0].err.Error(), "UTF-8") {
			t.Fatalf("%s: first item = %+v, want a LineError naming UTF-8", f, items[0])
		}
	}
}

// Issue 29 item 6: a line is read by the API's rule (internal/strictjson).
// `ragd ingest` kept the last of two "id"s where POST /v1/documents
// answers duplicate_field, matched "Text" to text, and read "\ud800" as
// U+FFFD; each is now an error naming the line, in both formats where it
// makes the document ambiguous.
func TestReadIsAsStrictAsTheAPI(t *testing.T) {
	for _, tc := range []struct {
		format     corpus.Format
		line, want string
	}{
		{corpus.FormatJSONL, `{"id":"a","id":"b","text":"x"}`, `"id" appears twice`},
		{corpus.FormatJSONL, `{"id":"a","text":"x","metadata":{"k":"1","k":"2"}}`, `"metadata.k" appears twice`},
		{corpus.FormatJSONL, `{"id":"a","Text":"x"}`, `field names are case-sensitive`},
		{corpus.FormatJSONL, `{"id":"a\ud800","text":"x"}`, `lone surrogate`},
		{corpus.FormatJSONL, `{"id":"a","metadata":[1]}`, `metadata: got array, want an object`},
		{corpus.FormatJSONL, `{"id":"a","text":"x"} {}`, `unexpected data after the JSON object`},
		// Parses, but is the year 10000 in UTC: no store keeps it, and the
		// client could not even encode the batch holding it.
		{corpus.FormatJSONL, `{"id":"a","text":"x","updated_at":"9999-12-31T23:59:59-23:59"}`, `updated_at must lie between`},
		// Parses, but holds a metadata value no store keeps (a nested
		// list, null, an integer past 64 bits, an object other than
		// $time): the server fails such a document alone (invalid_metadata),
		// and the client cannot encode it, so `ragd ingest` stopped the
		// whole run with "json: error calling MarshalJSON for type
		// spi.Value" and sent none of the good lines (issue 29 item 6).
		{corpus.FormatJSONL, `{"id":"a","text":"x","metadata":{"k":[1,[2]]}}`, `metadata key "k": a list may not hold a list`},
		{corpus.FormatJSONL, `{"id":"a","text":"x","metadata":{"k":null}}`, `metadata key "k": null is not a value`},
		{corpus.FormatJSONL, `{"id":"a","text":"x","metadata":{"k":99999999999999999999}}`, `metadata key "k": an integer outside 64 bits`},
		{corpus.FormatJSONL, `{"id":"a","text":"x","metadata":{"k":{"a":1}}}`, `metadata key "k": the only object value`},
		// A BEIR line's metadata follows the same rule (it kept null out
		// and other values as their JSON text, a string).
		{corpus.FormatBEIR, `{"_id":"a","text":"x","metadata":{"k":[1,[2]]}}`, `metadata key "k": a list may not hold a list`},
		{corpus.FormatBEIR, `{"_id":"a","text":"x","metadata":{"k":null}}`, `metadata key "k": null is not a value`},
		{corpus.FormatBEIR, `{"_id":"a","text":"x","metadata":{"k":99999999999999999999}}`, `metadata key "k": an integer outside 64 bits`},
		{corpus.FormatBEIR, `{"_id":"a","text":"x","metadata":{"k":{"a":1}}}`, `metadata key "k": the only object value`},
		{corpus.FormatBEIR, `{"_id":"a","_id":"b","text":"x"}`, `"_id" appears twice`},
		{corpus.FormatBEIR, `{"_id":"a\udc00","text":"x"}`, `lone surrogate`},
	} {
		items := readAll(strings.NewReader(tc.line+"\n"), corpus.ReadOptions{Format: tc.format})
		var le *corpus.LineError
		if len(items) != 1 || !errors.As(items[0].err, &le) || le.Line != 1 || !strings.Contains(items[0].err.Error(), tc.want) {
			t.Errorf("%s %s: %+v, want a LineError saying %q", tc.format, tc.line, items, tc.want)
			continue
		}
		if msg := items[0].err.Error(); strings.Contains(msg, "Go struct") || strings.Contains(msg, "jsonlDoc") {
			t.Errorf("%s: message %q shows Go internals", tc.line, msg)
		}
	}
	// BEIR stays lenient about what it does not read: other keys, and
	// names in another case, are ignored as before.
	items := readAll(strings.NewReader(`{"_id":"a","text":"x","Title":"t","url":"u"}`+"\n"), corpus.ReadOptions{Format: corpus.FormatBEIR})
	if len(items) != 1 || items[0].err != nil || items[0].line.Doc.ID != "a" {
		t.Fatalf("BEIR line with other keys: %+v", items)
	}
}

// TestReadTypeErrorsArePlain is issue 29 item 8: a value of the wrong JSON
// type was reported in Go's words ("cannot unmarshal number into Go struct
// field jsonlDoc.metadata of type string"); the message names the key and
// the types in the input's words (a JSONL line's as POST /v1/documents
// words them, strictjson).
func TestReadTypeErrorsArePlain(t *testing.T) {
	for line, want := range map[string]string{
		`{"id":"a","metadata":[1]}`:   `metadata: got array, want an object`,
		`{"id":5}`:                    `id: got number, want a string`,
		`{"id":"a","vector":[1,"x"]}`: `vector[1]: got string, want a finite 32-bit number`,
		`{"id":"a","vector":[1e300]}`: `vector[0]: a number out of range`,
		`{"id":"a","links":"b"}`:      `links: got string, want an array of strings`,
		`[1]`:                         `the line must be a JSON object, got array`,
		`{"id":"a","txt":"x"}`:        `unknown field "txt"`,
	} {
		items := readAll(strings.NewReader(line), corpus.ReadOptions{Format: corpus.FormatJSONL})
		if len(items) != 1 || items[0].err == nil {
			t.Fatalf("%s: %+v, want an error", line, items)
		}
		msg := items[0].err.Error()
		if !strings.Contains(msg, want) || strings.Contains(msg, "Go ") || strings.Contains(msg, "jsonlDoc") || strings.Contains(msg, "json:") {
			t.Errorf("%s: %q, want %q in plain words", line, msg, want)
		}
	}
}
