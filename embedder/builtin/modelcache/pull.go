package modelcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// maxAttempts bounds the tries of one file within a Pull. A try that
// received bytes before the connection broke is followed by one that
// resumes there; a try that received nothing ends the Pull.
const maxAttempts = 5

// defaultClient has connect and header timeouts but no overall one: a
// model file is large, and Pull's ctx bounds the whole download.
var defaultClient = &http.Client{Transport: &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	TLSHandshakeTimeout:   30 * time.Second,
	ResponseHeaderTimeout: 60 * time.Second,
	ForceAttemptHTTP2:     true,
	MaxIdleConns:          4,
	IdleConnTimeout:       90 * time.Second,
}}

// Pull downloads the model called name at its pinned revision (see
// KnownModels and Cache.Models) and returns its directory. A model already
// cached at that revision and verified is returned without a request.
//
// Each file is fetched from {BaseURL}/{repo}/resolve/{revision}/{file} into
// a staging directory inside the cache, checked against its pinned size
// and SHA-256 while it streams, and the model directory is renamed into
// place only when every file is verified. A Pull that is interrupted
// (connection lost, ctx cancelled, process killed) keeps what it received:
// the next Pull resumes each file with an HTTP range request, or starts the
// file again when the server does not honour it. Concurrent Pulls of one
// model wait for each other; the later ones find the model installed.
//
// Errors: ErrUnknownModel (no pin for the name), ErrUnreachable (offline:
// the message says how to import instead), *HTTPError (e.g. 404, naming the
// file and revision), *VerifyError (size or hash differs; that file is
// deleted and nothing is installed), ErrDiskFull, or ctx's error.
func (c *Cache) Pull(ctx context.Context, name string) (string, error) {
	n, err := c.canonical(name)
	if err != nil {
		return "", err
	}
	m, ok := lookupModel(c.models(), n)
	if !ok {
		var names []string
		for _, k := range c.models() {
			names = append(names, k.Name)
		}
		return "", fmt.Errorf("%w: %s (pinned: %s); get its files another way and run `ragd model import PATH --name %s`",
			ErrUnknownModel, n, strings.Join(names, ", "), n)
	}
	if dir, ok := c.installed(m); ok {
		return dir, nil
	}
	if err := os.MkdirAll(c.tmpDir(), 0o755); err != nil {
		return "", fmt.Errorf("modelcache: pull %s: %w", m.Name, err)
	}
	release, err := c.lock(ctx, m.Name)
	if err != nil {
		return "", err
	}
	defer release()
	if dir, ok := c.installed(m); ok { // another Pull finished while we waited
		return dir, nil
	}
	p := &puller{c: c, m: m, base: c.BaseURL, client: c.HTTPClient,
		stage: filepath.Join(c.tmpDir(), strings.ReplaceAll(m.Name, "/", "--")+"@"+m.Revision+".pull")}
	if p.base == "" {
		p.base = DefaultBaseURLFromEnv()
	}
	p.base = strings.TrimRight(p.base, "/")
	if p.client == nil {
		p.client = defaultClient
	}
	if err := os.MkdirAll(p.stage, 0o755); err != nil {
		return "", fmt.Errorf("modelcache: pull %s: %w", m.Name, err)
	}
	c.dropOtherPulls(m)
	todo := p.remaining()
	if err := c.checkSpace(p.stage, todo); err != nil {
		return "", err
	}
	p.prog = c.newProgress(m.Name, todo, m.Size())
	for _, f := range m.Files {
		if err := p.file(ctx, f); err != nil {
			p.prog.done(false)
			return "", err
		}
	}
	mk := &marker{Name: m.Name, Source: SourcePulled, Verified: true, Revision: m.Revision,
		Origin: p.base + "/" + m.Name, InstalledAt: time.Now().UTC(), Files: m.Files}
	if err := writeMarker(p.stage, mk); err != nil {
		p.prog.done(false)
		return "", fmt.Errorf("modelcache: pull %s: %w", m.Name, err)
	}
	dir, err := c.install(p.stage, m.Name)
	p.prog.done(err == nil)
	return dir, err
}

// dropOtherPulls deletes what interrupted pulls of other revisions of m
// left in the staging area (the pin changed since). The caller holds m's
// lock.
func (c *Cache) dropOtherPulls(m Model) {
	prefix := strings.ReplaceAll(m.Name, "/", "--") + "@"
	des, _ := os.ReadDir(c.tmpDir())
	for _, de := range des {
		if n := de.Name(); strings.HasPrefix(n, prefix) && strings.HasSuffix(n, ".pull") && n != prefix+m.Revision+".pull" {
			os.RemoveAll(filepath.Join(c.tmpDir(), n))
		}
	}
}

