package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ragd/ragd/ingest/pdf"
	"github.com/ragd/ragd/ingest/pdf/pdftest"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/wire"
)

// TestIngestDirPDF: `ragd ingest DIR` reads the PDFs of a folder (real
// files, written by the test): text per page, each chunk with its page as
// an integer a range filter can use, the PDF's title; a broken, an
// encrypted and a too long PDF each fail alone with a line saying why, and
// the rest of the folder goes in. A rerun reads no PDF that did not change.
func TestIngestDirPDF(t *testing.T) {
	t.Setenv(pdf.EnvCache, pdftest.CacheDir())
	srv := startTestRagd(t, nil)
	dir := t.TempDir()
	report := pdftest.Make(t, pdftest.Spec{Title: "Annual flight report", Pages: []string{
		"Wing flutter was observed on the first test flight at transonic speed.",
		"",
		"Boundary layer transition moved aft after the leading edge was polished.",
	}})
	untitled := pdftest.Make(t, pdftest.Spec{Pages: []string{"Hangar safety checklist for ground crews."}})
	locked := pdftest.Make(t, pdftest.Spec{Pages: []string{"Secret payload numbers."}, UserPassword: "u", OwnerPassword: "o"})
	long := pdftest.Make(t, pdftest.Spec{Pages: []string{"one", "two", "three", "four"}})
	writeTree(t, dir, map[string]string{
		"notes.md":         "# Notes\n\nPlain Markdown beside the PDFs.\n",
		"report.pdf":       string(report),
		"manuals/hall.PDF": string(untitled),
		"locked.pdf":       string(locked),
		"long.pdf":         string(long),
		"broken.pdf":       "%PDF-1.4\nthis file was cut off before its first object",
		"fake.pdf":         "not a PDF at all",
	})
	state := filepath.Join(t.TempDir(), "state.db")
	args := dirArgs(dir, srv.URL, state, "--max-pdf-pages", "3")
	code, stdout, stderr := runRagd(t, args...)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (files failed)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, line := range []string{
		"ingest: broken.pdf: not a readable PDF: ",
		"ingest: fake.pdf: not a PDF (no %PDF- header in its first 1024 bytes)\n",
		"ingest: locked.pdf: encrypted: it needs a password to be read\n",
		"ingest: long.pdf: too many pages: 4 pages, over 3 (--max-pdf-pages)\n",
		"ingest: 4 of 7 files failed; a rerun tries them again",
	} {
		if !strings.Contains(stderr, line) {
			t.Errorf("stderr lacks %q:\n%s", line, stderr)
		}
	}
	if n := strings.Count(stderr, "starting the PDF reader"); n != 1 {
		t.Errorf("the PDF reader was announced %d times, want once:\n%s", n, stderr)
	}
	if !strings.Contains(stdout, "(3 new, 0 changed, 0 unchanged, 4 failed; 0 deleted") {
		t.Errorf("summary:\n%s", stdout)
	}

	stored := srv.storedChunks(t, "docs")
	byFile := map[string][]spi.Document{}
	for _, d := range stored {
		byFile[d.Metadata["file"].Str()] = append(byFile[d.Metadata["file"].Str()], d)
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		for f := range byFile {
			if !yield(f) {
				return
			}
		}
	}); !slices.Equal(got, []string{"manuals/hall.PDF", "notes.md", "report.pdf"}) {
		t.Fatalf("chunks of files %q, want the Markdown and the two readable PDFs", got)
	}
	pages := map[int64]string{}
	for _, d := range byFile["report.pdf"] {
		p := d.Metadata["page"]
		if p.Kind() != spi.KindInt {
			t.Fatalf("chunk %s: page %v is not an integer", d.ID, p)
		}
		pages[p.IntValue()] += d.Text
		if d.Title != "Annual flight report" || d.Metadata["format"].Str() != "pdf" || !strings.HasPrefix(d.ID, "docs:report.pdf#") {
			t.Errorf("chunk %s: title %q, metadata %v", d.ID, d.Title, d.Metadata)
		}
	}
	if len(pages) != 2 || !strings.Contains(pages[1], "Wing flutter was observed") || !strings.Contains(pages[3], "Boundary layer transition moved aft") {
		t.Fatalf("report.pdf's text by page: %v", pages)
	}
	hall := byFile["manuals/hall.PDF"]
	if len(hall) != 1 || hall[0].Title != "manuals/hall.PDF" || hall[0].Metadata["page"].IntValue() != 1 ||
		!strings.Contains(hall[0].Text, "Hangar safety checklist") {
		t.Errorf("the untitled PDF's chunks: %+v", hall)
	}
	if _, ok := byFile["notes.md"][0].Metadata["page"]; ok {
		t.Errorf("a Markdown chunk has a page")
	}

	// A range filter on the page, as a user writes it.
	code, out, errOut := runRagd(t, "query", "wing flutter boundary layer transition", "--server", srv.URL, "--json", "--limit", "20",
		"--filter", `{"file": ["report.pdf"]}`, "--filter", `{"page": {"$gte": 3}}`)
	if code != 0 {
		t.Fatalf("query: exit %d\n%s\n%s", code, out, errOut)
	}
	var res wire.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("query answer: %v\n%s", err, out)
	}
	if len(res.Hits) == 0 {
		t.Fatalf("no hit for page >= 3:\n%s", out)
	}
	for _, h := range res.Hits {
		if h.Document == nil || h.Document.Metadata["page"].IntValue() < 3 || !strings.Contains(h.Document.Text, "Boundary layer") {
			t.Errorf("hit %s does not match page >= 3: %+v", h.ID, h.Document)
		}
	}

	// A rerun reads only what failed: the unchanged PDFs are not read
	// again, and nothing is sent.
	code, stdout, stderr = runRagd(t, args...)
	if code != 1 || !strings.Contains(stdout, "(0 new, 0 changed, 3 unchanged, 4 failed; 0 deleted") || !strings.Contains(stdout, "sent     0 chunks") {
		t.Fatalf("rerun: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	// With a larger page bound and the broken files gone, the long PDF
	// goes in and nothing else changes.
	writeTree(t, dir, map[string]string{"broken.pdf": string(untitled), "fake.pdf": string(untitled)})
	code, stdout, stderr = runRagd(t, dirArgs(dir, srv.URL, state, "--max-pdf-pages", "10")...)
	if code != 1 || !strings.Contains(stdout, "(3 new, 0 changed, 3 unchanged, 1 failed; 0 deleted") ||
		!strings.Contains(stderr, "ingest: locked.pdf: encrypted") {
		t.Fatalf("run with --max-pdf-pages 10: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var longPages []int64
	for _, d := range srv.storedChunks(t, "docs") {
		if d.Metadata["file"].Str() == "long.pdf" {
			longPages = append(longPages, d.Metadata["page"].IntValue())
		}
	}
	slices.Sort(longPages)
	if !slices.Equal(longPages, []int64{1, 2, 3, 4}) {
		t.Errorf("long.pdf's chunks are on pages %v, want 1 to 4", longPages)
	}
}

// TestIngestDirPDFTimeout: a PDF not read within --pdf-timeout fails
// alone, and the run goes on.
func TestIngestDirPDFTimeout(t *testing.T) {
	t.Setenv(pdf.EnvCache, pdftest.CacheDir())
	srv := startTestRagd(t, nil)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"a.pdf":    string(pdftest.Make(t, pdftest.Spec{Pages: []string{"Slow to read."}})),
		"notes.md": "# Notes\n\nRead all the same.\n",
	})
	code, stdout, stderr := runRagd(t, dirArgs(dir, srv.URL, filepath.Join(t.TempDir(), "state.db"), "--pdf-timeout", "1ns")...)
	if code != 1 || !strings.Contains(stderr, "ingest: a.pdf: timed out: not read within 1ns (--pdf-timeout)\n") ||
		!strings.Contains(stdout, "(1 new, 0 changed, 0 unchanged, 1 failed;") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if code, _, stderr := runRagd(t, "ingest", dir, "--pdf-timeout", "0s"); code != 2 || !strings.Contains(stderr, "--pdf-timeout must be positive") {
		t.Errorf("--pdf-timeout 0s: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runRagd(t, "ingest", dir, "--max-pdf-pages", "0"); code != 2 || !strings.Contains(stderr, "--max-pdf-pages must be positive") {
		t.Errorf("--max-pdf-pages 0: exit %d, %s", code, stderr)
	}
}
