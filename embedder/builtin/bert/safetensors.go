package bert

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
)

// The safetensors format is an 8-byte little-endian header length, a JSON
// header mapping tensor names to {dtype, shape, data_offsets} (offsets into
// the data that follows the header) plus an optional "__metadata__" entry,
// then the raw little-endian data. It is small enough to read here; a
// library would add a dependency for these few lines and its own tensor
// types.

type tensorInfo struct {
	DType   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// tensors holds the raw data of a safetensors file and its header.
type tensors struct {
	path   string
	header map[string]tensorInfo
	data   []byte
}

func readSafetensors(path string) (*tensors, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	if len(raw) < 8 {
		return nil, fmt.Errorf("bert: %s: not a safetensors file (%d bytes)", path, len(raw))
	}
	n := binary.LittleEndian.Uint64(raw[:8])
	if n > uint64(len(raw)-8) {
		return nil, fmt.Errorf("bert: %s: header length %d past the end of the file", path, n)
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(raw[8:8+n], &hdr); err != nil {
		return nil, fmt.Errorf("bert: %s: header: %w", path, err)
	}
	t := &tensors{path: path, header: make(map[string]tensorInfo, len(hdr)), data: raw[8+n:]}
	for name, msg := range hdr {
		if name == "__metadata__" {
			continue
		}
		var ti tensorInfo
		if err := json.Unmarshal(msg, &ti); err != nil {
			return nil, fmt.Errorf("bert: %s: tensor %q: %w", path, name, err)
		}
		size, ok := dtypeSize[ti.DType]
		if !ok {
			// Only tensors we read need a known type (position_ids is I64).
			size = 0
		}
		count := int64(1)
		for _, d := range ti.Shape {
			if d < 0 {
				return nil, fmt.Errorf("bert: %s: tensor %q: negative dimension", path, name)
			}
			count *= int64(d)
		}
		b, e := ti.Offsets[0], ti.Offsets[1]
		if b < 0 || e < b || e > int64(len(t.data)) || (size > 0 && e-b != count*size) {
			return nil, fmt.Errorf("bert: %s: tensor %q: offsets %v do not fit %s%v in %d data bytes",
				path, name, ti.Offsets, ti.DType, ti.Shape, len(t.data))
		}
		t.header[name] = ti
	}
	return t, nil
}

var dtypeSize = map[string]int64{"F32": 4, "F16": 2, "BF16": 2}

// float32s returns the named tensor converted to float32 after checking its
// shape.
func (t *tensors) float32s(name string, shape ...int) ([]float32, error) {
	ti, ok := t.header[name]
	if !ok {
		return nil, fmt.Errorf("bert: %s: no tensor %q", t.path, name)
	}
	if !slices.Equal(ti.Shape, shape) {
		return nil, fmt.Errorf("bert: %s: tensor %q has shape %v, want %v", t.path, name, ti.Shape, shape)
	}
	b := t.data[ti.Offsets[0]:ti.Offsets[1]]
	switch ti.DType {
	case "F32":
		out := make([]float32, len(b)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return out, nil
	case "BF16":
		out := make([]float32, len(b)/2)
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
		}
		return out, nil
	case "F16":
		out := make([]float32, len(b)/2)
		for i := range out {
			out[i] = halfToFloat(binary.LittleEndian.Uint16(b[2*i:]))
		}
		return out, nil
	}
	return nil, fmt.Errorf("bert: %s: tensor %q has dtype %s; supported: F32, F16, BF16", t.path, name, ti.DType)
}

func (t *tensors) has(name string) bool {
	_, ok := t.header[name]
	return ok
}

// halfToFloat converts an IEEE 754 binary16 to float32 exactly.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf, NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise
		e := uint32(127 - 15 + 1)
		for frac&0x400 == 0 {
			frac <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (frac&0x3ff)<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}
