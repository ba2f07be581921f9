package modelcache_test

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ragd/ragd/embedder/builtin/modelcache"
)

const (
	fakeRepo = "test-org/tiny-model"
	fakeRev  = "0123456789abcdef0123456789abcdef01234567"
)

// fakeModel returns the files of a small model that passes Import's
// checks: the JSON files of the built-in embedder's tiny test model
// (../testdata/tiny: config.json, tokenizer.json, the sentence-transformers
// files) and a model.safetensors of floats finite floats (4 bytes each)
// after the header.
func fakeModel(tb testing.TB, floats int) map[string][]byte {
	tb.Helper()
	files, err := fakeModelFiles(floats)
	if err != nil {
		tb.Fatal(err)
	}
	return files
}

// tinyDir holds the tiny model's files.
const tinyDir = "../testdata/tiny"

func fakeModelFiles(floats int) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, name := range []string{"config.json", "tokenizer.json", "modules.json", "1_Pooling/config.json",
		"sentence_bert_config.json", "config_sentence_transformers.json"} {
		b, err := os.ReadFile(filepath.Join(tinyDir, filepath.FromSlash(name)))
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	w := make([]float32, floats)
	for i := range w {
		w[i] = float32(int32(uint32(i)*2654435761)) / (1 << 31) // in [-1, 1), every bit pattern different
	}
	files["model.safetensors"] = safetensorsOf(map[string][]float32{"w": w})
	return files, nil
}

// safetensorsOf encodes F32 tensors (one dimension each) as a safetensors
// file, in name order.
func safetensorsOf(tensors map[string][]float32) []byte {
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	off := 0
	var data []byte
	for _, name := range slices.Sorted(maps.Keys(tensors)) {
		v := tensors[name]
		hdr[name] = map[string]any{"dtype": "F32", "shape": []int{len(v)}, "data_offsets": []int{off, off + 4*len(v)}}
		off += 4 * len(v)
		for _, x := range v {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(x))
		}
	}
	h, err := json.Marshal(hdr)
	if err != nil {
		panic(err)
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), data...)
}

