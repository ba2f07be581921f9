package modelcache_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ragd/ragd/embedder/builtin/modelcache"
)

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n *int64
	m *sync.Mutex
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.m.Lock()
	*c.n += int64(n)
	c.m.Unlock()
	return n, err
}

// TestImportChecksWeightsWhileStreaming is issue 29 item 5: a zip whose
// model.safetensors unpacks to far more than a model is refused while it
// streams, not after all of it is on disk (a 3.8 MB zip wrote 3.5 GiB
// before a check that needed its first 8 bytes); weights holding NaN or
// Inf are refused at import. The archive lists model.safetensors first, so
// that its bound cannot come from a config.json read before it.
func TestImportChecksWeightsWhileStreaming(t *testing.T) {
	const bomb = 8 << 20
	files := fakeModel(t, 256)
	good := files["model.safetensors"]
	hdrLen := int(binary.LittleEndian.Uint64(good))
	withFloat := func(i int, x float32) []byte {
		b := bytes.Clone(good)
		binary.LittleEndian.PutUint32(b[8+hdrLen+4*i:], math.Float32bits(x))
		return b
	}
	huge := safetensorsHeader(t, "F32", bomb/4) // declares 32 MiB of weights for a model of 32 dimensions
	for _, tc := range []struct {
		what, want string
		weights    []byte
		maxWritten int64 // bytes of model.safetensors that may reach the disk
	}{
		{"zeros, no header", "header length", make([]byte, bomb), 64 << 10},
		{"a header declaring more than the model's config allows", "more than", append(huge, make([]byte, bomb)...), 64 << 10},
		{"more bytes than the header declares", "more bytes than", append(bytes.Clone(good), make([]byte, bomb)...), 64 << 10},
		{"NaN", "NaN", withFloat(100, float32(math.NaN())), int64(len(good))},
		{"Inf", "NaN or Inf", withFloat(7, float32(math.Inf(-1))), int64(len(good))},
	} {
		t.Run(tc.what, func(t *testing.T) {
			ents := []zipEntry{{name: "model.safetensors", data: tc.weights}}
			for _, p := range sortedKeys(files) {
				if p != "model.safetensors" {
					ents = append(ents, zipEntry{name: p, data: files[p]})
				}
			}
			src := writeZip(t, t.TempDir(), "m.zip", ents)
			c := newCache(t, nil)
			var mu sync.Mutex
			var written int64
			modelcache.SetWrapWriter(c, func(p string, w io.Writer) io.Writer {
				if filepath.Base(p) != "model.safetensors" {
					return w
				}
				return countingWriter{w: w, n: &written, m: &mu}
			})
			_, err := c.Import(src, "bomb")
			if !errors.Is(err, modelcache.ErrInvalidModel) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Import: %v, want ErrInvalidModel saying %q", err, tc.want)
			}
			if written > tc.maxWritten {
				t.Fatalf("%d bytes of model.safetensors were written before the refusal, want at most %d", written, tc.maxWritten)
			}
		})
	}
}

// TestImportBoundsInflation: an entry that inflates far beyond what it
// takes in the archive is refused while it streams, even within
// MaxImportBytes.
func TestImportBoundsInflation(t *testing.T) {
	files := fakeModel(t, 256)
	files["padding.bin"] = make([]byte, 8<<20)
	c := newCache(t, nil)
	var mu sync.Mutex
	var written int64
	modelcache.SetWrapWriter(c, func(p string, w io.Writer) io.Writer {
		if filepath.Base(p) != "padding.bin" {
			return w
		}
		return countingWriter{w: w, n: &written, m: &mu}
	})
	_, err := c.Import(writeZip(t, t.TempDir(), "m.zip", entries(files, "")), "bomb")
	if !errors.Is(err, modelcache.ErrInvalidModel) || !strings.Contains(err.Error(), "inflates") {
		t.Fatalf("Import: %v, want the inflation bound", err)
	}
	if written > 2<<20 {
		t.Fatalf("%d bytes of padding.bin were written before the refusal", written)
	}
}

// safetensorsHeader is the 8-byte length and header of a file with one
// tensor "w" of n elements of dtype.
func safetensorsHeader(t *testing.T, dtype string, n int) []byte {
	t.Helper()
	size := map[string]int{"F64": 8, "F32": 4, "F16": 2, "BF16": 2}[dtype]
	h := []byte(`{"w":{"dtype":"` + dtype + `","shape":[` + strconv.Itoa(n) + `],"data_offsets":[0,` + strconv.Itoa(size*n) + `]}}`)
	return append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...)
}

// TestWeightsCheckInChunks: the streaming check finds the one non-finite
// value of each floating-point dtype wherever the writes split it, and
// passes every finite file.
func TestWeightsCheckInChunks(t *testing.T) {
	file := func(dtype string, vals []uint64, size int) []byte {
		b := safetensorsHeader(t, dtype, len(vals))
		for _, v := range vals {
			b = binary.LittleEndian.AppendUint64(b, v)[:len(b)+size]
		}
		return b
	}
	for _, tc := range []struct {
		dtype string
		size  int
		bad   uint64 // a non-finite value
		good  uint64 // the largest finite one
	}{
		{"F32", 4, 0x7fc00000, 0x7f7fffff},
		{"F32", 4, 0xff800000, 0xff7fffff},
		{"F16", 2, 0x7c00, 0x7bff},
		{"F16", 2, 0xfe01, 0xfbff},
		{"BF16", 2, 0x7f80, 0x7f7f},
		{"F64", 8, 0x7ff8000000000000, 0x7fefffffffffffff},
	} {
		vals := make([]uint64, 37)
		for i := range vals {
			vals[i] = tc.good
		}
		good := file(tc.dtype, vals, tc.size)
		vals[23] = tc.bad
		bad := file(tc.dtype, vals, tc.size)
		for _, n := range []int{1, 3, 5, 7, 4096} {
			if err := modelcache.CheckWeightsInChunks(good, n); err != nil {
				t.Errorf("%s finite, chunks of %d: %v", tc.dtype, n, err)
			}
			if err := modelcache.CheckWeightsInChunks(bad, n); err == nil || !strings.Contains(err.Error(), "NaN or Inf (value 23)") {
				t.Errorf("%s %#x at 23, chunks of %d: %v", tc.dtype, tc.bad, n, err)
			}
		}
	}
}
