package main

import (
	"bytes"
	"errors"
	"os/exec"
	"testing"

	"github.com/ragd/ragd/internal/testenv"
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
var plain = testenv.NewBinary("./cmd/ragd")

// runPlainRagd runs the binary plain builds with args and returns its
// exit code and outputs, as runRagd does in-process.
func runPlainRagd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(plain.Path(t), args...)
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
