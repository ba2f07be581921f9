package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/ingest/chunk"
	"github.com/ragd/ragd/ingest/folder"
	"github.com/ragd/ragd/internal/syncbuf"
	"github.com/ragd/ragd/spi"
)

// writeTree writes files (path relative to dir -> content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
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

// storedChunks returns the documents the server holds whose metadata
// source is source, by id.
func (s *liveRagd) storedChunks(t *testing.T, source string) map[string]spi.Document {
	t.Helper()
	sc, ok := s.App.Vector.(spi.Scanner)
	if !ok {
		t.Fatalf("the vector store %T cannot be scanned", s.App.Vector)
	}
	out := map[string]spi.Document{}
	err := sc.Scan(context.Background(), func(d spi.Document) error {
		if d.Metadata["source"].Str() == source {
			out[d.ID] = d
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	return out
}

// expectChunks chunks the folder as a run with these options would, with
// no state, to compare with what the server holds.
func expectChunks(t *testing.T, dir, source string, maxTokens, overlap int) map[string]spi.Document {
	return expectChunksMax(t, dir, source, maxTokens, overlap, defaultMaxFileBytes)
}

func expectChunksMax(t *testing.T, dir, source string, maxTokens, overlap int, maxBytes int64) map[string]spi.Document {
	t.Helper()
	c := folder.Chunker{Source: source, Options: chunk.Options{MaxTokens: maxTokens, Overlap: overlap, Counter: chunk.Approx{}}}
	out := map[string]spi.Document{}
	err := folder.Walk(dir, folder.Filter{}, func(f folder.File, err error) error {
		if err != nil {
			return nil
		}
		content, _, err := folder.ReadFile(f, maxBytes)
		if err != nil {
			return nil
		}
		docs, err := c.Documents(f, content)
		if err != nil {
			t.Fatalf("%s: %v", f.Rel, err)
		}
		for _, d := range docs {
			out[d.ID] = d
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameChunks fails unless the server holds exactly want for source.
func (s *liveRagd) sameChunks(t *testing.T, source string, want map[string]spi.Document) {
	t.Helper()
	got := s.storedChunks(t, source)
	if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
		t.Fatalf("the server holds chunks\n%v\nwant\n%v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	for id, w := range want {
		g := got[id]
		if g.Title != w.Title || g.Text != w.Text || !g.Metadata.Equal(w.Metadata) {
			t.Fatalf("chunk %s: got %q %q %v, want %q %q %v", id, g.Title, g.Text, g.Metadata, w.Title, w.Text, w.Metadata)
		}
	}
}

const dirChunkTokens = 40

// dirArgs are the arguments of a folder run against url with its state
// in state.
func dirArgs(dir, url, state string, more ...string) []string {
	return append([]string{"ingest", dir, "--server", url, "--state", state, "--source", "docs",
		"--tokenizer", "approx", "--chunk-tokens", "40", "--overlap-tokens", "8", "--progress", "none"}, more...)
}

// longSection is a section with n paragraphs, more than one chunk.
func longSection(word string, n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(word+" ", 12))
		b.WriteString("paragraph " + string(rune('a'+i)) + ".\n\n")
	}
	return b.String()
}

var guideFiles = map[string]string{
	"guide.md": "# Guide\n\nIntro to the guide.\n\n## Install\n\n" + longSection("install", 4) +
		"## Configure\n\n" + longSection("configure", 4) + "## Upgrade\n\nUpgrade notes.\n",
	"notes.txt":       "Plain notes about backups.\n\nSecond paragraph on restores.\n",
	"site/index.html": "<html><head><title>Site</title></head><body><nav>menu</nav><h1>Welcome</h1><p>Welcome to the site.</p><script>x()</script></body></html>",
	"sub/faq.md":      "# FAQ\n\n## Why?\n\nBecause.\n",
	".hidden.md":      "# Hidden\n\nnot read\n",
	"image.png":       "\x89PNG\x00\x00",
}

func TestIngestDirFirstRunAndMetadata(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	dir := t.TempDir()
	writeTree(t, dir, guideFiles)
	state := filepath.Join(t.TempDir(), "state.db")

	code, stdout, stderr := runRagd(t, dirArgs(dir, srv.URL, state)...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if strings.Contains(stderr, "PDF reader") {
		t.Errorf("a folder without PDFs started the PDF reader:\n%s", stderr)
	}
	want := expectChunks(t, dir, "docs", dirChunkTokens, 8)
	srv.sameChunks(t, "docs", want)
	if ingestCount(t, stdout, "files") != 4 || ingestCount(t, stdout, "chunks") != len(want) || ingestCount(t, stdout, "ok") != len(want) {
		t.Fatalf("summary (want 4 files, %d chunks):\n%s", len(want), stdout)
	}
	files := map[string]int{}
	var install []spi.Document
	for _, d := range want {
		files[d.Metadata["file"].Str()]++
		if d.Metadata["heading"].Str() == "Guide > Install" {
			install = append(install, d)
		}
		if strings.Contains(d.Text, "menu") || strings.Contains(d.Text, "x()") || strings.Contains(d.Text, "not read") {
			t.Fatalf("chunk %s holds text that is not rendered or is hidden: %q", d.ID, d.Text)
		}
	}
	if len(files) != 4 || files["guide.md"] < 4 || files["site/index.html"] != 1 {
		t.Fatalf("chunks per file: %v", files)
	}
	if len(install) < 2 {
		t.Fatalf("the Install section (4 long paragraphs) made %d chunks, want at least 2", len(install))
	}
	slices.SortFunc(install, func(a, b spi.Document) int {
		return cmp.Compare(a.Metadata["chunk"].IntValue(), b.Metadata["chunk"].IntValue())
	})
	first := install[0]
	if first.Title != "Guide > Install" || first.Metadata["format"].Str() != "markdown" || !first.Metadata["line"].Equal(spi.Int(5)) ||
		!strings.HasPrefix(first.ID, "docs:guide.md#") || !strings.HasPrefix(first.Text, "## Install") && !strings.HasPrefix(first.Text, "install") {
		t.Fatalf("first Install chunk: %+v", first)
	}
	for _, d := range want {
		if d.Metadata["file"].Str() == "site/index.html" && (d.Metadata["heading"].Str() != "Welcome" || d.Metadata["format"].Str() != "html") {
			t.Fatalf("HTML chunk: %+v", d)
		}
	}
}

// dirProxy forwards to a real server and records the chunk ids upserted
// and deleted; before forwarding the n-th write (upsert or delete, from
// 1) it calls hook, whose answer decides what happens to the request.
type dirProxy struct {
	target   *url.URL
	rp       *httputil.ReverseProxy
	mu       sync.Mutex
	writes   int
	upserted []string
	deleted  []string
	hook     func(n int, path string) proxyAction
	// hung is closed once a forwardThenHang request has been answered by
	// the server (the first one since reset).
	hung     chan struct{}
	hungOnce *sync.Once
}

type proxyAction int

const (
	forward proxyAction = iota
	// drop closes the connection without forwarding.
	drop
	// forwardThenHang forwards the request (the server does it), then
	// never answers: the caller sees no response until it gives up.
	forwardThenHang
)

func newDirProxy(t *testing.T, target string) (*dirProxy, string) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &dirProxy{target: u, rp: httputil.NewSingleHostReverseProxy(u)}
	p.reset(nil)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

// retarget sends what follows to another server.
func (p *dirProxy) retarget(t *testing.T, target string) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target, p.rp = u, httputil.NewSingleHostReverseProxy(u)
}

func (p *dirProxy) reset(hook func(n int, path string) proxyAction) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes, p.upserted, p.deleted, p.hook = 0, nil, nil, hook
	p.hung, p.hungOnce = make(chan struct{}), &sync.Once{}
}

func (p *dirProxy) sent() (upserted, deleted []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.upserted), slices.Clone(p.deleted)
}

func (p *dirProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	rp, target, hung, hungOnce := p.rp, p.target, p.hung, p.hungOnce
	p.mu.Unlock()
	if r.Method != http.MethodPost || (r.URL.Path != "/v1/documents" && r.URL.Path != "/v1/documents/delete") {
		rp.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	p.mu.Lock()
	p.writes++
	act := forward
	if p.hook != nil {
		act = p.hook(p.writes, r.URL.Path)
	}
	if act != drop {
		if r.URL.Path == "/v1/documents" {
			var req api.UpsertRequest
			_ = json.Unmarshal(body, &req)
			for _, d := range req.Documents {
				p.upserted = append(p.upserted, d.ID)
			}
		} else {
			var req api.DeleteRequest
			_ = json.Unmarshal(body, &req)
			p.deleted = append(p.deleted, req.IDs...)
		}
	}
	p.mu.Unlock()
	switch act {
	case forward:
		rp.ServeHTTP(w, r)
	case drop:
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	case forwardThenHang:
		req, _ := http.NewRequestWithContext(context.Background(), r.Method, target.JoinPath(r.URL.Path).String()+"?"+r.URL.RawQuery, bytes.NewReader(body))
		req.Header = r.Header.Clone()
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		hungOnce.Do(func() { close(hung) })
		<-r.Context().Done()
	}
}

// idsOf returns the ids of docs whose file is rel.
func idsOf(docs map[string]spi.Document, rel string) []string {
	var ids []string
	for id, d := range docs {
		if d.Metadata["file"].Str() == rel {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// minus returns the sorted ids of a not in b.
func minus(a, b map[string]spi.Document) []string {
	var ids []string
	for id := range a {
		if _, ok := b[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func TestIngestDirRerunSendsOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	px, pxURL := newDirProxy(t, srv.URL)
	dir := t.TempDir()
	writeTree(t, dir, guideFiles)
	state := filepath.Join(t.TempDir(), "state.db")
	ingestOK := func(what string) string {
		t.Helper()
		code, stdout, stderr := runRagd(t, dirArgs(dir, pxURL, state)...)
		if code != 0 {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", what, code, stdout, stderr)
		}
		return stdout
	}
	sentAre := func(what string, wantUp, wantDel []string) {
		t.Helper()
		up, del := px.sent()
		slices.Sort(up)
		slices.Sort(del)
		if !slices.Equal(up, wantUp) || !slices.Equal(del, wantDel) {
			t.Fatalf("%s: upserted %v deleted %v; want upserted %v deleted %v", what, up, del, wantUp, wantDel)
		}
		px.reset(nil)
	}

	ingestOK("first run")
	v1 := expectChunks(t, dir, "docs", dirChunkTokens, 8)
	sentAre("first run", slices.Sorted(maps.Keys(v1)), nil)

	// Nothing changed: nothing is sent.
	out := ingestOK("unchanged rerun")
	sentAre("unchanged rerun", nil, nil)
	srv.sameChunks(t, "docs", v1)
	if !strings.Contains(out, "(0 new, 0 changed, 4 unchanged, 0 failed; 0 deleted") {
		t.Fatalf("unchanged rerun summary:\n%s", out)
	}

	// One word of the Configure section changes: only that section's
	// chunks are sent, the replaced ones deleted.
	changed := strings.Replace(guideFiles["guide.md"], "configure paragraph d.", "configure paragraph d, changed.", 1)
	writeTree(t, dir, map[string]string{"guide.md": changed})
	ingestOK("changed file")
	v2 := expectChunks(t, dir, "docs", dirChunkTokens, 8)
	newIDs, goneIDs := minus(v2, v1), minus(v1, v2)
	if len(newIDs) == 0 || len(goneIDs) == 0 {
		t.Fatalf("the change made no new chunk ids (%v) or retired none (%v)", newIDs, goneIDs)
	}
	for _, id := range append(slices.Clone(newIDs), goneIDs...) {
		d, ok := v2[id]
		if !ok {
			d = v1[id]
		}
		if d.Metadata["heading"].Str() != "Guide > Configure" {
			t.Fatalf("chunk %s of section %q changed; only Configure did", id, d.Metadata["heading"].Str())
		}
	}
	sentAre("changed file", newIDs, goneIDs)
	srv.sameChunks(t, "docs", v2)

	// The file shrinks to one short section: its other chunks go.
	writeTree(t, dir, map[string]string{"guide.md": "# Guide\n\nShort now.\n"})
	ingestOK("shrunk file")
	v3 := expectChunks(t, dir, "docs", dirChunkTokens, 8)
	if n := len(idsOf(v3, "guide.md")); n != 1 {
		t.Fatalf("the shrunk guide has %d chunks, want 1", n)
	}
	sentAre("shrunk file", idsOf(v3, "guide.md"), idsOf(v2, "guide.md"))
	srv.sameChunks(t, "docs", v3)

	// A file is deleted and another added.
	if err := os.Remove(filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{"sub/new.md": "# New\n\nA new page.\n"})
	out = ingestOK("deleted and added file")
	v4 := expectChunks(t, dir, "docs", dirChunkTokens, 8)
	sentAre("deleted and added file", idsOf(v4, "sub/new.md"), idsOf(v3, "notes.txt"))
	srv.sameChunks(t, "docs", v4)
	if !strings.Contains(out, "(1 new, 0 changed, 3 unchanged, 0 failed; 1 deleted since the last run)") {
		t.Fatalf("summary:\n%s", out)
	}
}

func TestIngestDirBadFilesFailAloneWithClearErrors(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	dir := t.TempDir()
	writeTree(t, dir, guideFiles)
	writeTree(t, dir, map[string]string{
		"bin.txt":    "starts as text\x00then binary",
		"latin1.md":  "# Caf\xe9\n\nLatin-1, not UTF-8.\n",
		"huge.md":    "# Huge\n\n" + strings.Repeat("word ", 1000),
		"bom.md":     "\xef\xbb\xbf# With a byte order mark\n\nFine.\n",
		"empty.md":   "",
		"spaces.txt": " \n\n\t\n",
	})
	for link, target := range map[string]string{"loop-a.md": "loop-b.md", "loop-b.md": "loop-a.md", "dirloop": "."} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(t.TempDir(), "state.db")
	code, stdout, stderr := runRagd(t, dirArgs(dir, srv.URL, state, "--max-file-bytes", "4096")...)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (files failed)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, line := range []string{
		"ingest: bin.txt: binary file (it holds NUL bytes)\n",
		"ingest: latin1.md: not UTF-8 text\n",
		"ingest: huge.md: file too large: over 4096 bytes (--max-file-bytes)\n",
		"ingest: loop-a.md: skipped: a symbolic link, not followed\n",
		"ingest: loop-b.md: skipped: a symbolic link, not followed\n",
		"ingest: dirloop: skipped: a symbolic link, not followed\n",
		"ingest: 3 of 10 files failed; a rerun tries them again",
	} {
		if !strings.Contains(stderr, line) {
			t.Errorf("stderr lacks %q:\n%s", line, stderr)
		}
	}
	if !strings.Contains(stdout, "(7 new, 0 changed, 0 unchanged, 3 failed; 0 deleted") || !strings.Contains(stdout, "  skipped  3 symbolic links (not followed)") {
		t.Errorf("summary:\n%s", stdout)
	}
	// Every good file is in, the bad ones are not.
	want := expectChunksMax(t, dir, "docs", dirChunkTokens, 8, 4096)
	srv.sameChunks(t, "docs", want)
	files := map[string]bool{}
	for _, d := range want {
		files[d.Metadata["file"].Str()] = true
	}
	for _, f := range []string{"guide.md", "notes.txt", "site/index.html", "sub/faq.md", "bom.md"} {
		if !files[f] {
			t.Errorf("no chunk of %s; chunks are of %v", f, slices.Sorted(maps.Keys(files)))
		}
	}
	for _, f := range []string{"bin.txt", "latin1.md", "huge.md", "empty.md", "spaces.txt"} {
		if files[f] {
			t.Errorf("%s made chunks", f)
		}
	}
	for _, d := range want {
		if d.Metadata["file"].Str() == "bom.md" && d.Title != "With a byte order mark" {
			t.Errorf("bom.md's chunk is titled %q: the byte order mark was not dropped", d.Title)
		}
	}

	// Once fixed, a rerun takes the files that failed and nothing else.
	writeTree(t, dir, map[string]string{"latin1.md": "# Café\n\nNow UTF-8.\n", "bin.txt": "text now"})
	code, stdout, stderr = runRagd(t, dirArgs(dir, srv.URL, state, "--max-file-bytes", "4096")...)
	if code != 1 || !strings.Contains(stdout, "(2 new, 0 changed, 7 unchanged, 1 failed;") {
		t.Fatalf("rerun after the fix: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	srv.sameChunks(t, "docs", expectChunksMax(t, dir, "docs", dirChunkTokens, 8, 4096))
}

// startRagdChild runs ragd with args in a child process (the test binary,
// see TestMain) and returns it with its combined output.
func startRagdChild(t *testing.T, args ...string) (*exec.Cmd, *syncbuf.Buffer) {
	t.Helper()
	raw, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envMainArgs+"="+string(raw))
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, out
}

// hangOn returns a proxy hook that lets the n-th write of path through
// to the server and then hangs it.
func hangOn(n int, path string) func(int, string) proxyAction {
	seen := 0
	return func(_ int, p string) proxyAction {
		if p != path {
			return forward
		}
		seen++
		if seen != n {
			return forward
		}
		return forwardThenHang
	}
}

// killAt runs ingest in a child process through px until hook hangs a
// write the server has done, kills the process with SIGKILL and returns
// its output.
func killAt(t *testing.T, px *dirProxy, hook func(int, string) proxyAction, args ...string) string {
	t.Helper()
	px.reset(hook)
	hung := px.hung
	cmd, out := startRagdChild(t, args...)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-hung:
	case err := <-exited:
		t.Fatalf("ingest ended (%v) before it was to be killed:\n%s", err, out.String())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	px.reset(nil)
	return out.String()
}

func TestIngestDirKilledThenRerunConverges(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	px, pxURL := newDirProxy(t, srv.URL)
	dir := t.TempDir()
	writeTree(t, dir, guideFiles)
	state := filepath.Join(t.TempDir(), "state.db")
	args := dirArgs(dir, pxURL, state, "--batch", "3", "--retries", "0")
	rerun := func(what string, want map[string]spi.Document) {
		t.Helper()
		code, stdout, stderr := runRagd(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", what, code, stdout, stderr)
		}
		srv.sameChunks(t, "docs", want)
		px.reset(nil)
		// Converged: one more run sends nothing.
		if code, stdout, _ := runRagd(t, args...); code != 0 || !strings.Contains(stdout, "  sent     0 chunks") {
			t.Fatalf("%s: the run after the rerun sent chunks (exit %d):\n%s", what, code, stdout)
		}
		if up, del := px.sent(); len(up)+len(del) != 0 {
			t.Fatalf("%s: the run after the rerun upserted %v and deleted %v", what, up, del)
		}
	}

	// Killed while the server stores the second batch of the first run.
	killAt(t, px, hangOn(2, "/v1/documents"), args...)
	v1 := expectChunks(t, dir, "docs", dirChunkTokens, 8)
	if n := len(srv.storedChunks(t, "docs")); n != 6 || n >= len(v1) {
		t.Fatalf("after the kill the server holds %d chunks, want the 6 of two batches of 3 (of %d)", n, len(v1))
	}
	rerun("first run killed", v1)

	// A file changes, another is deleted; killed while the replaced
	// chunks are being deleted.
	writeTree(t, dir, map[string]string{"guide.md": strings.Replace(guideFiles["guide.md"], "install paragraph b.", "install paragraph B, rewritten.", 1)})
	if err := os.Remove(filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	killAt(t, px, hangOn(1, "/v1/documents/delete"), args...)
	rerun("killed while deleting", expectChunks(t, dir, "docs", dirChunkTokens, 8))

	// Interrupted (Ctrl-C) while the server stores a batch.
	writeTree(t, dir, map[string]string{"sub/more.md": "# More\n\n" + longSection("more", 6)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	px.reset(func(_ int, p string) proxyAction {
		if p == "/v1/documents" {
			cancel()
			return forwardThenHang
		}
		return forward
	})
	hung := px.hung
	var stdout, stderr bytes.Buffer
	if code := run(ctx, args, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "interrupted; rerun the same command to go on") {
		t.Fatalf("interrupted run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	<-hung // the server has done the write the interrupted run sent
	px.reset(nil)
	rerun("interrupted", expectChunks(t, dir, "docs", dirChunkTokens, 8))
}

func TestIngestDirUsage(t *testing.T) {
	srv := startTestRagd(t, nil)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.md": "# A\n\ntext\n"})
	file := writeJSONL(t, t.TempDir(), "docs.jsonl", numberedDocs(1)...)
	state := filepath.Join(t.TempDir(), "state.db")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"ingest", file, "--chunk-tokens", "100"}, "--chunk-tokens is for a folder of files"},
		{[]string{"ingest", dir, "--checkpoint", "x.ckpt"}, "--checkpoint is for a JSONL file"},
		{[]string{"ingest", file, "--format", "files"}, "--format files reads a directory"},
		{dirArgs(dir, srv.URL, state, "--overlap-tokens", "20"), "--chunk-tokens 40, --overlap-tokens 20: chunk: invalid options: overlap 20, want 0 to 19"},
		{dirArgs(dir, srv.URL, state, "--include", "a[.md"), `folder: bad pattern: "a[.md"`},
		{[]string{"ingest", dir, "--server", srv.URL, "--state", state, "--source", "a:b"}, `--source: source "a:b": must not hold ':'`},
	} {
		code, stdout, stderr := runRagd(t, tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%q: exit %d, want 2 and %q\nstdout:\n%s\nstderr:\n%s", tt.args, code, tt.want, stdout, stderr)
		}
	}

	// A folder of the same name elsewhere would get the same source and
	// state: it is refused.
	first, second := filepath.Join(t.TempDir(), "docs"), filepath.Join(t.TempDir(), "docs")
	writeTree(t, first, map[string]string{"a.md": "# A\n\ntext\n"})
	writeTree(t, second, map[string]string{"b.md": "# B\n\nother\n"})
	argsOf := func(dir string, more ...string) []string {
		return append([]string{"ingest", dir, "--server", srv.URL, "--tokenizer", "approx", "--chunk-tokens", "40", "--overlap-tokens", "8"}, more...)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // the default state's directory
	if code, stdout, stderr := runRagd(t, argsOf(first)...); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, _, stderr := runRagd(t, argsOf(second)...)
	if code != 2 || !strings.Contains(stderr, `source "docs" was ingested from `+first+", not "+second+": name this folder's ingest with --source NAME") {
		t.Fatalf("another folder on the same state: exit %d\n%s", code, stderr)
	}
	if got := srv.storedChunks(t, "docs"); len(got) != 1 || !strings.HasPrefix(slices.Collect(maps.Keys(got))[0], "docs:a.md#") {
		t.Fatalf("the refused run changed the chunks: %v", slices.Sorted(maps.Keys(got)))
	}
	// Named explicitly, it takes the ingest over: a.md's chunk goes.
	if code, stdout, stderr := runRagd(t, argsOf(second, "--source", "docs")...); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	srv.sameChunks(t, "docs", expectChunks(t, second, "docs", dirChunkTokens, 8))
}

func TestIngestDirSendsEverythingToAServerThatLostIt(t *testing.T) {
	t.Parallel()
	old, fresh := startTestRagd(t, nil), startTestRagd(t, nil)
	px, pxURL := newDirProxy(t, old.URL)
	dir := t.TempDir()
	writeTree(t, dir, guideFiles)
	state := filepath.Join(t.TempDir(), "state.db")
	if code, stdout, stderr := runRagd(t, dirArgs(dir, pxURL, state)...); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	// The same address now answers from an empty server (restored, or
	// started anew): the state's word is not taken for it.
	px.retarget(t, fresh.URL)
	code, stdout, stderr := runRagd(t, dirArgs(dir, pxURL, state)...)
	want := expectChunks(t, dir, "docs", dirChunkTokens, 8)
	if code != 0 || !strings.Contains(stderr, "as an earlier run sent it (a new or restored server?): sending every chunk again") ||
		ingestCount(t, stdout, "ok") != len(want) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	fresh.sameChunks(t, "docs", want)
}
