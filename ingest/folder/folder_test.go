package folder

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ragd/ragd/ingest/chunk"
	"github.com/ragd/ragd/spi"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func walked(t *testing.T, root string, f Filter) []string {
	t.Helper()
	var got []string
	err := Walk(root, f, func(fl File, err error) error {
		switch {
		case errors.Is(err, ErrSymlink):
			got = append(got, "link:"+fl.Rel)
		case err != nil:
			t.Fatalf("%s: %v", fl.Rel, err)
		default:
			got = append(got, fl.Rel+":"+string(fl.Format))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestWalk(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"a.md": "", "b.TXT": "", "c.htm": "", "d.go": "", "e.pdf": "",
		".hidden.md": "", ".git/x.md": "", "sub/f.markdown": "", "sub/drafts/g.md": "",
		"drafts/h.md": "", "sub/i.xhtml": "",
	})
	if err := os.Symlink("a.md", filepath.Join(dir, "link.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".", filepath.Join(dir, "loop")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		filter Filter
		want   []string
	}{
		{"all", Filter{}, []string{"a.md:markdown", "b.TXT:text", "c.htm:html", "drafts/h.md:markdown", "e.pdf:pdf", "link:link.md", "link:loop",
			"sub/drafts/g.md:markdown", "sub/f.markdown:markdown", "sub/i.xhtml:html"}},
		// A pattern without "/" matches a name at any depth, one with
		// "/" the path from the root.
		{"exclude name", Filter{Exclude: []string{"drafts", "link*"}}, []string{"a.md:markdown", "b.TXT:text", "c.htm:html", "e.pdf:pdf", "link:loop",
			"sub/f.markdown:markdown", "sub/i.xhtml:html"}},
		{"exclude path", Filter{Exclude: []string{"drafts/**"}}, []string{"a.md:markdown", "b.TXT:text", "c.htm:html", "e.pdf:pdf", "link:link.md", "link:loop",
			"sub/drafts/g.md:markdown", "sub/f.markdown:markdown", "sub/i.xhtml:html"}},
		{"include", Filter{Include: []string{"*.md"}, Exclude: []string{"loop"}}, []string{"a.md:markdown", "drafts/h.md:markdown", "link:link.md",
			"sub/drafts/g.md:markdown"}},
		{"include path", Filter{Include: []string{"sub/**"}}, []string{"sub/drafts/g.md:markdown", "sub/f.markdown:markdown", "sub/i.xhtml:html"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := walked(t, dir, tt.filter); !slices.Equal(got, tt.want) {
				t.Fatalf("walk\n got %q\nwant %q", got, tt.want)
			}
		})
	}
	// The root may be a link to the folder.
	link := filepath.Join(t.TempDir(), "root")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if got := walked(t, link, Filter{Include: []string{"a.md"}}); !slices.Equal(got, []string{"a.md:markdown"}) {
		t.Fatalf("walk through a linked root: %q", got)
	}
	if err := (Filter{Include: []string{"a[.md"}}).Validate(); !errors.Is(err, ErrPattern) {
		t.Fatalf("a bad pattern: %v", err)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"ok.md": "\xef\xbb\xbf# Title\n", "nul.txt": "a\x00b", "latin1.md": "caf\xe9",
		"latin1.html": "<meta charset=latin1><p>caf\xe9", "big.txt": strings.Repeat("x", 101),
		"bin.pdf": "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\x00\x01", "fake.pdf": "plain text named .pdf",
	})
	read := func(rel string, max int64) (string, error) {
		b, _, err := ReadFile(File{Rel: rel, Path: filepath.Join(dir, rel), Format: FormatOf(rel)}, max)
		return string(b), err
	}
	if b, err := read("ok.md", 0); err != nil || b != "# Title\n" {
		t.Fatalf("ok.md: %q %v (the byte order mark must go)", b, err)
	}
	if b, err := read("bin.pdf", 100); err != nil || !strings.HasPrefix(b, "%PDF-1.7") {
		t.Errorf("a PDF (binary, not UTF-8) must be read whole: %q %v", b, err)
	}
	for rel, want := range map[string]error{"nul.txt": ErrBinary, "latin1.md": ErrNotUTF8, "big.txt": ErrTooLarge, "fake.pdf": ErrNotPDF} {
		if _, err := read(rel, 100); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", rel, err, want)
		}
	}
	if _, err := read("latin1.html", 100); err != nil {
		t.Errorf("an HTML file in its declared charset: %v", err)
	}
	if _, err := read("big.txt", 101); err != nil {
		t.Errorf("a file of exactly the bound: %v", err)
	}
}

func docsOf(t *testing.T, c *Chunker, rel, content string) []spi.Document {
	t.Helper()
	docs, err := c.Documents(File{Rel: rel, Format: FormatOf(rel)}, []byte(content))
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func idsByHeading(docs []spi.Document) map[string][]string {
	out := map[string][]string{}
	for _, d := range docs {
		out[d.Metadata[KeyHeading].Str()] = append(out[d.Metadata[KeyHeading].Str()], d.ID)
	}
	return out
}

func TestChunkIDs(t *testing.T) {
	c := &Chunker{Source: "s", Options: chunk.Options{MaxTokens: 32, Overlap: 4, Counter: chunk.Approx{}}}
	para := func(w string) string { return strings.Repeat(w+" ", 20) + "\n\n" }
	v1 := "# A\n\n" + para("alpha") + para("beta") + "# B\n\n" + para("gamma") + para("delta") + "# C\n\n" + para("eps")
	d1 := docsOf(t, c, "f.md", v1)
	if again := docsOf(t, c, "f.md", v1); !slices.EqualFunc(d1, again, func(a, b spi.Document) bool { return a.ID == b.ID }) {
		t.Fatal("the same content made other ids")
	}
	// An edit in section B changes B's ids only.
	v2 := strings.Replace(v1, para("delta"), para("delta")+para("inserted"), 1)
	h1, h2 := idsByHeading(d1), idsByHeading(docsOf(t, c, "f.md", v2))
	if len(h1["A"]) == 0 || len(h1["C"]) == 0 || !slices.Equal(h1["A"], h2["A"]) || !slices.Equal(h1["C"], h2["C"]) {
		t.Fatalf("ids before and after an edit of B:\n%v\n%v", h1, h2)
	}
	if slices.Equal(h1["B"], h2["B"]) {
		t.Fatalf("B's ids did not change: %v", h1["B"])
	}
	// The same file elsewhere, or under another source, has other ids.
	other := docsOf(t, c, "g.md", v1)
	c2 := *c
	c2.Source = "t"
	for i, d := range docsOf(t, &c2, "f.md", v1) {
		if d.ID == d1[i].ID || other[i].ID == d1[i].ID || !strings.HasPrefix(d.ID, "t:f.md#") {
			t.Fatalf("chunk %d: ids %q %q %q", i, d1[i].ID, other[i].ID, d.ID)
		}
	}
	// Equal chunks of one file get distinct ids.
	dup := docsOf(t, c, "dup.txt", "same words here\n\n"+strings.Repeat("x ", 40)+"\n\nsame words here\n")
	ids := map[string]bool{}
	for _, d := range dup {
		if ids[d.ID] {
			t.Fatalf("two chunks share id %s: %+v", d.ID, dup)
		}
		ids[d.ID] = true
	}
	// A path too long for an id is replaced by its hash.
	long := strings.Repeat("d/", 150) + "f.md"
	for _, d := range docsOf(t, c, long, v1) {
		if err := spi.ValidateName(d.ID, spi.MaxNameBytes); err != nil || strings.Contains(d.ID, "d/d/") || d.Metadata[KeyFile].Str() != long {
			t.Fatalf("long path: id %q (%v), file %q", d.ID, err, d.Metadata[KeyFile].Str())
		}
	}
	// Paths are NFC: "é" composed and decomposed is one file.
	if a, b := docsOf(t, c, "caf\u00e9.md", v1), docsOf(t, c, "cafe\u0301.md", v1); a[0].ID != b[0].ID {
		t.Fatalf("NFC: %s != %s", a[0].ID, b[0].ID)
	}
}

// TestPositionsAreIntegers: a chunk's position and line are integers, as
// a PDF's page is, so that a range filter selects them ({"chunk": {"$gte":
// 3}} matched nothing on the strings "3", "4", ... before), and the ids are
// those the string metadata had (pinned here): an id is a hash of the
// source, path, title, text and duplicate count, not of the metadata.
func TestPositionsAreIntegers(t *testing.T) {
	c := &Chunker{Source: "s", Options: chunk.Options{MaxTokens: 32, Overlap: 4, Counter: chunk.Approx{}}}
	para := func(w string) string { return strings.Repeat(w+" ", 20) + "\n\n" }
	v1 := "# A\n\n" + para("alpha") + para("beta") + "# B\n\n" + para("gamma") + para("delta") + "# C\n\n" + para("eps")
	docs := docsOf(t, c, "f.md", v1)
	wantIDs := []string{"s:f.md#90f4921f9d9584fe", "s:f.md#c78580c92d2a30c1", "s:f.md#8a1daf54cd64cd2c", "s:f.md#a93c7d40ebf88360",
		"s:f.md#41f1e48e17b53ead", "s:f.md#2daf729ea36cc0eb", "s:f.md#8dbbd1bea4de4877"}
	wantLines := []int64{1, 3, 5, 7, 9, 11, 13}
	if len(docs) != len(wantIDs) {
		t.Fatalf("%d chunks, want %d", len(docs), len(wantIDs))
	}
	f, err := spi.ParseFilter([]byte(`{"chunk": {"$gte": 3}, "line": {"$lt": 13}}`))
	if err != nil {
		t.Fatal(err)
	}
	var matched []string
	for i, d := range docs {
		ch, line := d.Metadata[KeyChunk], d.Metadata[KeyLine]
		if ch.Kind() != spi.KindInt || ch.IntValue() != int64(i) || line.Kind() != spi.KindInt || line.IntValue() != wantLines[i] {
			t.Errorf("chunk %d: chunk %v, line %v, want the integers %d and %d", i, ch, line, i, wantLines[i])
		}
		if d.ID != wantIDs[i] {
			t.Errorf("chunk %d: id %s, want %s as before", i, d.ID, wantIDs[i])
		}
		if f.Match(d.Metadata) {
			matched = append(matched, d.ID)
		}
	}
	if !slices.Equal(matched, wantIDs[3:6]) {
		t.Errorf("chunk >= 3 and line < 13 matched %v, want %v", matched, wantIDs[3:6])
	}
}

// TestPageDocuments: a PDF's chunks each carry their page as an integer,
// the PDF's title (else the path) as their title, no line, and ids that
// stay while the page's text does.
func TestPageDocuments(t *testing.T) {
	c := &Chunker{Source: "s", Options: chunk.Options{MaxTokens: 32, Overlap: 4, Counter: chunk.Approx{}}}
	pages := []string{strings.Repeat("alpha ", 30), "", strings.Repeat("gamma ", 10) + "\n\n" + strings.Repeat("delta ", 10)}
	f := File{Rel: "r/report.pdf", Format: PDF}
	docs, err := c.PageDocuments(f, "Annual report", pages)
	if err != nil {
		t.Fatal(err)
	}
	pagesSeen := map[int64]bool{}
	for _, d := range docs {
		p := d.Metadata[KeyPage]
		if p.Kind() != spi.KindInt {
			t.Fatalf("chunk %s: page %v is not an integer", d.ID, p)
		}
		pagesSeen[p.IntValue()] = true
		want := int64(1)
		if strings.Contains(d.Text, "gamma") || strings.Contains(d.Text, "delta") {
			want = 3
		}
		if p.IntValue() != want || strings.Contains(d.Text, "alpha") && want == 3 {
			t.Errorf("chunk %q on page %d, want %d", d.Text, p.IntValue(), want)
		}
		if d.Title != "Annual report" || d.Metadata[KeyFormat].Str() != "pdf" || d.Metadata[KeyFile].Str() != "r/report.pdf" {
			t.Errorf("chunk %s: title %q, metadata %v", d.ID, d.Title, d.Metadata)
		}
		if _, ok := d.Metadata[KeyLine]; ok {
			t.Errorf("chunk %s of a PDF has a line", d.ID)
		}
		if err := d.Metadata.Validate(); err != nil {
			t.Errorf("chunk %s: %v", d.ID, err)
		}
	}
	if len(docs) < 3 || !pagesSeen[1] || !pagesSeen[3] || pagesSeen[2] {
		t.Fatalf("pages %v in %d chunks", pagesSeen, len(docs))
	}
	// An edit of page 3 keeps page 1's ids; no title falls back to the path.
	pages[2] = "epsilon"
	again, err := c.PageDocuments(f, "Annual report", pages)
	if err != nil {
		t.Fatal(err)
	}
	if again[0].ID != docs[0].ID || again[len(again)-1].ID == docs[len(docs)-1].ID {
		t.Errorf("ids after an edit of page 3: %s %s, before %s %s", again[0].ID, again[len(again)-1].ID, docs[0].ID, docs[len(docs)-1].ID)
	}
	untitled, err := c.PageDocuments(f, "", pages)
	if err != nil || untitled[0].Title != "r/report.pdf" {
		t.Errorf("untitled: %+v %v", untitled, err)
	}
}

func TestState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s", "state.db")
	key := StateKey{Server: "http://x", Tenant: "t", Source: "docs"}
	s, err := OpenState(path, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenState(path, key); !errors.Is(err, ErrStateInUse) {
		t.Fatalf("a second open while the first holds the lock: %v", err)
	}
	e := FileEntry{SHA256: "abc", Fingerprint: "fp", Chunks: []ChunkEntry{{ID: "docs:a.md#1", Hash: "h"}}}
	if err := s.Update(map[string]FileEntry{"a.md": e, "b.md": e}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(nil, []string{"b.md"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRoot("/r"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = OpenState(path, key)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, ok, err := s.File("a.md")
	if err != nil || !ok || got.SHA256 != "abc" || len(got.Chunks) != 1 || got.Chunks[0] != e.Chunks[0] {
		t.Fatalf("a.md after reopening: %+v %v %v", got, ok, err)
	}
	var files []string
	if err := s.Files(func(rel string, _ FileEntry) bool { files = append(files, rel); return true }); err != nil || !slices.Equal(files, []string{"a.md"}) {
		t.Fatalf("files %v %v", files, err)
	}
	if root, err := s.Root(); err != nil || root != "/r" {
		t.Fatalf("root %q %v", root, err)
	}
	s.Close()
	if _, err := OpenState(path, StateKey{Server: "http://y", Tenant: "t", Source: "docs"}); err == nil || !strings.Contains(err.Error(), "belongs to") {
		t.Fatalf("a state opened for another server: %v", err)
	}
}
