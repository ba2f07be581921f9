// Package pdf extracts the text of PDF files, page by page, for `ragd
// ingest DIR`. It runs PDFium, the PDF library of Chromium, compiled to
// WebAssembly (github.com/klippa-app/go-pdfium's webassembly mode, the
// module shipped inside that Go module) in the wazero runtime: pure Go, no
// cgo, nothing to install.
//
// An Engine starts PDFium on the first Extract (compiling the module takes
// seconds the first time and about a tenth of a second once its compiled
// code is in Options.CacheDir) and stops it on Close. Every file gets a
// fresh PDFium instance with no file system, its memory bounded by
// MemoryLimit, and is bounded in pages, text and time (Options): a file
// over a bound, encrypted or broken fails alone with an error saying so,
// and the next file is read by a new instance.
package pdf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/klippa-app/go-pdfium"
	pdfiumerrors "github.com/klippa-app/go-pdfium/errors"
	"github.com/klippa-app/go-pdfium/requests"
	"github.com/klippa-app/go-pdfium/webassembly"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// MemoryLimit bounds the memory of the PDFium instance reading one file
// (8,192 WebAssembly pages of 64 KiB): a file that needs more fails.
const MemoryLimit = 512 << 20

// killGrace is how long Extract waits, after a file's timeout stopped its
// instance, for the extraction to return before it gives the engine up.
const killGrace = 10 * time.Second

// Errors of Extract, per file.
var (
	ErrEncrypted    = errors.New("encrypted: it needs a password to be read")
	ErrBroken       = errors.New("not a readable PDF")
	ErrTooManyPages = errors.New("too many pages")
	ErrTooMuchText  = errors.New("too much text")
	ErrTimeout      = errors.New("timed out")
	// ErrEngine wraps a failure to start PDFium; every file fails with it.
	ErrEngine = errors.New("the PDF engine could not start")
)

// Options bound the cost of a file. Zero values mean no bound.
type Options struct {
	// MaxPages is the most pages a file may have; a longer file fails
	// before any page is read.
	MaxPages int
	// MaxTextBytes bounds the text extracted from a file, all pages
	// together.
	MaxTextBytes int64
	// Timeout bounds the time to read one file; the PDFium instance
	// reading it is stopped when it runs out.
	Timeout time.Duration
	// CacheDir keeps the compiled PDFium module across runs ("" compiles
	// it in every process).
	CacheDir string
}

// EnvCache names the environment variable that sets DefaultCacheDir.
const EnvCache = "RAGD_PDF_CACHE"

// DefaultCacheDir is where `ragd ingest` keeps PDFium's compiled code:
// $RAGD_PDF_CACHE, else the "ragd/pdfium" directory under the user's cache
// directory ("" when there is none). Its files are native code for this
// machine, keyed by the runtime's version and the module's hash.
func DefaultCacheDir() string {
	if d := os.Getenv(EnvCache); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "ragd", "pdfium")
}

// Text is the text of a PDF.
type Text struct {
	// Title is the document's title from its metadata ("" when it has
	// none).
	Title string
	// Pages holds the text of each page, the first page first; a page
	// without text is "".
	Pages []string
}

// Engine reads PDFs with PDFium, started on first use. An Engine reads one
// file at a time (Extract calls take turns); Close stops it.
type Engine struct {
	opts Options

	mu       sync.Mutex
	pool     pdfium.Pool
	cache    wazero.CompilationCache
	startErr error
	closed   bool
	// beforePage, when set (tests), is called before each page is read,
	// with the file's context.
	beforePage func(ctx context.Context, page int)
}

// New returns an Engine that has not started PDFium yet.
func New(o Options) *Engine { return &Engine{opts: o} }

// Started reports whether PDFium is running.
func (e *Engine) Started() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pool != nil
}

// start starts PDFium unless it runs. Called with e.mu held.
func (e *Engine) start() error {
	if e.closed {
		return fmt.Errorf("%w: the engine is closed", ErrEngine)
	}
	if e.pool != nil {
		return nil
	}
	if e.startErr != nil {
		return e.startErr
	}
	rc := wazero.NewRuntimeConfig().
		// PDFium's setjmp/longjmp are WebAssembly exceptions.
		WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling).
		// A file's timeout stops its instance in the middle of a call.
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(MemoryLimit / (64 << 10))
	if e.opts.CacheDir != "" {
		if c, err := wazero.NewCompilationCacheWithDir(e.opts.CacheDir); err == nil {
			e.cache = c
			rc = rc.WithCompilationCache(c)
		} // else: compile without a cache
	}
	pool, err := webassembly.Init(webassembly.Config{
		MinIdle:  0,
		MaxIdle:  1,
		MaxTotal: 1,
		// No file system: PDFium reads the bytes it is given.
		FSConfig:      wazero.NewFSConfig(),
		RuntimeConfig: rc,
		// PDFium's own messages could quote a document.
		Stdout: io.Discard,
		Stderr: io.Discard,
		// A fresh instance per file: nothing of one file is left for
		// the next, and a stopped instance is simply not reused.
		ReuseWorkers: false,
	})
	if err != nil {
		e.closeCache()
		e.startErr = fmt.Errorf("%w: %v", ErrEngine, err)
		return e.startErr
	}
	e.pool = pool
	return nil
}

// Close stops PDFium, when it runs. The Engine cannot be used after.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	return e.stop()
}

// stop stops PDFium. Called with e.mu held.
func (e *Engine) stop() error {
	var err error
	if e.pool != nil {
		err = e.pool.Close()
		e.pool = nil
	}
	e.closeCache()
	return err
}

