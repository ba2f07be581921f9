package pdf

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ragd/ragd/ingest/pdf/pdftest"
)

// TestMain fails the package when a goroutine outlives the tests: a closed
// Engine, or a file stopped by its timeout, leaves nothing running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newEngine(t *testing.T, o Options) *Engine {
	t.Helper()
	o.CacheDir = pdftest.CacheDir()
	e := New(o)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

var threePages = pdftest.Spec{
	Title: "Wing flutter notes",
	Pages: []string{
		"Aeroelastic flutter of a swept wing at transonic speed.",
		"",
		"Boundary layer transition on a heated flat plate.\n\nA second paragraph on the same page.",
	},
}

func TestExtractPagesAndTitle(t *testing.T) {
	e := newEngine(t, Options{MaxPages: 10, Timeout: time.Minute})
	if e.Started() {
		t.Fatal("the engine started before any PDF")
	}
	got, err := e.Extract(context.Background(), pdftest.Make(t, threePages))
	if err != nil {
		t.Fatal(err)
	}
	if !e.Started() {
		t.Error("the engine did not start for a PDF")
	}
	if got.Title != "Wing flutter notes" {
		t.Errorf("title %q, want %q", got.Title, "Wing flutter notes")
	}
	if len(got.Pages) != 3 {
		t.Fatalf("%d pages, want 3: %q", len(got.Pages), got.Pages)
	}
	if !strings.Contains(got.Pages[0], "Aeroelastic flutter of a swept wing") || strings.Contains(got.Pages[0], "Boundary") {
		t.Errorf("page 1: %q", got.Pages[0])
	}
	if strings.TrimSpace(got.Pages[1]) != "" {
		t.Errorf("page 2 should be empty: %q", got.Pages[1])
	}
	if !strings.Contains(got.Pages[2], "Boundary layer transition") || !strings.Contains(got.Pages[2], "second paragraph") {
		t.Errorf("page 3: %q", got.Pages[2])
	}
	for i, p := range got.Pages {
		if strings.ContainsAny(p, "\r\x00\x02") {
			t.Errorf("page %d keeps control characters: %q", i+1, p)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e.Started() {
		t.Error("the engine still runs after Close")
	}
	if _, err := e.Extract(context.Background(), pdftest.Make(t, threePages)); !errors.Is(err, ErrEngine) {
		t.Errorf("Extract after Close: %v, want ErrEngine", err)
	}
}

func TestNoTitle(t *testing.T) {
	e := newEngine(t, Options{})
	got, err := e.Extract(context.Background(), pdftest.Make(t, pdftest.Spec{Pages: []string{"Only text."}}))
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "" || len(got.Pages) != 1 || !strings.Contains(got.Pages[0], "Only text.") {
		t.Errorf("got %+v", got)
	}
}

// TestBadFilesFailAlone: each bad file fails with its own error and the
// engine reads the next good file.
func TestBadFilesFailAlone(t *testing.T) {
	e := newEngine(t, Options{MaxPages: 2, MaxTextBytes: 200, Timeout: time.Minute})
	good := pdftest.Make(t, pdftest.Spec{Pages: []string{"A readable page."}})
	long := strings.Repeat("Shock wave boundary layer interaction. ", 20)
	for _, c := range []struct {
		name string
		data []byte
		want error
		msg  string
	}{
		{"garbage", []byte("%PDF-1.4\nthis is not a PDF body at all"), ErrBroken, "not a readable PDF"},
		{"empty", nil, ErrBroken, "not a readable PDF"},
		{"encrypted", pdftest.Make(t, pdftest.Spec{Pages: []string{"secret"}, UserPassword: "u", OwnerPassword: "o"}), ErrEncrypted, "needs a password"},
		{"too many pages", pdftest.Make(t, pdftest.Spec{Pages: []string{"1", "2", "3"}}), ErrTooManyPages, "3 pages, over 2 (--max-pdf-pages)"},
		{"too much text", pdftest.Make(t, pdftest.Spec{Pages: []string{long}}), ErrTooMuchText, "over 200 bytes of text by page 1"},
	} {
		_, err := e.Extract(context.Background(), c.data)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %v, want %v saying %q", c.name, err, c.want, c.msg)
		}
		got, err := e.Extract(context.Background(), good)
		if err != nil || len(got.Pages) != 1 || !strings.Contains(got.Pages[0], "A readable page.") {
			t.Errorf("after %s: %+v, %v", c.name, got, err)
		}
	}
}

// TestOwnerPasswordOnly: a file encrypted with permissions but no user
// password opens, as in any reader.
func TestOwnerPasswordOnly(t *testing.T) {
	e := newEngine(t, Options{})
	got, err := e.Extract(context.Background(), pdftest.Make(t, pdftest.Spec{Pages: []string{"Readable with permissions."}, OwnerPassword: "o"}))
	if err != nil || len(got.Pages) != 1 || !strings.Contains(got.Pages[0], "Readable with permissions.") {
		t.Errorf("got %+v, %v", got, err)
	}
}

// TestTimeoutStopsTheFile: a file still being read at its timeout fails
// with ErrTimeout (its instance killed), and the next file is read.
func TestTimeoutStopsTheFile(t *testing.T) {
	e := newEngine(t, Options{Timeout: 50 * time.Millisecond})
	reached := make(chan int, 8)
	e.beforePage = func(ctx context.Context, page int) {
		reached <- page
		<-ctx.Done() // the page takes until the timeout
	}
	_, err := e.Extract(context.Background(), pdftest.Make(t, threePages))
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "not read within 50ms (--pdf-timeout)") {
		t.Fatalf("error %v, want ErrTimeout", err)
	}
	select {
	case <-reached:
	default:
		// Opening the file took the whole 50 ms on a busy machine: still
		// a timeout, but not the stop in the middle this test is about.
		t.Log("the timeout came before the first page")
	}
	e.beforePage = nil
	e.opts.Timeout = time.Minute
	got, err := e.Extract(context.Background(), pdftest.Make(t, threePages))
	if err != nil || len(got.Pages) != 3 {
		t.Errorf("after a timeout: %+v, %v", got, err)
	}
}

