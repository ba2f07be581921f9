package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"

	"github.com/ragd/ragd/spi"
)

// hostileTitle sets the terminal's title, rings its bell, clears the
// screen, starts a C1 CSI sequence and reverses the rest of the line.
const hostileTitle = "evil\x1b]0;pwned\x07\x1b[2J\u009b31m\u202eelif\rtitle"

// runOnTerminal runs ragd with stdout and stderr on a pseudo-terminal and
// returns what the terminal received.
func runOnTerminal(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	got := make(chan []byte)
	go func() {
		var buf bytes.Buffer
		_, err := io.Copy(&buf, ptmx)
		if err != nil && !errors.Is(err, syscall.EIO) && !errors.Is(err, os.ErrClosed) { // EIO: the terminal side closed
			t.Errorf("reading the terminal: %v", err)
		}
		got <- buf.Bytes()
	}()
	code := run(context.Background(), args, tty, tty)
	tty.Close()
	return code, string(<-got)
}

// TestQueryEscapesControlCharactersOnATerminal is issue 29 item 7: a
// stored title with ESC ] 0 ; ... BEL and ESC [ 2J set the operator's
// terminal title and cleared the screen through `ragd query`. On a
// terminal every control character of stored text is shown escaped, in
// the table and in --json (which stays JSON); piped, the output is the
// stored text byte for byte.
func TestQueryEscapesControlCharactersOnATerminal(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	file := writeJSONL(t, t.TempDir(), "evil.jsonl", spi.Document{ID: "evil", Title: hostileTitle, Text: "boundary layer"})
	if code, stdout, stderr := runRagd(t, "ingest", file, "--server", srv.URL, "--wait", "30s"); code != 0 {
		t.Fatalf("ingest: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, args := range [][]string{
		{"query", "boundary layer", "--server", srv.URL, "--sources", "keyword"},
		{"query", "boundary layer", "--server", srv.URL, "--sources", "keyword", "--json"},
	} {
		code, out := runOnTerminal(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%q", args, code, out)
		}
		if i := strings.IndexFunc(out, func(r rune) bool {
			return r < 0x20 && r != '\n' && r != '\r' && r != '\t' || r >= 0x7f && r <= 0x9f || r == 0x202e
		}); i >= 0 {
			t.Fatalf("%v: the terminal received control character %q:\n%q", args, out[i:i+1], out)
		}
		if !strings.Contains(out, `\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202eelif`) {
			t.Fatalf("%v: the title is not shown escaped:\n%q", args, out)
		}
	}
	// Piped, the title is what was stored.
	code, stdout, _ := runRagd(t, "query", "boundary layer", "--server", srv.URL, "--sources", "keyword")
	if code != 0 || !strings.Contains(stdout, "evil\x1b]0;pwned\x07") {
		t.Fatalf("piped: exit %d, want the stored title:\n%q", code, stdout)
	}
}

// TestTermWriter: what a terminal would act on is escaped, the rest
// (text in any script, newlines, tabs) is not, wherever the writes split
// a character.
func TestTermWriter(t *testing.T) {
	t.Parallel()
	in := "plain é 日本 🙂\tx\n" + hostileTitle + "\u200e\u2066\u061c\x7f\x08\xff\x9b\xe2\x80"
	want := "plain é 日本 🙂\tx\n" + `evil\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202eelif\u000dtitle` +
		`\u200e\u2066\u061c\u007f\u0008\xff\x9b\xe2\x80`
	for _, n := range []int{1, 2, 3, 5, len(in)} {
		var buf bytes.Buffer
		w := &termWriter{w: &buf}
		for b := []byte(in); len(b) > 0; {
			k := min(n, len(b))
			if m, err := w.Write(b[:k]); m != k || err != nil {
				t.Fatalf("Write = %d, %v", m, err)
			}
			b = b[k:]
		}
		if err := w.flush(); err != nil {
			t.Fatal(err)
		}
		if buf.String() != want {
			t.Errorf("writes of %d bytes:\n got %q\nwant %q", n, buf.String(), want)
		}
	}
}