func (e *Engine) closeCache() {
	if e.cache != nil {
		_ = e.cache.Close(context.Background())
		e.cache = nil
	}
}

// result is what an extraction goroutine hands back.
type result struct {
	text Text
	err  error
}

// Extract returns the text of the PDF in data, starting PDFium if it does
// not run. Its errors wrap ErrEncrypted, ErrBroken, ErrTooManyPages,
// ErrTooMuchText, ErrTimeout, ErrEngine or ctx's error.
func (e *Engine) Extract(ctx context.Context, data []byte) (Text, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.start(); err != nil {
		return Text{}, err
	}
	fctx, cancel := ctx, context.CancelFunc(func() {})
	if e.opts.Timeout > 0 {
		fctx, cancel = context.WithTimeout(ctx, e.opts.Timeout)
	}
	defer cancel()
	inst, err := e.pool.GetInstanceWithContext(fctx)
	if err != nil {
		if ctx.Err() != nil {
			return Text{}, ctx.Err()
		}
		if fctx.Err() != nil {
			return Text{}, e.timeout()
		}
		return Text{}, fmt.Errorf("%w: %v", ErrEngine, err)
	}
	done := make(chan result, 1)
	go func() {
		t, err := e.read(fctx, inst, data)
		done <- result{t, err}
	}()
	select {
	case r := <-done:
		_ = inst.Close()
		switch {
		case ctx.Err() != nil:
			return Text{}, ctx.Err()
		case fctx.Err() != nil:
			// Done at the deadline: a timeout all the same, so that a
			// file's outcome does not depend on a race with the clock.
			return Text{}, e.timeout()
		}
		return r.text, r.err
	case <-fctx.Done():
	}
	// Out of time (or canceled): stop the instance in the middle of its
	// call and wait for the extraction to give up.
	_ = inst.Kill()
	select {
	case <-done:
	case <-time.After(killGrace):
		// PDFium did not stop: give this engine up (the next file starts
		// another) rather than wait without end.
		_ = e.stop()
	}
	if ctx.Err() != nil {
		return Text{}, ctx.Err()
	}
	return Text{}, e.timeout()
}

func (e *Engine) timeout() error {
	return fmt.Errorf("%w: not read within %s (--pdf-timeout)", ErrTimeout, e.opts.Timeout)
}

// read extracts the text with inst.
func (e *Engine) read(ctx context.Context, inst pdfium.Pdfium, data []byte) (Text, error) {
	doc, err := inst.OpenDocument(&requests.OpenDocument{File: &data})
	switch {
	case errors.Is(err, pdfiumerrors.ErrPassword):
		return Text{}, ErrEncrypted
	case errors.Is(err, pdfiumerrors.ErrSecurity):
		return Text{}, fmt.Errorf("%w (an unsupported encryption)", ErrEncrypted)
	case err != nil:
		return Text{}, fmt.Errorf("%w: %s", ErrBroken, reason(err))
	}
	defer func() {
		_, _ = inst.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: doc.Document})
	}()
	count, err := inst.FPDF_GetPageCount(&requests.FPDF_GetPageCount{Document: doc.Document})
	if err != nil {
		return Text{}, fmt.Errorf("%w: counting its pages: %s", ErrBroken, reason(err))
	}
	if e.opts.MaxPages > 0 && count.PageCount > e.opts.MaxPages {
		return Text{}, fmt.Errorf("%w: %d pages, over %d (--max-pdf-pages)", ErrTooManyPages, count.PageCount, e.opts.MaxPages)
	}
	var t Text
	if m, err := inst.FPDF_GetMetaText(&requests.FPDF_GetMetaText{Document: doc.Document, Tag: "Title"}); err == nil {
		t.Title = strings.Join(strings.Fields(Clean(m.Value)), " ")
	}
	var total int64
	for i := 0; i < count.PageCount; i++ {
		if e.beforePage != nil {
			e.beforePage(ctx, i)
		}
		if err := ctx.Err(); err != nil {
			return Text{}, err
		}
		p, err := inst.GetPageText(&requests.GetPageText{Page: requests.Page{
			ByIndex: &requests.PageByIndex{Document: doc.Document, Index: i}}})
		if err != nil {
			if ctx.Err() != nil {
				return Text{}, ctx.Err()
			}
			return Text{}, fmt.Errorf("%w: page %d: %s", ErrBroken, i+1, reason(err))
		}
		text := Clean(p.Text)
		total += int64(len(text))
		if e.opts.MaxTextBytes > 0 && total > e.opts.MaxTextBytes {
			return Text{}, fmt.Errorf("%w: over %d bytes of text by page %d (--max-file-bytes)", ErrTooMuchText, e.opts.MaxTextBytes, i+1)
		}
		t.Pages = append(t.Pages, text)
	}
	return t, nil
}

// reason is PDFium's error without its numeric code ("3: incorrect format"
// reads "incorrect format").
func reason(err error) string {
	s := err.Error()
	if i := strings.Index(s, ": "); i > 0 && strings.Trim(s[:i], "0123456789") == "" {
		s = s[i+2:]
	}
	return s
}

// Clean makes extracted text fit for a document: valid UTF-8, "\n" line
// ends, no control characters but tabs and line ends, no BOM or
// noncharacters (PDFium marks a hyphen at a line end with U+0002 and a
// generated line break with U+FFFE).
func Clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '\r':
			if i < len(s) && s[i] == '\n' {
				continue // the \n follows
			}
			b.WriteByte('\n')
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == 0x02: // a soft hyphen at a line end
			b.WriteByte('-')
		case r == 0xFEFF || r == 0xFFFE || r == 0xFFFF || unicode.IsControl(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
