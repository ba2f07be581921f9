package modelcache

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/ragd/ragd/embedder/builtin/bert"
)

// maxSafetensorsHeader bounds the JSON header of model.safetensors.
const maxSafetensorsHeader = 100 << 20

// CheckWeights reads the safetensors file at path once, checking it as
// Import does while it streams (weightsCheck), and returns its SHA-256 in
// hex. The built-in embedder calls it when it opens a model, so weights
// holding NaN or Inf are refused at load as at import. Errors wrap
// ErrInvalidModel.
func CheckWeights(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	wc := newWeightsCheck(st.Size(), math.MaxInt64)
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(wc, h), f); err != nil {
		if errors.Is(err, errWeights) {
			return "", fmt.Errorf("%w: model.safetensors: %v", ErrInvalidModel, err)
		}
		return "", err
	}
	if err := wc.finish(); err != nil {
		return "", fmt.Errorf("%w: model.safetensors: %v", ErrInvalidModel, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// weightsBound is the most bytes a model.safetensors of cfg may hold:
// twice its parameters (every tensor the encoder reads, a pooler, and as
// much again for heads it does not read or F64 weights) at 4 bytes, the
// position ids at 8, and 1 MiB for the header. It saturates instead of
// overflowing on absurd configs.
func weightsBound(cfg bert.Config) int64 {
	h, i, l := float64(cfg.HiddenSize), float64(cfg.IntermediateSize), float64(cfg.NumHiddenLayers)
	p := float64(cfg.MaxPositionEmbeddings)
	params := (float64(cfg.VocabSize)+p+float64(cfg.TypeVocabSize)+2)*h + // embeddings and their LayerNorm
		l*(4*(h*h+h)+2*(h*i)+i+h+4*h) + // attention, feed-forward, two LayerNorms
		h*h + h // pooler
	b := 2*4*params + 8*p + 1<<20
	if b >= math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return int64(b)
}

// errWeights marks what weightsCheck refuses.
var errWeights = errors.New("not a usable safetensors file")

// weightsCheck checks a safetensors file as its bytes arrive, so that an
// import refuses a bad one at the first byte that shows it, before the
// rest reaches the disk:
//
//   - the first 8 bytes give the header's length: at most
//     maxSafetensorsHeader, and within the file;
//   - the header is a JSON object of tensors with a known dtype, a shape
//     and data offsets whose span is the shape's size; sorted by offset
//     they cover the data exactly, without holes or overlaps (the
//     safetensors rule), and at least one tensor is there;
//   - the size the header declares is at most max, and equals the file's
//     size when that is known (expect >= 0);
//   - no byte past the declared size; every value of a floating-point
//     tensor is finite (a model whose weights hold NaN answers NaN).
//
// Errors wrap errWeights. Write fails with the first error and keeps
// failing; finish says whether the stream ended complete.
type weightsCheck struct {
	expect, max int64 // the file's size (-1: unknown); the bound on the size declared

	seen    int64 // bytes received
	lenBuf  [8]byte
	hdrLen  int64
	hdr     []byte
	total   int64 // the file's size the header declares; 0 until parsed
	tensors []tensorSpan
	cur     int     // tensors[cur] holds the next data byte
	carry   [8]byte // a value split between two writes
	nc      int
	err     error
}

// tensorSpan is one tensor's bytes in the data section.
type tensorSpan struct {
	name       string
	dtype      string
	begin, end int64
}

// dtypeBytes are the safetensors dtypes and their sizes.
var dtypeBytes = map[string]int64{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
}

func newWeightsCheck(expect, max int64) *weightsCheck {
	return &weightsCheck{expect: expect, max: max}
}

func (w *weightsCheck) fail(format string, args ...any) error {
	w.err = fmt.Errorf("%w: %s", errWeights, fmt.Sprintf(format, args...))
	return w.err
}

func (w *weightsCheck) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n := len(p)
	for len(p) > 0 && w.err == nil {
		switch {
		case w.seen < 8:
			k := copy(w.lenBuf[w.seen:], p)
			w.seen, p = w.seen+int64(k), p[k:]
			if w.seen == 8 {
				w.headerLength()
			}
		case w.seen < 8+w.hdrLen:
			k := int(min(int64(len(p)), 8+w.hdrLen-w.seen))
			w.hdr = append(w.hdr, p[:k]...)
			w.seen, p = w.seen+int64(k), p[k:]
			if w.seen == 8+w.hdrLen {
				w.header()
			}
		default:
			if w.seen+int64(len(p)) > w.total {
				return 0, w.fail("more bytes than the %d its header declares", w.total)
			}
			w.data(p)
			w.seen += int64(len(p))
			p = nil
		}
	}
	if w.err != nil {
		return 0, w.err
	}
	return n, nil
}

// headerLength checks the header's length, from the first 8 bytes.
func (w *weightsCheck) headerLength() {
	n := binary.LittleEndian.Uint64(w.lenBuf[:])
	switch {
	case n < 2 || n > maxSafetensorsHeader:
		w.fail("header length %d: want 2 to %d bytes (is this a safetensors file?)", n, maxSafetensorsHeader)
	case w.expect >= 0 && int64(n) > w.expect-8:
		w.fail("header length %d does not fit a %d-byte file", n, w.expect)
	case int64(n) > w.max-8:
		w.fail("header length %d: more than the %d bytes a model of this config.json may hold", n, w.max)
	default:
		w.hdrLen = int64(n)
	}
}

// header parses and checks the header, once all of it arrived.
func (w *weightsCheck) header() {
	if w.hdr[0] != '{' {
		w.fail("the header is not a JSON object")
		return
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(w.hdr, &raw); err != nil {
		w.fail("the header is not a JSON object: %v", err)
		return
	}
	w.hdr = nil
	for name, msg := range raw {
		if name == "__metadata__" {
			continue
		}
		var t struct {
			DType   string  `json:"dtype"`
			Shape   []int64 `json:"shape"`
			Offsets []int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(msg, &t); err != nil || len(t.Offsets) != 2 {
			w.fail("tensor %q has no dtype, shape and data_offsets", name)
			return
		}
		size, ok := dtypeBytes[t.DType]
		if !ok {
			w.fail("tensor %q has dtype %q, not a safetensors dtype", name, t.DType)
			return
		}
		count := int64(1)
		for _, d := range t.Shape {
			if d < 0 || d > 0 && count > math.MaxInt64/8/d {
				w.fail("tensor %q has shape %v", name, t.Shape)
				return
			}
			count *= d
		}
		b, e := t.Offsets[0], t.Offsets[1]
		if b < 0 || e < b || e-b != count*size {
			w.fail("tensor %q: offsets %v do not hold %s%v", name, t.Offsets, t.DType, t.Shape)
			return
		}
		w.tensors = append(w.tensors, tensorSpan{name: name, dtype: t.DType, begin: b, end: e})
	}
	if len(w.tensors) == 0 {
		w.fail("no tensors")
		return
	}
	slices.SortFunc(w.tensors, func(a, b tensorSpan) int {
		return cmp.Or(cmp.Compare(a.begin, b.begin), cmp.Compare(a.end, b.end))
	})
	at := int64(0)
	for _, t := range w.tensors {
		if t.begin != at {
			w.fail("tensor %q starts at %d, want %d: the tensors must cover the data without holes or overlaps", t.name, t.begin, at)
			return
		}
		at = t.end
	}
	w.total = 8 + w.hdrLen + at
	switch {
	case w.total > w.max:
		w.fail("the header declares %d bytes, more than the %d a model of this config.json may hold", w.total, w.max)
	case w.expect >= 0 && w.total < w.expect:
		w.fail("the file has %d bytes, more bytes than the %d its header declares", w.expect, w.total)
	case w.expect >= 0 && w.total > w.expect:
		w.fail("the header declares %d bytes but the file has %d: truncated?", w.total, w.expect)
	}
}

// data checks data bytes p, which come after the w.seen-8-w.hdrLen
// received before.
func (w *weightsCheck) data(p []byte) {
	pos := w.seen - 8 - w.hdrLen
	for len(p) > 0 {
		for w.tensors[w.cur].end <= pos { // skip empty tensors; pos < w.total keeps cur in range
			w.cur++
		}
		t := w.tensors[w.cur]
		k := min(int64(len(p)), t.end-pos)
		chunk := p[:k]
		if check := finiteCheck[t.dtype]; check != nil {
			size := int(dtypeBytes[t.dtype])
			if w.nc > 0 { // complete the value split by the previous write
				m := min(size-w.nc, len(chunk))
				copy(w.carry[w.nc:], chunk[:m])
				w.nc += m
				chunk = chunk[m:]
				if w.nc == size {
					w.nc = 0
					if !check(w.carry[:size]) {
						w.fail("tensor %q holds NaN or Inf (value %d)", t.name, (pos-t.begin)/int64(size))
						return
					}
				}
			}
			if w.nc == 0 { // else chunk was all part of that value
				whole := len(chunk) / size * size
				if i := firstNonFinite(t.dtype, chunk[:whole], check); i >= 0 {
					at := pos + k - int64(len(chunk)) + int64(i)
					w.fail("tensor %q holds NaN or Inf (value %d)", t.name, (at-t.begin)/int64(size))
					return
				}
				w.nc = copy(w.carry[:], chunk[whole:])
			}
		}
		pos += k
		p = p[k:]
	}
}

// finiteCheck says, per floating-point dtype, whether one little-endian
// value is finite (its exponent bits not all ones; F8_E4M3 has no
// infinities, and NaN only as S.1111.111).
var finiteCheck = map[string]func([]byte) bool{
	"F64":     func(b []byte) bool { return binary.LittleEndian.Uint64(b)&0x7ff0000000000000 != 0x7ff0000000000000 },
	"F32":     func(b []byte) bool { return binary.LittleEndian.Uint32(b)&0x7f800000 != 0x7f800000 },
	"F16":     func(b []byte) bool { return binary.LittleEndian.Uint16(b)&0x7c00 != 0x7c00 },
	"BF16":    func(b []byte) bool { return binary.LittleEndian.Uint16(b)&0x7f80 != 0x7f80 },
	"F8_E5M2": func(b []byte) bool { return b[0]&0x7c != 0x7c },
	"F8_E4M3": func(b []byte) bool { return b[0]&0x7f != 0x7f },
}

// firstNonFinite returns the offset in b (whole values of dtype) of the
// first value that is not finite, or -1. F32, the weights' usual dtype,
// has a loop of its own: this runs over every byte of the model at each
// start.
func firstNonFinite(dtype string, b []byte, check func([]byte) bool) int {
	if dtype == "F32" {
		for i := 0; i+4 <= len(b); i += 4 {
			if binary.LittleEndian.Uint32(b[i:])&0x7f800000 == 0x7f800000 {
				return i
			}
		}
		return -1
	}
	size := int(dtypeBytes[dtype])
	for i := 0; i+size <= len(b); i += size {
		if !check(b[i : i+size]) {
			return i
		}
	}
	return -1
}

// finish says whether the stream ended with every byte the header
// declares.
func (w *weightsCheck) finish() error {
	switch {
	case w.err != nil:
		return w.err
	case w.seen < 8:
		return w.fail("too short for a header (%d bytes)", w.seen)
	case w.seen < 8+w.hdrLen:
		return w.fail("truncated in its header (%d of %d bytes)", w.seen-8, w.hdrLen)
	case w.seen < w.total:
		return w.fail("truncated: %d of the %d bytes its header declares", w.seen, w.total)
	}
	return nil
}