// installed returns the directory of m when the cache holds exactly its
// pinned files, verified (by a Pull, or an Import that matched the pin).
func (c *Cache) installed(m Model) (string, bool) {
	dir := c.modelDir(m.Name)
	mk, err := check(dir, m.Name)
	if err != nil || !mk.Verified || mk.Revision != m.Revision || !holdsPinned(mk.Files, m.Files) {
		return "", false
	}
	return dir, true
}

// holdsPinned reports whether have contains every pinned file with its
// pinned size and hash.
func holdsPinned(have, pinned []File) bool {
	idx := make(map[string]File, len(have))
	for _, f := range have {
		idx[f.Path] = f
	}
	for _, p := range pinned {
		if f, ok := idx[p.Path]; !ok || f.Size != p.Size || !strings.EqualFold(f.SHA256, p.SHA256) {
			return false
		}
	}
	return true
}

// checkSpace fails early when the file system cannot hold need more bytes.
func (c *Cache) checkSpace(dir string, need int64) error {
	avail, ok := int64(0), false
	if c.freeSpace != nil {
		avail, ok = c.freeSpace(dir)
	} else {
		avail, ok = availableBytes(dir)
	}
	if ok && avail < need {
		return fmt.Errorf("%w: %s needs %s more, %s is available under %s", ErrDiskFull, "the download", FormatSize(need), FormatSize(avail), c.Dir)
	}
	return nil
}

// puller is one Pull's state.
type puller struct {
	c      *Cache
	m      Model
	base   string
	client *http.Client
	stage  string
	prog   progress
}

func (p *puller) paths(f File) (final, part string) {
	final = filepath.Join(p.stage, filepath.FromSlash(f.Path))
	return final, final + ".part"
}

// remaining is the bytes still to download, counting what an earlier,
// interrupted Pull left in the staging directory.
func (p *puller) remaining() int64 {
	var n int64
	for _, f := range p.m.Files {
		final, part := p.paths(f)
		if st, err := os.Stat(final); err == nil && st.Size() == f.Size {
			continue
		}
		n += f.Size
		if st, err := os.Stat(part); err == nil && st.Size() <= f.Size {
			n -= st.Size()
		}
	}
	return n
}

// errRestart: the partial file was dropped; try the file again from zero.
var errRestart = errors.New("modelcache: restart the file")

// cutError is a download that broke after receiving some bytes.
type cutError struct {
	got int64
	err error
}

func (e *cutError) Error() string { return e.err.Error() }
func (e *cutError) Unwrap() error { return e.err }

// file brings one file into the staging directory, verified.
func (p *puller) file(ctx context.Context, f File) error {
	final, part := p.paths(f)
	if st, err := os.Stat(final); err == nil && st.Size() == f.Size {
		if sum, err := FileSHA256(final); err == nil && sum == f.SHA256 {
			return nil // verified by an earlier, interrupted Pull
		}
		os.Remove(final)
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return fmt.Errorf("modelcache: pull %s: %w", p.m.Name, err)
	}
	restarted := false
	for attempt := 1; ; attempt++ {
		err := p.fetch(ctx, f, part)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("modelcache: pull %s: %s: %w (what was received is kept for the next pull)",
				p.m.Name, f.Path, context.Cause(ctx))
		}
		if errors.Is(err, errRestart) && !restarted {
			restarted = true
			continue
		}
		var cut *cutError
		if !errors.As(err, &cut) || cut.got == 0 || attempt >= maxAttempts {
			return err
		}
		p.prog.note(fmt.Sprintf("%s: connection lost (%v), resuming", f.Path, cut.err))
	}
	if err := os.Rename(part, final); err != nil {
		return fmt.Errorf("modelcache: pull %s: %w", p.m.Name, err)
	}
	return nil
}

