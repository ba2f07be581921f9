package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The model-bound quality floor (TestEvalCranfieldBuiltin) runs ragd as a
// binary built without -race. Under the race detector every element the
// model's Go loops read and write goes through the detector, and the test
// took several times as long (the commit that added this file has the
// figures); a quality floor measures figures, not interleavings. The same
// code runs in-process under -race in the other tests of this package
// (TestEmbedBuiltin, TestIngestDirRepositoryDocsWithTheModel) and in
// embedder/builtin's. The build shares the compile cache with
// TestQuickstart's `go run` and e2e's binary (the same packages, built
// plainly): after either, it costs a link.
var plain struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// plainRagd returns the path of this package built without -race, building
// it on first use into a directory removed when the test binary exits
// (TestMain).
func plainRagd(t *testing.T) string {
	t.Helper()
	plain.once.Do(func() {
		goBin, err := exec.LookPath("go") // go test puts its own GOROOT/bin first
		if err != nil {
			plain.err = fmt.Errorf("the go command is not on PATH: %w", err)
			return
		}
		if plain.dir, err = os.MkdirTemp("", "ragd-plain-"); err != nil {
			plain.err = err
			return
		}
		out := filepath.Join(plain.dir, "ragd")
		cmd := exec.Command(goBin, "build", "-o", out, ".")
		if b, err := cmd.CombinedOutput(); err != nil {
			plain.err = fmt.Errorf("go build -o %s .: %w\n%s", out, err, b)
			return
		}
		plain.path = out
	})
	if plain.err != nil {
		t.Fatalf("build ragd without -race: %v", plain.err)
	}
	return plain.path
}

// removePlainRagd removes the binary plainRagd built, if any.
func removePlainRagd() {
	if plain.dir != "" {
		os.RemoveAll(plain.dir)
	}
}

// runPlainRagd runs the binary plainRagd built with args and returns its
// exit code and outputs, as runRagd does in-process.
func runPlainRagd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(plainRagd(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("run ragd %v: %v", args, err)
		}
		code = exit.ExitCode()
	}
	return code, out.String(), errOut.String()
}
