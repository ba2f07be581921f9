package main

import (
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"golang.org/x/term"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// termSafe returns w, or when w is a terminal a writer that escapes what
// a terminal would act on instead of showing: ragd prints stored text
// (titles, ids, hold reasons, server messages) that anyone who can write
// a document chose, and ESC ] 0 ; ... BEL would set the operator's
// window title, ESC [ 2J clear the screen. Piped output stays byte for
// byte.
func termSafe(w io.Writer) io.Writer {
	if !isTerminal(w) {
		return w
	}
	return &termWriter{w: w}
}

// termWriter escapes, as \uXXXX (which is also a JSON escape of the same
// character, so --json stays valid JSON on a terminal): C0 controls but
// newline and tab (ESC, BEL, CR, backspace...), DEL, C1 controls
// (U+0080-U+009F: CSI and OSC in one character), and the bidirectional
// overrides, embeddings, isolates and marks that make text display in
// another order than it reads (U+202A-U+202E, U+2066-U+2069, U+200E,
// U+200F, U+061C). A byte that is not UTF-8 is escaped as \xNN (on a
// terminal in 8-bit mode 0x9B is CSI). A character split between two
// writes is held until the next one; flush writes what is held.
type termWriter struct {
	w       io.Writer
	pending []byte // the start of a character split between writes
	buf     []byte
}

func (t *termWriter) Write(p []byte) (int, error) {
	b := p
	if len(t.pending) > 0 {
		b = append(t.pending, p...)
		t.pending = nil
	}
	cut := len(b)
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				cut = i
			}
			break
		}
	}
	t.buf = escapeTerm(t.buf[:0], b[:cut])
	t.pending = append([]byte(nil), b[cut:]...)
	if _, err := t.w.Write(t.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// flush writes the held bytes of an unfinished character, escaped.
func (t *termWriter) flush() error {
	if len(t.pending) == 0 {
		return nil
	}
	t.buf = escapeTerm(t.buf[:0], t.pending)
	t.pending = nil
	_, err := t.w.Write(t.buf)
	return err
}

// escapeTerm appends b to dst with termWriter's escapes.
func escapeTerm(dst, b []byte) []byte {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && size == 1:
			dst = fmt.Appendf(dst, `\x%02x`, b[0])
		case r == '\n' || r == '\t':
			dst = append(dst, b[0])
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f, isBidiControl(r):
			dst = fmt.Appendf(dst, `\u%04x`, r)
		default:
			dst = append(dst, b[:size]...)
		}
		b = b[size:]
	}
	return dst
}

// isBidiControl reports whether r reorders or marks text direction.
func isBidiControl(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

// flushTerm flushes w if it is a termWriter.
func flushTerm(w io.Writer) {
	if t, ok := w.(*termWriter); ok {
		_ = t.flush()
	}
}
