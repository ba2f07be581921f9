// Package pdftest writes real PDF files for tests, with
// codeberg.org/go-pdf/fpdf: the tests make the PDFs they read, and no
// binary fixture made elsewhere is kept in the repository.
package pdftest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"codeberg.org/go-pdf/fpdf"
)

// Spec describes a PDF.
type Spec struct {
	// Title is the document's metadata title ("" sets none).
	Title string
	// Pages holds each page's text (ASCII, written in Helvetica and
	// wrapped at the page's width); "" makes a page without text.
	Pages []string
	// UserPassword, when set, encrypts the file so that it opens only
	// with that password; OwnerPassword alone encrypts it with
	// permissions but opens without one.
	UserPassword, OwnerPassword string
}

// Make returns the bytes of the PDF s describes.
func Make(t testing.TB, s Spec) []byte {
	t.Helper()
	p := fpdf.New("P", "mm", "A4", "")
	if s.Title != "" {
		p.SetTitle(s.Title, true)
	}
	if s.UserPassword != "" || s.OwnerPassword != "" {
		p.SetProtection(fpdf.CnProtectPrint, s.UserPassword, s.OwnerPassword)
	}
	p.SetFont("Helvetica", "", 12)
	for _, text := range s.Pages {
		p.AddPage()
		if text != "" {
			p.MultiCell(0, 6, text, "", "", false)
		}
	}
	var b bytes.Buffer
	if err := p.Output(&b); err != nil {
		t.Fatalf("pdftest: writing a PDF: %v", err)
	}
	return b.Bytes()
}

// CacheDir is the directory tests keep PDFium's compiled code in, shared by
// every test binary and run so that it is compiled once (a minute and more
// with -race on a busy machine): $RAG_CACHE_DIR/pdfium when RAG_CACHE_DIR
// is set (CI), else ragd-pdfium-cache in the temporary directory.
func CacheDir() string {
	if d := os.Getenv("RAG_CACHE_DIR"); d != "" {
		return filepath.Join(d, "pdfium")
	}
	return filepath.Join(os.TempDir(), "ragd-pdfium-cache")
}

// Heavy returns a one-page PDF of n tiny text objects ("ab" each, 2 pt
// Helvetica): PDFium takes seconds to minutes to extract its text.
func Heavy(t testing.TB, n int) []byte {
	t.Helper()
	p := fpdf.New("P", "mm", "A4", "")
	p.SetFont("Helvetica", "", 2)
	p.AddPage()
	for i := range n {
		p.Text(float64(i%200), float64(i/200%290), "ab")
	}
	var b bytes.Buffer
	if err := p.Output(&b); err != nil {
		t.Fatalf("pdftest: writing a PDF: %v", err)
	}
	return b.Bytes()
}