// pin returns the Model entry pinning files under fakeRepo at fakeRev.
func pin(files map[string][]byte) modelcache.Model {
	m := modelcache.Model{Name: fakeRepo, Aliases: []string{"tiny-model"}, Revision: fakeRev}
	for _, p := range sortedKeys(files) {
		m.Files = append(m.Files, modelcache.File{Path: p, Size: int64(len(files[p])), SHA256: sha(files[p])})
	}
	return m
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// writeDir writes files into a new directory.
func writeDir(tb testing.TB, files map[string][]byte) string {
	tb.Helper()
	dir := tb.TempDir()
	for p, b := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// readDir reads the regular files under dir (names not starting with '.').
func readDir(tb testing.TB, dir string) map[string][]byte {
	tb.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func sameFiles(tb testing.TB, got, want map[string][]byte) {
	tb.Helper()
	if !slices.Equal(sortedKeys(got), sortedKeys(want)) {
		tb.Fatalf("files %v, want %v", sortedKeys(got), sortedKeys(want))
	}
	for p := range want {
		if sha(got[p]) != sha(want[p]) {
			tb.Fatalf("%s differs", p)
		}
	}
}

// zipEntry is one entry of a test archive.
type zipEntry struct {
	name string
	data []byte
	mode os.FileMode // 0: regular 0644
	// store: no compression (deflating 90 MB under -race takes minutes)
	store bool
}

// writeZip writes entries into a new zip file.
func writeZip(tb testing.TB, dir, name string, entries []zipEntry) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		if e.store {
			h.Method = zip.Store
		}
		if e.mode != 0 {
			h.SetMode(e.mode)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := w.Write(e.data); err != nil {
			tb.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return p
}

// entries turns model files into zip entries under prefix.
func entries(files map[string][]byte, prefix string) []zipEntry {
	var out []zipEntry
	for _, p := range sortedKeys(files) {
		out = append(out, zipEntry{name: prefix + p, data: files[p]})
	}
	return out
}

// hub is a fake Hugging Face: GET /{repo}/resolve/{rev}/{file} with byte
// ranges, and faults on demand.
type hub struct {
	repo, rev string
	files     map[string][]byte

	mu          sync.Mutex
	reqs        []hubReq
	served      map[string]int   // responses sent in full, per file
	cut         map[string]int64 // cut the next response for a file after this many body bytes
	cutAlways   map[string]int64 // cut every response for a file after this many body bytes
	pause       map[string]pause // hold the next response for a file after some body bytes
	status      map[string]int   // answer this status for a file
	ignoreRange bool
	gate        map[string]chan struct{} // hold a file's answer until closed
	arrived     chan string              // each request's file, when not nil
}

type hubReq struct{ file, rng string }

// pause holds a response after n body bytes until until is closed or the
// client goes away.
type pause struct {
	n     int64
	until chan struct{}
}

func newHub(tb testing.TB, repo, rev string, files map[string][]byte) (*hub, *httptest.Server) {
	h := &hub{repo: repo, rev: rev, files: files, served: map[string]int{}, cut: map[string]int64{},
		cutAlways: map[string]int64{}, pause: map[string]pause{}, status: map[string]int{}, gate: map[string]chan struct{}{}}
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return h, srv
}

func (h *hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	file, ok := strings.CutPrefix(r.URL.Path, "/"+h.repo+"/resolve/"+h.rev+"/")
	h.mu.Lock()
	h.reqs = append(h.reqs, hubReq{file: file, rng: r.Header.Get("Range")})
	data, found := h.files[file]
	status := h.status[file]
	gate := h.gate[file]
	cut, cutOnce := h.cut[file]
	delete(h.cut, file)
	if n, always := h.cutAlways[file]; always {
		cut, cutOnce = n, true
	}
	arrived := h.arrived
	ps, paused := h.pause[file]
	delete(h.pause, file)
	h.mu.Unlock()
	if arrived != nil {
		arrived <- file
	}
	if gate != nil {
		<-gate
	}
	switch {
	case !ok || !found:
		http.NotFound(w, r)
		return
	case status != 0:
		w.WriteHeader(status)
		return
	}
	start := int64(0)
	if rng := r.Header.Get("Range"); rng != "" && !h.ignoreRange {
		v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(rng, "bytes="), "-"), 10, 64)
		if err != nil || v >= int64(len(data)) {
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		start = v
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(data)-1, len(data)))
	}
	body := data[start:]
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	if start > 0 {
		w.WriteHeader(http.StatusPartialContent)
	}
	if paused && ps.n < int64(len(body)) {
		w.Write(body[:ps.n])
		w.(http.Flusher).Flush()
		select {
		case <-ps.until:
		case <-r.Context().Done():
			return
		}
		body = body[ps.n:]
	}
	if cutOnce && cut < int64(len(body)) {
		w.Write(body[:cut])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the client sees the connection drop mid-body
	}
	w.Write(body)
	h.mu.Lock()
	h.served[file]++
	h.mu.Unlock()
}

func (h *hub) requests() []hubReq {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.reqs)
}

// rangesOf returns the Range headers of the requests for file.
func (h *hub) rangesOf(file string) []string {
	var out []string
	for _, r := range h.requests() {
		if r.file == file {
			out = append(out, r.rng)
		}
	}
	return out
}

func (h *hub) servedCount(file string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.served[file]
}

// newCache returns a cache in a new directory that knows the pinned models
// models (nil: the built-in ones) and downloads from srv.
func newCache(tb testing.TB, srv *httptest.Server, models ...modelcache.Model) *modelcache.Cache {
	c := &modelcache.Cache{Dir: filepath.Join(tb.TempDir(), "models"), Models: models}
	if srv != nil {
		c.BaseURL = srv.URL
		c.HTTPClient = srv.Client()
	}
	return c
}