// TestTimeoutInterruptsPDFium: a PDF whose text PDFium takes long to
// extract (300,000 text objects on one page: 43 s on a 2-core AMD EPYC at
// load average 20) is stopped in the middle of PDFium's call by its
// timeout, and the next file is read.
func TestTimeoutInterruptsPDFium(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 1 MB PDF")
	}
	heavy := pdftest.Heavy(t, 300000)
	e := newEngine(t, Options{Timeout: time.Second})
	reached := make(chan int, 1)
	e.beforePage = func(_ context.Context, page int) { reached <- page }
	_, err := e.Extract(context.Background(), heavy)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("error %v, want ErrTimeout", err)
	}
	select {
	case <-reached: // the timeout came inside GetPageText
	default:
		t.Log("the timeout came while the file was being opened")
	}
	e.beforePage = nil
	got, err := e.Extract(context.Background(), pdftest.Make(t, threePages))
	if err != nil || len(got.Pages) != 3 {
		t.Errorf("after an interrupted file: %+v, %v", got, err)
	}
}

func TestCanceled(t *testing.T) {
	e := newEngine(t, Options{Timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	e.beforePage = func(context.Context, int) { cancel() }
	if _, err := e.Extract(ctx, pdftest.Make(t, threePages)); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"a\r\nb\rc\n":      "a\nb\nc\n",
		"x\x00y\x07z\tw":   "xyz\tw",
		"hy\x02\r\nphen":   "hy-\nphen",
		"\ufeffbom\ufffe":  "bom",
		"bad \xff utf8":    "bad \ufffd utf8",
		"caf\u00e9 \u4e2d": "caf\u00e9 \u4e2d",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}
