package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

// envMainArgs, set to a JSON list of arguments, makes the test binary run
// ragd with them instead of the tests: a test starts it as a child process
// to kill it.
const envMainArgs = "RAGD_TEST_MAIN_ARGS"

// Parallel tests. A test of this package calls t.Parallel when it shares
// nothing with the others: its own temporary directories, its own
// in-process ragd (startTestRagd, on a loopback port the kernel picks) or
// fake server, and its own buffers for stdin, stdout and stderr (runRagd,
// runEmbed; nothing redirects os.Stdout). These stay sequential, and so
// run first, before the parallel ones start:
//
//   - the tests that set the environment or the working directory
//     (t.Setenv, t.Chdir: they panic in a parallel test);
//   - TestQuickstart, which hands a port it found free to a child process
//     (a parallel test could take it meanwhile);
//   - TestIngestDirRepositoryDocsWithTheModel, which sends the model's
//     embedding through HTTP under the server's 30 s request deadline:
//     run in parallel beside the other model-bound tests, it got a 504.
//
// The model-bound tests without a deadline (TestEmbedBuiltin,
// TestEvalCranfieldBuiltin) are parallel.
func TestMain(m *testing.M) {
	if raw := os.Getenv(envMainArgs); raw != "" {
		var args []string
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", envMainArgs, err)
			os.Exit(2)
		}
		os.Exit(run(context.Background(), args, os.Stdout, os.Stderr))
	}
	code := m.Run()
	plain.Remove()
	os.Exit(code)
}
