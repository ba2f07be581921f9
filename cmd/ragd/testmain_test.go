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

func TestMain(m *testing.M) {
	if raw := os.Getenv(envMainArgs); raw != "" {
		var args []string
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", envMainArgs, err)
			os.Exit(2)
		}
		os.Exit(run(context.Background(), args, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
