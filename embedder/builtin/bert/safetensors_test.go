package bert

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeSafetensors(t *testing.T, hdr map[string]any, data []byte) string {
	t.Helper()
	h, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	buf := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	buf = append(append(buf, h...), data...)
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := os.WriteFile(path, buf, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSafetensorsDTypes(t *testing.T) {
	var data []byte
	for _, v := range []float32{1.5, -2, 0.1} {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
	}
	// BF16: the top halves of 1.5, -2.
	data = binary.LittleEndian.AppendUint16(data, uint16(math.Float32bits(1.5)>>16))
	data = binary.LittleEndian.AppendUint16(data, uint16(math.Float32bits(-2)>>16))
	// F16: 1.0 (0x3c00), -0.5 (0xb800), 65504 (0x7bff), smallest subnormal (0x0001).
	for _, h := range []uint16{0x3c00, 0xb800, 0x7bff, 0x0001} {
		data = binary.LittleEndian.AppendUint16(data, h)
	}
	path := writeSafetensors(t, map[string]any{
		"__metadata__": map[string]string{"format": "pt"},
		"f":            map[string]any{"dtype": "F32", "shape": []int{3}, "data_offsets": []int{0, 12}},
		"b":            map[string]any{"dtype": "BF16", "shape": []int{2}, "data_offsets": []int{12, 16}},
		"h":            map[string]any{"dtype": "F16", "shape": []int{2, 2}, "data_offsets": []int{16, 24}},
	}, data)
	ts, err := readSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		shape []int
		want  []float32
	}{
		{"f", []int{3}, []float32{1.5, -2, 0.1}},
		{"b", []int{2}, []float32{1.5, -2}},
		{"h", []int{2, 2}, []float32{1, -0.5, 65504, float32(math.Ldexp(1, -24))}},
	} {
		got, err := ts.float32s(tc.name, tc.shape...)
		if err != nil {
			t.Fatal(err)
		}
		for i := range tc.want {
			if got[i] != tc.want[i] {
				t.Errorf("%s[%d] = %v, want %v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
	if _, err := ts.float32s("f", 2); err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("wrong shape: err = %v", err)
	}
	if _, err := ts.float32s("missing", 1); err == nil {
		t.Error("missing tensor: no error")
	}
}

func TestSafetensorsCorrupt(t *testing.T) {
	short := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(short, []byte{1, 2}, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readSafetensors(short); err == nil {
		t.Error("2-byte file: no error")
	}
	path := writeSafetensors(t, map[string]any{
		"f": map[string]any{"dtype": "F32", "shape": []int{4}, "data_offsets": []int{0, 12}},
	}, make([]byte, 12))
	if _, err := readSafetensors(path); err == nil || !strings.Contains(err.Error(), "offsets") {
		t.Errorf("offsets not matching the shape: err = %v", err)
	}
	path = writeSafetensors(t, map[string]any{
		"f": map[string]any{"dtype": "F32", "shape": []int{4}, "data_offsets": []int{0, 16}},
	}, make([]byte, 12))
	if _, err := readSafetensors(path); err == nil {
		t.Error("offsets past the data: no error")
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{ModelType: "bert", VocabSize: 10, HiddenSize: 8, NumHiddenLayers: 1, NumAttentionHeads: 2,
		IntermediateSize: 16, MaxPositionEmbeddings: 8, TypeVocabSize: 2, LayerNormEps: 1e-12, HiddenAct: "gelu"}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.ModelType = "roberta" }, "model_type"},
		{func(c *Config) { c.HiddenAct = "gelu_new" }, "hidden_act"},
		{func(c *Config) { c.PositionEmbeddingType = "relative_key" }, "position_embedding_type"},
		{func(c *Config) { c.NumAttentionHeads = 3 }, "multiple"},
		{func(c *Config) { c.HiddenSize = 0 }, "hidden_size"},
		{func(c *Config) { c.LayerNormEps = 0 }, "layer_norm_eps"},
	} {
		c := good
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error naming %s", err, tc.want)
		}
	}
}
