package bert

import (
	"encoding/json"
	"fmt"
	"os"
)

// Config is the part of a Hugging Face config.json the encoder reads.
type Config struct {
	ModelType             string   `json:"model_type"`
	Architectures         []string `json:"architectures"`
	VocabSize             int      `json:"vocab_size"`
	HiddenSize            int      `json:"hidden_size"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	IntermediateSize      int      `json:"intermediate_size"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	TypeVocabSize         int      `json:"type_vocab_size"`
	LayerNormEps          float64  `json:"layer_norm_eps"`
	HiddenAct             string   `json:"hidden_act"`
	PositionEmbeddingType string   `json:"position_embedding_type"`
}

// ReadConfig reads and validates a config.json.
func ReadConfig(path string) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("bert: %w", err)
	}
	var c Config
	if err := json.Unmarshal(raw, &c); err != nil {
		return Config{}, fmt.Errorf("bert: %s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("bert: %s: %w", path, err)
	}
	return c, nil
}

// Validate rejects configurations the encoder does not implement.
func (c Config) Validate() error {
	if c.ModelType != "bert" {
		return fmt.Errorf("model_type %q is not supported (the built-in encoder runs BERT-family models: model_type \"bert\")", c.ModelType)
	}
	if c.HiddenAct != "gelu" {
		return fmt.Errorf("hidden_act %q is not supported (only \"gelu\", the exact erf form)", c.HiddenAct)
	}
	if c.PositionEmbeddingType != "" && c.PositionEmbeddingType != "absolute" {
		return fmt.Errorf("position_embedding_type %q is not supported (only \"absolute\")", c.PositionEmbeddingType)
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"vocab_size", c.VocabSize}, {"hidden_size", c.HiddenSize}, {"num_hidden_layers", c.NumHiddenLayers},
		{"num_attention_heads", c.NumAttentionHeads}, {"intermediate_size", c.IntermediateSize},
		{"max_position_embeddings", c.MaxPositionEmbeddings}, {"type_vocab_size", c.TypeVocabSize},
	} {
		if f.v <= 0 {
			return fmt.Errorf("%s must be positive, got %d", f.name, f.v)
		}
	}
	if c.HiddenSize%c.NumAttentionHeads != 0 {
		return fmt.Errorf("hidden_size %d is not a multiple of num_attention_heads %d", c.HiddenSize, c.NumAttentionHeads)
	}
	if c.LayerNormEps <= 0 {
		return fmt.Errorf("layer_norm_eps must be positive, got %g", c.LayerNormEps)
	}
	return nil
}