// fetch downloads f into part, resuming after the bytes part already holds,
// and verifies the whole file.
func (p *puller) fetch(ctx context.Context, f File, part string) error {
	have := int64(0)
	if st, err := os.Stat(part); err == nil {
		have = st.Size()
	}
	if have > f.Size {
		os.Remove(part)
		have = 0
	}
	p.prog.file(f, have)
	if have == f.Size { // complete, but not yet checked
		return p.verify(f, part)
	}
	u := p.base + "/" + p.m.Name + "/resolve/" + p.m.Revision + "/" + escapePath(f.Path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("modelcache: pull %s: %w", p.m.Name, err)
	}
	req.Header.Set("User-Agent", "ragd-modelcache")
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return p.requestError(ctx, f, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0:
		start, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != have || total != f.Size {
			os.Remove(part)
			return fmt.Errorf("%w: %s answered range %q to bytes=%d-", errRestart, u, resp.Header.Get("Content-Range"), have)
		}
	case resp.StatusCode == http.StatusOK:
		have = 0 // a server that ignores Range sends the whole file
		if resp.ContentLength >= 0 && resp.ContentLength != f.Size {
			return &VerifyError{Model: p.m.Name, Revision: p.m.Revision, File: f.Path, WantSize: f.Size, GotSize: resp.ContentLength}
		}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		os.Remove(part)
		return fmt.Errorf("%w: %s: HTTP 416 for bytes=%d-", errRestart, u, have)
	default:
		return &HTTPError{Model: p.m.Name, Revision: p.m.Revision, File: f.Path, URL: u, Status: resp.StatusCode}
	}

	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if have > 0 {
		flags = os.O_WRONLY | os.O_APPEND
	}
	out, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		return p.writeError(f, part, err)
	}
	h := sha256.New()
	if have > 0 { // the hash covers the whole file: read back what is there
		if err := hashPrefix(h, part, have); err != nil {
			out.Close()
			os.Remove(part)
			return fmt.Errorf("%w: %v", errRestart, err)
		}
	}
	var w io.Writer = out
	if p.c.wrapWriter != nil {
		w = p.c.wrapWriter(part, w)
	}
	ew := &errWriter{w: w}
	n, cerr := io.Copy(io.MultiWriter(ew, h, p.prog), io.LimitReader(resp.Body, f.Size-have+1))
	serr := out.Sync()
	if err := out.Close(); serr == nil {
		serr = err
	}
	got := have + n
	switch {
	case ew.err != nil:
		return p.writeError(f, part, ew.err)
	case cerr != nil:
		return &cutError{got: n, err: fmt.Errorf("modelcache: pull %s: %s: connection broke after %s of %s: %w",
			p.m.Name, f.Path, FormatSize(got), FormatSize(f.Size), cerr)}
	case serr != nil:
		return p.writeError(f, part, serr)
	case got > f.Size:
		os.Remove(part)
		return &VerifyError{Model: p.m.Name, Revision: p.m.Revision, File: f.Path, WantSize: f.Size, GotSize: got}
	case got < f.Size:
		return &cutError{got: n, err: fmt.Errorf("modelcache: pull %s: %s: connection broke after %s of %s: %w",
			p.m.Name, f.Path, FormatSize(got), FormatSize(f.Size), io.ErrUnexpectedEOF)}
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != f.SHA256 {
		os.Remove(part)
		return &VerifyError{Model: p.m.Name, Revision: p.m.Revision, File: f.Path, WantSize: f.Size, GotSize: -1,
			WantSHA256: f.SHA256, GotSHA256: sum}
	}
	return nil
}

// verify checks a complete part file.
func (p *puller) verify(f File, part string) error {
	sum, err := FileSHA256(part)
	if err != nil {
		return fmt.Errorf("modelcache: pull %s: %w", p.m.Name, err)
	}
	if sum != f.SHA256 {
		os.Remove(part)
		return &VerifyError{Model: p.m.Name, Revision: p.m.Revision, File: f.Path, WantSize: f.Size, GotSize: -1,
			WantSHA256: f.SHA256, GotSHA256: sum}
	}
	return nil
}

// requestError classifies a request that got no answer.
func (p *puller) requestError(ctx context.Context, f File, err error) error {
	if ctx.Err() != nil {
		return err
	}
	var dns *net.DNSError
	var op *net.OpError
	var ne net.Error
	if errors.As(err, &dns) || errors.As(err, &op) && op.Op == "dial" || errors.As(err, &ne) && ne.Timeout() {
		how := p.m.Offline
		if how == "" {
			how = "copy the model directory (or a zip of it) from a machine that has it, then `ragd model import PATH --name " + p.m.Name + "`"
		}
		return fmt.Errorf("%w: %s: %v\nWithout a network: %s", ErrUnreachable, p.base, unwrapURL(err), how)
	}
	return fmt.Errorf("modelcache: pull %s: %s: %w", p.m.Name, f.Path, err)
}

// writeError says what a failed write means, disk full above all.
func (p *puller) writeError(f File, part string, err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("%w: writing %s into %s: %v; free some space and pull again (what was received is kept and resumed)",
			ErrDiskFull, f.Path, filepath.Dir(part), err)
	}
	return fmt.Errorf("modelcache: pull %s: writing %s: %w", p.m.Name, f.Path, err)
}

// errWriter remembers the error of its writer, to tell a failed write
// (disk) from a failed read (network) after io.Copy.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	n, err := e.w.Write(b)
	if err != nil {
		e.err = err
	}
	return n, err
}

// parseContentRange parses "bytes START-END/TOTAL".
func parseContentRange(s string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	first, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err1 := strconv.ParseInt(first, 10, 64)
	total, err2 := strconv.ParseInt(tot, 10, 64)
	return start, total, err1 == nil && err2 == nil
}

// escapePath escapes each segment of a slash-separated path for a URL.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// unwrapURL drops *url.Error's "Get URL:" prefix, which the message
// already names.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// FileSHA256 returns a file's SHA-256 in hex.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashPrefix feeds the first n bytes of path to h.
func hashPrefix(h io.Writer, path string, n int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.CopyN(h, f, n); err != nil {
		return fmt.Errorf("read back %s: %w", path, err)
	}
	return nil
}
