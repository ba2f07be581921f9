package ui_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/ragd/ragd/api/ui"
)

// budget is what everything the console serves may weigh, gzip-compressed.
const budget = 50 << 10

// TestConsoleFitsTheBudget fetches the page and every file it references
// through the handler, as a browser would, and adds up their gzip sizes.
func TestConsoleFitsTheBudget(t *testing.T) {
	h := ui.Handler()
	get := func(path string) []byte {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, rec.Code)
		}
		return rec.Body.Bytes()
	}
	page := get("/")
	files := map[string][]byte{"/": page}
	for _, m := range regexp.MustCompile(`(?:href|src)="([^"#:]+)"`).FindAllSubmatch(page, -1) {
		p := "/" + strings.TrimPrefix(string(m[1]), "./")
		files[p] = get(p)
	}
	if len(files) < 4 {
		t.Fatalf("the page references %d files, want its stylesheet, script and icon", len(files)-1)
	}
	// The icons the script switches to when something is wrong.
	for _, p := range []string{"/favicon-warn.svg", "/favicon-bad.svg"} {
		files[p] = get(p)
	}
	total, raw := 0, 0
	for p, b := range files {
		n := gzipSize(t, b)
		t.Logf("%-14s %6d bytes, %6d gzipped", p, len(b), n)
		total += n
		raw += len(b)
	}
	t.Logf("total %d bytes, %d gzipped (budget %d)", raw, total, budget)
	if total > budget {
		t.Fatalf("the console weighs %d bytes gzipped, over the %d-byte budget", total, budget)
	}
}

func gzipSize(t *testing.T, b []byte) int {
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return buf.Len()
}

// TestConsoleLoadsNothingFromOutside: the page references no other origin
// and is served with a CSP that forbids it.
func TestConsoleLoadsNothingFromOutside(t *testing.T) {
	rec := httptest.NewRecorder()
	ui.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	csp := rec.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if m := regexp.MustCompile(`(?:href|src)="(?:https?:)?//`).Find(rec.Body.Bytes()); m != nil {
		t.Errorf("the page references another origin: %s", m)
	}
}
